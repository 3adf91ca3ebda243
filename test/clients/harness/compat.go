package main

import (
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// compatOverview is the hand-written part of "Known differences": the broad
// differences no single handler comment states. Everything else in that
// section is collected from the sources at generation time.
//
//go:embed compat_overview.md
var compatOverview string

// clientSources says where each client comes from, for the tested-clients table.
var clientSources = map[string]string{
	"kcat":          "Debian package `kcat`",
	"python":        "PyPI `confluent-kafka` (in a cached venv)",
	"kafka-python":  "PyPI `kafka-python` (pure Python, same venv and runner as confluent-kafka)",
	"aiokafka":      "PyPI `aiokafka` (pure Python asyncio, same venv and runner as confluent-kafka)",
	"java":          "Maven Central `org.apache.kafka:kafka-clients`",
	"java39":        "Maven Central `org.apache.kafka:kafka-clients` 3.9 (older request versions), own Maven profile",
	"kafkajs":       "npm `kafkajs` (committed lock file)",
	"go":            "Go module `github.com/twmb/franz-go` (the examples; the broker's own integration tests use it too)",
	"kafka-tools":   "Maven Central `org.apache.kafka:kafka-tools`: each tool's main class with its script's arguments, in one JVM",
	"kafka-streams": "Maven Central `org.apache.kafka:kafka-streams`",
	"kafka-connect": "Maven Central `org.apache.kafka:connect-runtime` and `connect-file`, started as `ConnectDistributed` does",
}

// internalAPIs are Kafka keys spoken only between brokers and controllers;
// a single Sluice node has no use for them, so they are listed apart from
// the client-facing keys it does not serve. UnregisterController (94) is not
// one of them: Kafka 4.4 serves it on brokers too, for Admin.unregisterController
// (Sluice serves it: internal/broker/unregister_controller.go).
var internalAPIs = map[int16]bool{
	4: true, 5: true, 6: true, 7: true, 27: true, 52: true, 53: true, 54: true, 56: true, 58: true, 59: true,
	62: true, 63: true, 67: true, 70: true, 73: true, 83: true, 84: true, 85: true, 86: true, 87: true,
}

// cmdCompat writes docs/compatibility.md.
func cmdCompat(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "test/clients/results.json", "the suite's JSON report")
	out := fs.String("out", "", "write the page here (default: stdout)")
	root := fs.String("root", ".", "the repository root, whose internal/broker/*.go and docs/*.md are read")
	if err := fs.Parse(args); err != nil {
		return err
	}
	data, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	apiNotes, err := handlerDifferences(filepath.Join(*root, "internal", "broker"))
	if err != nil {
		return err
	}
	docNotes, err := docDifferences(filepath.Join(*root, "docs"))
	if err != nil {
		return err
	}
	page := renderCompat(rep, apiNotes, docNotes)
	if *out == "" {
		_, err = io.WriteString(stdout, page)
		return err
	}
	return os.WriteFile(*out, []byte(page), 0o644)
}

// note is one documented difference and where it is documented.
type note struct {
	Title, Source, Text string
}

// handlerDifferences collects, from each handler file's opening comment (the
// part before "package"), the text that follows "Differences from Kafka:" or
// "Differs from Kafka:" up to the end of its paragraph. The title is the API
// name the comment opens with ("Produce (key 0) ..." gives "Produce").
func handlerDifferences(dir string) ([]note, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var notes []note
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		paras := headerParagraphs(string(data))
		if len(paras) == 0 {
			continue
		}
		title, _, _ := strings.Cut(paras[0], " (key ")
		if title == paras[0] { // not a handler file (doc.go, registry.go, ...)
			continue
		}
		for _, p := range paras {
			for _, marker := range []string{"Differences from Kafka:", "Differs from Kafka:"} {
				if _, after, ok := strings.Cut(p, marker); ok {
					notes = append(notes, note{Title: title, Source: "internal/broker/" + filepath.Base(f),
						Text: strings.TrimSpace(after)})
				}
			}
		}
	}
	return notes, nil
}

// headerParagraphs returns the paragraphs of a Go file's leading // comment,
// each joined into one line.
func headerParagraphs(src string) []string {
	var paras []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			var p strings.Builder
			for i, l := range cur {
				// A word hyphenated across lines ("broker-" / "side") is joined back.
				if i > 0 && !(strings.HasSuffix(cur[i-1], "-") && !strings.HasSuffix(cur[i-1], " -")) {
					p.WriteByte(' ')
				}
				p.WriteString(l)
			}
			paras = append(paras, p.String())
			cur = nil
		}
	}
	for _, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "//") {
			break
		}
		t = strings.TrimSpace(strings.TrimPrefix(t, "//"))
		if t == "" {
			flush()
			continue
		}
		cur = append(cur, t)
	}
	flush()
	return paras
}

// docDifferences returns the body of every "Differences from Kafka" section
// of docs/*.md (compatibility.md itself excepted), one note per file.
func docDifferences(dir string) ([]note, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var notes []note
	for _, f := range files {
		if filepath.Base(f) == "compatibility.md" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var body []string
		in := false
		level := 0
		for _, line := range strings.Split(string(data), "\n") {
			if h := headingLevel(line); h > 0 {
				if in && h <= level {
					in = false
				}
				if strings.Contains(strings.ToLower(line), "differences from kafka") {
					in, level = true, h
					continue
				}
			}
			if in {
				body = append(body, line)
			}
		}
		if text := strings.TrimSpace(strings.Join(body, "\n")); text != "" {
			notes = append(notes, note{Title: filepath.Base(f), Source: "docs/" + filepath.Base(f), Text: text})
		}
	}
	return notes, nil
}

// headingLevel is the number of leading '#' of a Markdown heading, else 0.
func headingLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n >= len(line) || line[n] != ' ' {
		return 0
	}
	return n
}

func isApp(client string) bool { return slices.Contains(appClients, client) }

func clientName(id string) string {
	for _, c := range clientNames {
		if c.id == id {
			return c.name
		}
	}
	return id
}

func renderCompat(rep Report, apiNotes, docNotes []note) string {
	var b strings.Builder
	b.WriteString("# Compatibility\n\n")
	b.WriteString("<!-- Generated by `go run ./test/clients/harness compat -out docs/compatibility.md` from " +
		"test/clients/results.json (written by scripts/test-clients.sh; `scripts/test-clients.sh --write-docs` regenerates this page after a full " +
		"run) and the \"Differences from Kafka\" notes in internal/broker/*.go and docs/*.md. Do not edit by hand. -->\n\n")
	b.WriteString("Sluice is tested from the outside with unmodified Kafka clients, tools and frameworks, installed " +
		"from their registries by `scripts/test-clients.sh` (see `test/clients/README.md`).")
	fmt.Fprintf(&b, " Last run: %s", rep.GeneratedAt)
	if rep.BrokerVersion != "" {
		fmt.Fprintf(&b, ", broker `%s`", rep.BrokerVersion)
	}
	fmt.Fprintf(&b, " — **%s**.\n\n", rep.Summary.Line())

	b.WriteString("## Tested clients\n\n| Client | Version | From | Scenarios passed |\n| --- | --- | --- | --- |\n")
	counts := map[string][2]int{}
	for _, r := range rep.Results {
		c := counts[r.Client]
		c[1]++
		if r.Status == statusPass {
			c[0]++
		}
		counts[r.Client] = c
	}
	var ids []string
	for _, c := range clientNames {
		if _, ok := counts[c.id]; ok {
			ids = append(ids, c.id)
		}
	}
	for id := range counts {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	versions := map[string]string{}
	for _, c := range rep.Clients {
		versions[c.ID] = c.Version
	}
	for _, id := range ids {
		v := versions[id]
		if v == "" {
			v = "—"
		}
		src := clientSources[id]
		if src == "" {
			src = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d of %d |\n", escapeCell(clientName(id)), escapeCell(v), escapeCell(src),
			counts[id][0], counts[id][1])
	}
	b.WriteString("\n" + rubyCSharpNote + "\n\n")

	b.WriteString("## Client libraries × features\n\n")
	b.WriteString("pass: every scenario of that feature passed; **fail**: at least one failed; skip: the broker does " +
		"not advertise an API the scenario needs; —: not tested with that client.\n\n")
	b.WriteString(renderTable(rep, func(c string) bool { return !isApp(c) }))
	b.WriteString("\n## Kafka's command-line tools, Kafka Streams and Kafka Connect\n\n")
	b.WriteString(renderAppTable(rep))
	b.WriteString(renderNotes(rep))

	b.WriteString("\n## API keys and versions served\n\n")
	if len(rep.BrokerAPIVersions) == 0 {
		b.WriteString("(not recorded in this results.json: run the suite to record them)\n")
	} else {
		b.WriteString("What the broker answered to ApiVersions in the run above.\n\n| Key | API | Versions |\n| --- | --- | --- |\n")
		served := map[int16]bool{}
		vs := slices.Clone(rep.BrokerAPIVersions)
		sort.Slice(vs, func(i, j int) bool { return vs[i].Key < vs[j].Key })
		for _, v := range vs {
			served[v.Key] = true
			fmt.Fprintf(&b, "| %d | %s | %d–%d |\n", v.Key, v.Name, v.Min, v.Max)
		}
		var clientFacing, internal []string
		for k := int16(0); k <= kmsg.MaxKey; k++ {
			if served[k] {
				continue
			}
			name := fmt.Sprintf("%s (%d)", kmsg.NameForKey(k), k)
			if internalAPIs[k] {
				internal = append(internal, name)
			} else {
				clientFacing = append(clientFacing, name)
			}
		}
		if len(clientFacing) > 0 {
			b.WriteString("\nNot served (a client that needs one gets UNSUPPORTED_VERSION or falls back): " +
				strings.Join(clientFacing, ", ") + ".\n")
		}
		if len(internal) > 0 {
			b.WriteString("\nInter-broker and controller APIs, which a single node does not use: " +
				strings.Join(internal, ", ") + ".\n")
		}
	}

	b.WriteString("\n## Known differences from Kafka\n\n")
	b.WriteString(strings.TrimSpace(compatOverview) + "\n")
	if len(apiNotes) > 0 {
		b.WriteString("\n### Per API\n\nFrom the opening comment of each handler in `internal/broker/`.\n\n")
		for _, n := range apiNotes {
			fmt.Fprintf(&b, "- **%s** (`%s`): %s\n", n.Title, n.Source, n.Text)
		}
	}
	for _, n := range docNotes {
		fmt.Fprintf(&b, "\n### From `%s`\n\n%s\n", n.Source, n.Text)
	}
	return b.String()
}

// renderAppTable lists the tools', Streams' and Connect's features, one row
// each: these clients share no features, so a matrix would be mostly empty.
func renderAppTable(rep Report) string {
	type key struct{ client, feature string }
	byCell := map[key][]Result{}
	var order []key
	for _, r := range rep.Results {
		if !isApp(r.Client) {
			continue
		}
		k := key{r.Client, r.Feature}
		if _, ok := byCell[k]; !ok {
			order = append(order, k)
		}
		byCell[k] = append(byCell[k], r)
	}
	if len(order) == 0 {
		return "(not run)\n"
	}
	rank := func(k key) (int, int) {
		f := slices.IndexFunc(featureNames, func(f struct{ id, name string }) bool { return f.id == k.feature })
		if f < 0 {
			f = len(featureNames)
		}
		return slices.Index(appClients, k.client), f
	}
	sort.SliceStable(order, func(i, j int) bool {
		ci, fi := rank(order[i])
		cj, fj := rank(order[j])
		return ci < cj || ci == cj && fi < fj
	})
	versions := map[string]string{}
	for _, c := range rep.Clients {
		versions[c.ID] = c.Version
	}
	var b strings.Builder
	b.WriteString("| Client | Feature | Result |\n| --- | --- | --- |\n")
	for _, k := range order {
		name := clientName(k.client)
		if v := versions[k.client]; v != "" {
			name += " " + v
		}
		feature := k.feature
		for _, f := range featureNames {
			if f.id == k.feature {
				feature = f.name
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", escapeCell(name), escapeCell(feature), cell(byCell[k]))
	}
	return b.String()
}
