package compact

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"
)

// Command runs `sluice compaction ...` (args are what follows
// "compaction") and returns the exit code. Today it has one subcommand:
//
//	sluice compaction status [topic] [--metrics-addr host:port] [--json]
//
// It asks the running broker: GET http://<metrics-addr>/compaction/status
// on the listener of --metrics-listen (default address: $SLUICE_METRICS_LISTEN,
// else DefaultStatusAddr, the broker command's default),
// and prints one line per partition of the compacted topics, or the raw
// JSON with --json.
// DefaultStatusAddr is where `sluice` serves /metrics and the compaction
// status when --metrics-listen is not given.
const DefaultStatusAddr = "127.0.0.1:9095"

func Command(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "status" {
		fmt.Fprintln(stderr, "usage: sluice compaction status [topic] [--metrics-addr host:port] [--json]")
		if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			return 0
		}
		return 2
	}
	fs := flag.NewFlagSet("sluice compaction status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defAddr := getenv("SLUICE_METRICS_LISTEN")
	if defAddr == "" {
		defAddr = DefaultStatusAddr
	}
	addr := fs.String("metrics-addr", defAddr, "`host:port` of the broker's --metrics-listen [$SLUICE_METRICS_LISTEN]")
	asJSON := fs.Bool("json", false, "print the JSON report")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for the broker")
	var topics []string
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			if err == flag.ErrHelp {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		topics = append(topics, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(topics) > 1 {
		fmt.Fprintln(stderr, "sluice compaction status: at most one topic")
		return 2
	}
	if *addr == "" {
		fmt.Fprintln(stderr, "sluice compaction status: the broker's metrics address is needed: --metrics-addr host:port (the broker's --metrics-listen) or $SLUICE_METRICS_LISTEN")
		return 2
	}
	topic := ""
	if len(topics) == 1 {
		topic = topics[0]
	}
	rep, raw, err := fetchStatus(*addr, topic, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "sluice compaction status: %v\n", err)
		return 1
	}
	if *asJSON {
		_, _ = stdout.Write(raw)
		return 0
	}
	hidden := 0
	if topic == "" {
		// Internal topics (50 __consumer_offsets partitions by default) would
		// drown the user's own; they are shown when named.
		kept := rep.Partitions[:0]
		for _, p := range rep.Partitions {
			if strings.HasPrefix(p.Topic, "__") {
				hidden++
				continue
			}
			kept = append(kept, p)
		}
		rep.Partitions = kept
	}
	WriteStatus(stdout, rep)
	if hidden > 0 {
		fmt.Fprintf(stdout, "(%d partitions of internal topics not shown; name one to see it, e.g. sluice compaction status __consumer_offsets)\n", hidden)
	}
	if topic != "" && len(rep.Partitions) == 0 {
		fmt.Fprintf(stderr, "sluice compaction status: the broker at %s has no compacted topic %q: it does not exist there, or its cleanup.policy does not include compact\n", *addr, topic)
		return 1
	}
	return 0
}

func fetchStatus(addr, topic string, timeout time.Duration) (StatusReport, []byte, error) {
	var rep StatusReport
	host := addr
	if h, p, err := net.SplitHostPort(addr); err == nil && h == "" {
		host = net.JoinHostPort("localhost", p)
	}
	u := url.URL{Scheme: "http", Host: host, Path: StatusPath}
	if topic != "" {
		u.RawQuery = url.Values{"topic": {topic}}.Encode()
	}
	cl := &http.Client{Timeout: timeout}
	resp, err := cl.Get(u.String())
	if err != nil {
		return rep, nil, fmt.Errorf("cannot reach the broker: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return rep, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return rep, nil, fmt.Errorf("%s: %s: %s", u.String(), resp.Status, strings.TrimSpace(string(raw)))
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return rep, nil, fmt.Errorf("bad status document: %w", err)
	}
	return rep, raw, nil
}

// WriteStatus prints a report as a table, one partition per line, then
// the reason details.
func WriteStatus(w io.Writer, rep StatusReport) {
	if !rep.Enabled {
		fmt.Fprintln(w, "log cleaner DISABLED (log.cleaner.enable=false): compacted topics are not compacted")
	}
	if len(rep.Partitions) == 0 {
		fmt.Fprintln(w, "no compacted topics")
		return
	}
	now := rep.NowMs
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPART\tDIRTY/MIN\tCLEANABLE\tACTIVE SEG\tCHECKPOINT\tLOG END\tLAST PASS\tTOMBSTONES\tSTATE")
	for _, p := range rep.Partitions {
		cp := "never"
		if p.Checkpoint >= 0 {
			cp = fmt.Sprint(p.Checkpoint)
		}
		last := "never"
		if p.LastPassMs > 0 {
			last = ago(now-p.LastPassMs) + " ago"
		}
		tomb := fmt.Sprint(p.TombstonesPending)
		if p.NextHorizonMs > 0 {
			tomb += " (next in " + ago(p.NextHorizonMs-now) + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f/%.2f\t%s\t%s, %s\t%s\t%d\t%s\t%s\t%s\n", p.Topic, p.Partition,
			p.DirtyRatio, p.MinCleanableDirtyRatio, bytesStr(p.CleanableBytes),
			bytesStr(p.ActiveSegmentBytes), ago(p.ActiveSegmentAgeMs), cp, p.LogEndOffset, last, tomb, p.Reason)
	}
	_ = tw.Flush()
	for _, p := range rep.Partitions {
		fmt.Fprintf(w, "%s-%d: %s", p.Topic, p.Partition, p.Detail)
		if p.Reason == ReasonError {
			fmt.Fprintf(w, " (%d consecutive failures, retry in %s)", p.ConsecutiveFailures, ago(p.RetryAtMs-now))
		}
		fmt.Fprintln(w)
	}
}

func ago(ms int64) string {
	if ms < 0 {
		ms = 0
	}
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Hour:
		return d.Truncate(time.Second).String()
	default:
		return d.Truncate(time.Minute).String()
	}
}

func bytesStr(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
