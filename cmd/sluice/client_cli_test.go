package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/security/sectest"
)

// runCLIInput is runCLI with standard input.
func runCLIInput(t *testing.T, bin string, env []string, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cmd.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return string(out), 0
}

// TestBinaryProduceConsume: records with keys, headers, null values and
// explicit partitions go in through "sluice produce" and come out of
// "sluice consume" as the formats, offsets and counts asked for.
func TestBinaryProduceConsume(t *testing.T) {
	bin, addr, _ := startBinary(t)
	env := []string{"SLUICE_BOOTSTRAP=" + addr}
	mustCLI(t, bin, env, []string{"topic", "create", "pc", "-p", "2"})

	out, code := runCLIInput(t, bin, env, "one\ntwo\n", "produce", "pc", "-p", "0", "-k", "K", "-H", "h1=a", "-H", "h2=b")
	if code != 0 || strings.Count(out, "Produced to partition 0 at offset ") != 2 || !strings.Contains(out, "at offset 1 ") {
		t.Fatalf("produce lines: %d %q", code, out)
	}
	// Confirmations come in input order, not grouped by partition.
	var in, wantParts strings.Builder
	for i := range 20 {
		fmt.Fprintf(&in, "%d|v%d\n", i%2, i)
		fmt.Fprintf(&wantParts, "%d,", i%2)
	}
	mustCLI(t, bin, env, []string{"topic", "create", "pc-order", "-p", "2"})
	ordOut, code := runCLIInput(t, bin, env, in.String(), "produce", "pc-order", "-f", `%p|%v\n`)
	var gotParts strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(ordOut), "\n") {
		var p, o, ts int
		if _, err := fmt.Sscanf(l, "Produced to partition %d at offset %d with timestamp %d.", &p, &o, &ts); err == nil {
			fmt.Fprintf(&gotParts, "%d,", p)
		}
	}
	if code != 0 || gotParts.String() != wantParts.String() {
		t.Fatalf("produce confirmations out of input order: %d %s\n%s", code, gotParts.String(), ordOut)
	}
	// A format with key, partition and value; -Z: an empty value is null.
	out, code = runCLIInput(t, bin, env, "a|1|x\nb|1|\n|0|keyless\n", "produce", "pc", "-f", `%k|%p|%v\n`, "-Z", "-q")
	if code != 0 || out != "" {
		t.Fatalf("produce with a format: %d %q", code, out)
	}
	if out, code := runCLIInput(t, bin, env, "no-separator\n", "produce", "pc", "-f", `%k|%v\n`); code != 1 || !strings.Contains(out, `record 1: expected "|"`) {
		t.Errorf("bad input: %d %q", code, out)
	}
	if out, code := runCLIInput(t, bin, env, "", "produce", "pc", "-f", `%k%v\n`); code != 2 || !strings.Contains(out, "put a literal between verbs") {
		t.Errorf("bad format: %d %q", code, out)
	}

	got := mustCLI(t, bin, env, []string{"consume", "pc", "-p", "0", "-f", `%t/%p@%o %k=%v [%h] %K %V\n`, "-Z"})
	want := "pc/0@0 K=one [h1=a,h2=b] 1 3\npc/0@1 K=two [h1=a,h2=b] 1 3\npc/0@2 NULL=keyless [] -1 7\n"
	if got != want {
		t.Errorf("consume -p 0:\n%s\nwant:\n%s", got, want)
	}
	got = mustCLI(t, bin, env, []string{"consume", "pc", "-p", "1", "-f", `%k=%v;`})
	if got != "a=x;b=;" {
		t.Errorf("consume -p 1 without -Z: %q", got)
	}
	// JSON: a null value is null, headers are a list.
	got = mustCLI(t, bin, env, []string{"consume", "pc", "-p", "1", "-f", "json", "-o", "1"})
	var rec jsonRecord
	if err := json.Unmarshal([]byte(got), &rec); err != nil || rec.Offset != 1 || rec.Key == nil || *rec.Key != "b" || rec.Value != nil || rec.Partition != 1 {
		t.Errorf("json from offset 1: %v %q", err, got)
	}
	// Offsets: -N before the end, +N after the start, end, a count.
	if got = mustCLI(t, bin, env, []string{"consume", "pc", "-p", "0", "-o", "-1", "-f", `%o\n`}); got != "2\n" {
		t.Errorf("-o -1: %q", got)
	}
	if got = mustCLI(t, bin, env, []string{"consume", "pc", "-p", "0", "-o", "+1", "-n", "1", "-f", `%o\n`}); got != "1\n" {
		t.Errorf("-o +1 -n 1: %q", got)
	}
	if got = mustCLI(t, bin, env, []string{"consume", "pc", "-o", "end"}); got != "" {
		t.Errorf("-o end: %q", got)
	}
	if got = mustCLI(t, bin, env, []string{"consume", "pc", "-n", "5", "-f", `%v\n`}); strings.Count(got, "\n") != 5 {
		t.Errorf("-n 5 over 5 records: %q", got)
	}
	// A timestamp: records at or after it. Every record so far is older than now.
	later := time.Now().Add(time.Hour).UnixMilli()
	if got = mustCLI(t, bin, env, []string{"consume", "pc", "-o", fmt.Sprintf("@%d", later)}); got != "" {
		t.Errorf("-o @future: %q", got)
	}
	if got = mustCLI(t, bin, env, []string{"consume", "pc", "-p", "0", "-o", "@0", "-f", `%o `}); got != "0 1 2 " {
		t.Errorf("-o @0: %q", got)
	}
	for _, c := range []struct{ args []string }{
		{[]string{"consume", "pc", "-o", "soon"}},
		{[]string{"consume", "pc", "-f", "%q"}},
		{[]string{"consume", "pc", "-g", "g", "-p", "0"}},
	} {
		if out, code := runCLI(t, bin, env, c.args...); code != 2 {
			t.Errorf("%v: exit %d, %q; want 2", c.args, code, out)
		}
	}
	if out, code := runCLI(t, bin, env, "consume", "nope"); code != 1 || !strings.Contains(out, "sluice consume: topic nope: UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("consume unknown topic: %d %q", code, out)
	}

	// --follow waits for records produced later; -n ends it.
	follow := exec.Command(bin, "consume", "pc", "-p", "1", "-o", "end", "--follow", "-n", "1", "-f", `%v\n`)
	follow.Env = append(follow.Environ(), env...)
	var fout syncBuf
	follow.Stdout, follow.Stderr = &fout, &fout
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = follow.Process.Kill(); _ = follow.Wait() })
	waited := make(chan error, 1)
	go func() { waited <- follow.Wait() }()
	// Produce until the follower has printed a record (it may start after a first one).
	deadline := time.Now().Add(30 * time.Second)
	for done := false; !done; {
		runCLIInput(t, bin, env, "late\n", "produce", "pc", "-p", "1", "-q")
		select {
		case err := <-waited:
			if err != nil || fout.String() != "late\n" {
				t.Fatalf("follow: %v %q", err, fout.String())
			}
			done = true
		case <-time.After(200 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatalf("follow printed nothing: %q", fout.String())
			}
		}
	}
}

// TestBinaryGroups: a group made by "sluice consume -g" is listed,
// described with its lag, reset with seek (a dry run first; refused while
// a member is active) and deleted.
func TestBinaryGroups(t *testing.T) {
	// No initial rebalance delay (3 s by default): each consume -g and the
	// member below would wait for it.
	cfg := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(cfg, []byte("group.initial.rebalance.delay.ms=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, addr, _ := startBinary(t, "--config", cfg)
	env := []string{"SLUICE_BOOTSTRAP=" + addr}
	mustCLI(t, bin, env, []string{"topic", "create", "gt", "-p", "2"})
	runCLIInput(t, bin, env, "a\nb\nc\n", "produce", "gt", "-p", "0", "-q")
	runCLIInput(t, bin, env, "d\n", "produce", "gt", "-p", "1", "-q")

	// A group consumes 2 records and commits them.
	if got := mustCLI(t, bin, env, []string{"consume", "gt", "-g", "g1", "-n", "2", "-f", `%v`}); len(got) != 2 {
		t.Fatalf("consume -g -n 2: %q", got)
	}
	mustCLI(t, bin, env, []string{"group", "list"}, "g1 ", "classic", "Empty")
	out := mustCLI(t, bin, env, []string{"group", "describe", "g1"}, "STATE Empty", "MEMBERS 0")
	// The rest of the group's records: consume -g resumes at the commit.
	if got := mustCLI(t, bin, env, []string{"consume", "gt", "-g", "g1", "-f", `%v`}); len(got) != 2 {
		t.Fatalf("consume -g resumes: %q after\n%s", got, out)
	}
	out = mustCLI(t, bin, env, []string{"group", "describe", "g1"}, "TOTAL LAG 0")
	if !regexp.MustCompile(`(?m)^gt +0 +3 +3 +0 +- `).MatchString(out) || !regexp.MustCompile(`(?m)^gt +1 +1 +1 +0 +- `).MatchString(out) {
		t.Errorf("partition row:\n%s", out)
	}

	// seek: a dry run changes nothing; --execute commits.
	out = mustCLI(t, bin, env, []string{"group", "seek", "g1", "--to", "start"}, "dry run")
	if !regexp.MustCompile(`(?m)^gt +0 +3 +0$`).MatchString(out) {
		t.Errorf("plan:\n%s", out)
	}
	mustCLI(t, bin, env, []string{"group", "describe", "g1"}, "TOTAL LAG 0")
	mustCLI(t, bin, env, []string{"group", "seek", "g1", "--to", "start", "--execute"}, "committed the new offsets of group g1")
	mustCLI(t, bin, env, []string{"group", "describe", "g1"}, "TOTAL LAG 4")
	file := filepath.Join(t.TempDir(), "offsets.csv")
	os.WriteFile(file, []byte("# topic,partition,offset\ngt,0,2\n"), 0o600)
	mustCLI(t, bin, env, []string{"group", "seek", "g1", "--to-file", file, "--execute"})
	out = mustCLI(t, bin, env, []string{"group", "describe", "g1"}, "TOTAL LAG 2")
	if !regexp.MustCompile(`(?m)^gt +0 +2 +3 +1 `).MatchString(out) {
		t.Errorf("after --to-file:\n%s", out)
	}
	mustCLI(t, bin, env, []string{"group", "seek", "g1", "--to", "end", "--topic", "gt", "--execute"})
	mustCLI(t, bin, env, []string{"group", "describe", "g1"}, "TOTAL LAG 0")
	mustCLI(t, bin, env, []string{"group", "seek", "g1", "--to", "0", "--execute"}) // timestamp 0: the first records
	mustCLI(t, bin, env, []string{"group", "describe", "g1"}, "TOTAL LAG 4")
	for _, args := range [][]string{
		{"group", "seek", "g1"},
		{"group", "seek", "g1", "--to", "start", "--to-offset", "1"},
		{"group", "seek", "g1", "--to", "yesterday"},
		{"group", "seek", "g1", "--to-file", filepath.Join(t.TempDir(), "missing")},
	} {
		if out, code := runCLI(t, bin, env, args...); code != 2 {
			t.Errorf("%v: exit %d %q, want 2", args, code, out)
		}
	}

	// An active member: describe shows it and its partitions; seek --execute refuses.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("gt"), kgo.ClientID("test-member"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		cl.PollRecords(ctx, 10)
		out, _ = runCLI(t, bin, env, "group", "describe", "g1")
		if strings.Contains(squeeze(out), "MEMBERS 1") && strings.Contains(out, "test-member") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("member never showed:\n%s", out)
		}
	}
	if out, code := runCLI(t, bin, env, "group", "seek", "g1", "--to", "start", "--execute"); code != 1 || !strings.Contains(out, "inactive") {
		t.Errorf("seek on an active group: %d %q", code, out)
	}
	if out, code := runCLI(t, bin, env, "group", "delete", "g1"); code != 1 || !strings.Contains(out, "NON_EMPTY_GROUP") {
		t.Errorf("delete an active group: %d %q", code, out)
	}
	cl.Close()
	// Once the member left the group can go.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, code := runCLI(t, bin, env, "group", "delete", "g1")
		if code == 0 && strings.Contains(out, "deleted group g1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delete: %d %q", code, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, code := runCLI(t, bin, env, "group", "describe", "g1"); code != 1 || !strings.Contains(out, "GROUP_ID_NOT_FOUND: Group g1 not found.") {
		t.Errorf("describe deleted group: %d %q", code, out)
	}
}

// TestBinaryClusterInfo: the cluster id and node id of the startup line.
func TestBinaryClusterInfo(t *testing.T) {
	bin, addr, start := startBinary(t)
	id := regexp.MustCompile(`cluster_id=(\S+)`).FindStringSubmatch(start)
	if id == nil {
		t.Fatalf("startup line: %s", start)
	}
	host, port, _ := strings.Cut(addr, ":")
	out := mustCLI(t, bin, nil, []string{"cluster", "info", "--bootstrap", addr}, "CLUSTER "+id[1], "CONTROLLER 1", "BROKERS 1")
	if !regexp.MustCompile(`(?m)^1 +` + regexp.QuoteMeta(host) + ` +` + port + ` +- +yes$`).MatchString(out) {
		t.Errorf("broker row:\n%s", out)
	}
	mustCLI(t, bin, nil, []string{"cluster", "health", "--bootstrap", addr}, "offline partitions: 0", "under-replicated partitions: 0", "healthy")
	// A single node answers DescribeQuorum as a one-voter quorum it leads.
	out = mustCLI(t, bin, nil, []string{"cluster", "quorum", "--bootstrap", addr}, "LEADER 1")
	if !regexp.MustCompile(`(?m)^1 +\d+ +0 +\S+ ago +\S+ ago +leader$`).MatchString(out) {
		t.Errorf("voter row:\n%s", out)
	}
	// The broker's reason, not the code's generic text (the default node is
	// the only voter of its own quorum).
	if out, code := runCLI(t, bin, nil, "cluster", "remove-controller", "7", "--bootstrap", addr); code != 1 ||
		!strings.Contains(out, "VOTER_NOT_FOUND: node 7 is not a voter") || strings.Contains(out, "client library") {
		t.Errorf("remove-controller on a single node: exit %d %q", code, out)
	}
}

// TestBinaryUsersAndSecurityFlags: SCRAM users made with "sluice user" log
// in with --tls-ca/--sasl-mechanism/--user/--password, with -X, and with a
// profile file that also holds the bootstrap address.
func TestBinaryUsersAndSecurityFlags(t *testing.T) {
	bin := sluiceBinary(t)
	dir := t.TempDir()
	ca := sectest.NewCA(t, "ca")
	keystore := ca.Server(t, "broker").WritePEM(t, dir, "broker.pem")
	caPEM := ca.WritePEM(t, dir, "ca.pem")
	plainAddr, saslAddr := freeAddr(t), freeAddr(t)
	props := fmt.Sprintf("listeners=PLAINTEXT://%s,SASL_SSL://%s\nssl.keystore.type=PEM\nssl.keystore.location=%s\nsasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512\noffsets.topic.num.partitions=1\n",
		plainAddr, saslAddr, keystore)
	cfgFile := filepath.Join(dir, "server.properties")
	os.WriteFile(cfgFile, []byte(props), 0o600)
	logs := &syncBuf{}
	broker := exec.Command(bin, "--config", cfgFile, "--data-dir", filepath.Join(dir, "data"), "--metrics-listen", "")
	broker.Stdout, broker.Stderr = logs, logs
	if err := broker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Process.Kill(); _ = broker.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "sluice started") {
		if time.Now().After(deadline) {
			t.Fatalf("no startup line:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	noProfile := []string{"SLUICE_CLI_CONFIG=", "HOME=" + dir, "XDG_CONFIG_HOME="}
	plain := append([]string{"SLUICE_BOOTSTRAP=" + plainAddr}, noProfile...)
	mustCLI(t, bin, plain, []string{"user", "create", "dave", "--new-password", "dave-secret"}, "created user dave (SCRAM-SHA-256)")
	mustCLI(t, bin, append(plain, "SLUICE_NEW_PASSWORD=erin-secret"), []string{"user", "create", "erin", "--mechanism", "SCRAM-SHA-512", "--iterations", "4096"}, "created user erin (SCRAM-SHA-512)")
	out := mustCLI(t, bin, plain, []string{"user", "list"}, "dave SCRAM-SHA-256 (8192 iterations)", "erin SCRAM-SHA-512 (4096 iterations)")
	if out, code := runCLI(t, bin, plain, "user", "create", "x", "--new-password", "p", "--iterations", "10"); code != 1 || !strings.Contains(out, "INVALID_REQUEST") && !strings.Contains(out, "iterations") {
		t.Errorf("too few iterations: %d %q", code, out)
	}

	// Flags.
	sasl := append([]string{"SLUICE_BOOTSTRAP=" + saslAddr}, noProfile...)
	mustCLI(t, bin, sasl, []string{"topic", "create", "sec", "--tls-ca", caPEM, "--sasl-mechanism", "SCRAM-SHA-256", "--user", "dave", "--password", "dave-secret"}, "created topic sec")
	mustCLI(t, bin, append(sasl, "SLUICE_PASSWORD=erin-secret"), []string{"topic", "list", "--tls-ca", caPEM, "--sasl-mechanism", "SCRAM-SHA-512", "--user", "erin"}, "sec\t")
	if out, code := runCLI(t, bin, sasl, "topic", "list", "--tls-ca", caPEM, "--sasl-mechanism", "SCRAM-SHA-256", "--user", "dave", "--password", "wrong", "--timeout", "5s"); code != 1 || !strings.Contains(out, "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("wrong password: %d %q", code, out)
	}
	// -X with Kafka's property names.
	mustCLI(t, bin, sasl, []string{"topic", "list", "-X", "security.protocol=SASL_SSL", "-X", "ssl.truststore.type=PEM", "-X", "ssl.truststore.location=" + caPEM,
		"-X", "sasl.mechanism=SCRAM-SHA-256", "-X", `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="dave" password="dave-secret";`}, "sec\t")
	// A profile holds everything, the bootstrap address included: SLUICE_CLI_CONFIG, then ~/.config/sluice/cli.properties.
	profile := "bootstrap.servers=" + saslAddr + "\nsecurity.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + caPEM +
		"\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"dave\" password=\"dave-secret\";\n"
	pf := filepath.Join(dir, "profile.properties")
	os.WriteFile(pf, []byte(profile), 0o600)
	mustCLI(t, bin, []string{"SLUICE_BOOTSTRAP=", "SLUICE_CLI_CONFIG=" + pf}, []string{"topic", "list"}, "sec\t")
	os.MkdirAll(filepath.Join(dir, ".config", "sluice"), 0o700)
	os.WriteFile(filepath.Join(dir, ".config", "sluice", "cli.properties"), []byte(profile), 0o600)
	// produce dials through its own connection (produce_messages.go): TLS and SASL from the profile.
	if out, code := runCLIInput(t, bin, append([]string{"SLUICE_BOOTSTRAP="}, noProfile...), "over-tls\n", "produce", "sec", "-q"); code != 0 {
		t.Fatalf("produce over SASL_SSL: exit %d %q", code, out)
	}
	mustCLI(t, bin, append([]string{"SLUICE_BOOTSTRAP="}, noProfile...), []string{"consume", "sec", "-n", "1"}, "over-tls")
	mustCLI(t, bin, append([]string{"SLUICE_BOOTSTRAP="}, noProfile...), []string{"cluster", "info"}, "CLUSTER ")
	// --bootstrap overrides the profile's address (here: the PLAINTEXT listener, with the profile's SASL_SSL settings overridden by -X).
	mustCLI(t, bin, append([]string{"SLUICE_BOOTSTRAP="}, noProfile...), []string{"topic", "list", "--bootstrap", plainAddr, "-X", "security.protocol=PLAINTEXT"}, "sec\t")
	if out, code := runCLI(t, bin, []string{"SLUICE_CLI_CONFIG=" + filepath.Join(dir, "missing")}, "topic", "list"); code != 2 || !strings.Contains(out, "profile: ") {
		t.Errorf("missing explicit profile: %d %q", code, out)
	}
	os.Remove(filepath.Join(dir, ".config", "sluice", "cli.properties"))

	mustCLI(t, bin, plain, []string{"user", "delete", "dave"}, "deleted user dave")
	out = mustCLI(t, bin, plain, []string{"user", "list"})
	if strings.Contains(out, "dave") {
		t.Errorf("dave not deleted:\n%s", out)
	}
	if out, code := runCLI(t, bin, plain, "user", "delete", "dave"); code != 1 || !strings.Contains(out, "RESOURCE_NOT_FOUND") {
		t.Errorf("delete twice: %d %q", code, out)
	}
	broker.Process.Signal(syscall.SIGTERM)
}

// TestBinaryCompletionAndHelp: completion scripts name every noun and verb;
// every verb has --help.
func TestBinaryCompletionAndHelp(t *testing.T) {
	bin := sluiceBinary(t)
	out := mustCLI(t, bin, nil, []string{"completion", "bash"}, "complete -F _sluice sluice", `"topic") words="create list describe alter-config add-partitions trim-prefix delete"`,
		`"group") words="list describe seek delete"`, `"user") words="create list delete"`, "--bootstrap", "--follow")
	if _, err := exec.LookPath("bash"); err == nil {
		script := filepath.Join(t.TempDir(), "c.sh")
		os.WriteFile(script, []byte(out), 0o600)
		got, err := exec.Command("bash", "-c", `source `+script+`; COMP_WORDS=(sluice group se); COMP_CWORD=2; _sluice; echo "${COMPREPLY[@]}"`).CombinedOutput()
		if err != nil || strings.TrimSpace(string(got)) != "seek" {
			t.Errorf("bash completion of 'sluice group se': %v %q", err, got)
		}
	}
	mustCLI(t, bin, nil, []string{"completion", "zsh"}, "#compdef sluice", "bashcompinit")
	if out, code := runCLI(t, bin, nil, "completion", "fish"); code != 2 {
		t.Errorf("completion fish: %d %q", code, out)
	}
	for _, n := range nouns {
		for _, v := range n.verbs {
			args := []string{n.name}
			if v.name != "" {
				args = append(args, v.name)
			}
			cmd := exec.Command(bin, append(args, "--help")...)
			got, err := cmd.Output()
			if err != nil || !strings.Contains(string(got), "Usage: sluice "+strings.Join(args, " ")) || !strings.Contains(string(got), "-bootstrap") {
				t.Errorf("%v --help: %v %q", args, err, got)
			}
		}
	}
	help := mustCLI(t, bin, nil, []string{"help"}, "group list|describe|seek|delete", "produce TOPIC", "consume TOPIC", "cluster info", "user create", "completion bash|zsh")
	// Every client command and each of its verbs is listed by "sluice help".
	for _, n := range nouns {
		for _, v := range n.verbs {
			if !regexp.MustCompile(`(?m)^  ` + n.name + ` \S*\b` + regexp.QuoteMeta(v.name) + `\b`).MatchString(help) {
				t.Errorf("sluice help does not list %s %s:\n%s", n.name, v.name, help)
			}
		}
	}
	mustCLI(t, bin, nil, []string{"version", "--help"}, "Usage: sluice version")
	mustCLI(t, bin, nil, []string{"help", "version"}, "Usage: sluice version")
	mustCLI(t, bin, nil, []string{"completion", "bash"}, `"dev") words="cluster"`, `"help") words="acl cluster compaction completion consume dev format group produce quota topic topics user version"`)
}

// TestBinaryConsumerProtocolGroup: a KIP-848 (consumer protocol) group is
// listed with its type and described with the members' assignments and lag.
func TestBinaryConsumerProtocolGroup(t *testing.T) {
	bin, addr, _ := startBinary(t)
	env := []string{"SLUICE_BOOTSTRAP=" + addr}
	mustCLI(t, bin, env, []string{"topic", "create", "kt", "-p", "2"})
	runCLIInput(t, bin, env, "a\nb\n", "produce", "kt", "-p", "1", "-q")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("g848"), kgo.ConsumeTopics("kt"), kgo.ClientID("next-gen"),
		kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer(), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out string
	for {
		cl.PollRecords(ctx, 10)
		out, _ = runCLI(t, bin, env, "group", "describe", "g848")
		if s := squeeze(out); strings.Contains(s, "TYPE consumer") && strings.Contains(s, "MEMBERS 1") && regexp.MustCompile(`(?m)^kt +1 +- +2 +- +\S+ +next-gen `).MatchString(out) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the consumer-protocol member never showed:\n%s", out)
		}
	}
	mustCLI(t, bin, env, []string{"group", "list", "--type", "consumer"}, "g848 consumer ")
}
