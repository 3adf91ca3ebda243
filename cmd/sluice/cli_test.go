package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// startBinary runs the real broker on a free address and returns that
// address once its startup line has been printed (read from its stderr,
// no polling).
func startBinary(t *testing.T, extra ...string) (bin, addr, startLine string) {
	t.Helper()
	bin = sluiceBinary(t)
	addr = freeAddr(t)
	args := append([]string{"--listen", addr, "--data-dir", filepath.Join(t.TempDir(), "data"), "--metrics-listen", ""}, extra...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), "sluice started") {
			startLine = sc.Text()
			go func() { // keep draining so the broker never blocks on a full pipe
				for sc.Scan() {
				}
			}()
			return bin, addr, startLine
		}
	}
	t.Fatalf("no startup line:\n%s", strings.Join(seen, "\n"))
	return
}

// runCLI runs the binary with args and returns its combined output and exit code.
func runCLI(t *testing.T, bin string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(cmd.Environ(), env...)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return string(out), code
}

// TestBinaryTopicsErrorsShowBrokerMessage: each topics verb prints the
// broker's ErrorMessage, not only the error code's generic text.
func TestBinaryTopicsErrorsShowBrokerMessage(t *testing.T) {
	bin, addr, _ := startBinary(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"topics", "create", "x", "--config", "cleanup.policy=shred"}, `INVALID_CONFIG: invalid value "shred" for config cleanup.policy`},
		{[]string{"topics", "create", "x", "--config", "retention.ms=abc"}, "retention.ms: not a number"},
		{[]string{"topics", "create", "x", "--partitions", "0"}, "INVALID_PARTITIONS: "},
		{[]string{"topics", "delete", "nope"}, "UNKNOWN_TOPIC_OR_PARTITION: "},
		{[]string{"topics", "describe", "nope"}, "UNKNOWN_TOPIC_OR_PARTITION: "},
	}
	for _, c := range cases {
		out, code := runCLI(t, bin, nil, append(c.args, "--bootstrap", addr)...)
		if code != 1 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit 1 and %q", c.args, code, out, c.want)
		}
		if strings.Contains(out, "Configuration is invalid.") || strings.Count(out, "UNKNOWN_TOPIC_OR_PARTITION") > 1 {
			t.Errorf("%v: generic or repeated text: %q", c.args, out)
		}
	}
	if out, code := runCLI(t, bin, nil, "topics", "create", "ok-topic", "--bootstrap", addr); code != 0 {
		t.Fatalf("create: %d %s", code, out)
	}
	if out, code := runCLI(t, bin, nil, "topics", "create", "ok-topic", "--bootstrap", addr); code != 1 || !strings.Contains(out, "TOPIC_ALREADY_EXISTS: ") {
		t.Errorf("create twice: %d %q", code, out)
	}
}

func TestVersionFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"},
		{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	cases := []struct {
		bi                *debug.BuildInfo
		override          string
		wantShort, wantLn string
	}{
		{bi, "", "dev-0123456789ab-dirty", "sluice dev-0123456789ab-dirty (commit 0123456789ab, 2026-12-01T10:00:00Z, modified) go1.99.1 "},
		{bi, "v1.2.3", "v1.2.3", "sluice v1.2.3 (commit 0123456789ab, 2026-12-01T10:00:00Z, modified) go1.99.1 "},
		{&debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "v0.4.0"}}, "", "v0.4.0", "sluice v0.4.0 go1.99.1 "},
		{nil, "", "dev", "sluice dev " + runtime.Version() + " "},
	}
	for _, c := range cases {
		if got := versionOf(c.bi, c.override); got != c.wantShort {
			t.Errorf("versionOf = %q, want %q", got, c.wantShort)
		}
		if got := versionLine(c.bi, c.override); !strings.HasPrefix(got, c.wantLn) || !strings.HasSuffix(got, runtime.GOOS+"/"+runtime.GOARCH) {
			t.Errorf("versionLine = %q, want prefix %q", got, c.wantLn)
		}
	}
}

// TestBinaryVersion: "sluice version" and "--version" agree with each other
// and with the version in the broker's startup line.
func TestBinaryVersion(t *testing.T) {
	bin, _, start := startBinary(t)
	out, code := runCLI(t, bin, nil, "version")
	out2, code2 := runCLI(t, bin, nil, "--version")
	if code != 0 || code2 != 0 || out != out2 || !strings.HasPrefix(out, "sluice ") || !strings.Contains(out, runtime.Version()) {
		t.Fatalf("version: %d %q; --version: %d %q", code, out, code2, out2)
	}
	v := strings.Fields(out)[1]
	if !strings.Contains(start, "version="+v+" ") {
		t.Errorf("startup line %q does not carry version %q", start, v)
	}
	if out, code := runCLI(t, bin, nil, "version", "extra"); code != 2 || !strings.Contains(out, "unexpected argument") {
		t.Errorf("version extra: %d %q", code, out)
	}
}

// TestBinaryHelp: help lists commands, verbs and flags on stdout with exit
// 0; an unknown command, verb or flag is a clear message and exit 2.
func TestBinaryHelp(t *testing.T) {
	bin := sluiceBinary(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"Commands:", "topic create|list|describe|alter-config", "version", "-data-dir", "-metrics-listen"}},
		{[]string{"--help"}, []string{"Commands:", "-listen"}},
		{[]string{"help", "topics"}, []string{"Verbs:", "create", "list", "describe", "delete", "SLUICE_BOOTSTRAP"}},
		{[]string{"topics", "--help"}, []string{"Verbs:", "describe"}},
		{[]string{"topics", "create", "--help"}, []string{"Usage: sluice topics create NAME", "-partitions", "-replication-factor", "-config name=value", "-bootstrap", "-command-config"}},
		{[]string{"topics", "list", "-h"}, []string{"Usage: sluice topics list [", "-bootstrap"}},
		{[]string{"topics", "describe", "--help"}, []string{"Usage: sluice topics describe NAME", "-bootstrap"}},
		{[]string{"topics", "delete", "--help"}, []string{"Usage: sluice topics delete NAME", "-command-config"}},
	} {
		cmd := exec.Command(bin, c.args...)
		out, err := cmd.Output() // stdout only
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%v: output lacks %q:\n%s", c.args, w, out)
			}
		}
	}
	if out, _ := exec.Command(bin, "topics", "list", "--help").Output(); strings.Contains(string(out), "-partitions") {
		t.Errorf("list --help shows create's flags:\n%s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate" (sluice help`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"--frob"}, "flag provided but not defined: -frob"},
		{[]string{"topics"}, "Verbs:"},
		{[]string{"topics", "frob"}, `unknown verb "frob"`},
		{[]string{"topics", "list", "--partitions", "3"}, "flag provided but not defined: -partitions"},
		{[]string{"topics", "describe"}, "missing topic NAME"},
		{[]string{"topics", "list", "extra"}, `unexpected argument "extra"`},
	} {
		out, code := runCLI(t, bin, nil, c.args...)
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", c.args, code, out, c.want)
		}
	}
}

// TestBinaryBootstrapEnv: SLUICE_BOOTSTRAP stands in for --bootstrap on
// every topics verb, and the flag wins over it.
func TestBinaryBootstrapEnv(t *testing.T) {
	bin, addr, _ := startBinary(t)
	env := []string{"SLUICE_BOOTSTRAP=" + addr}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"topics", "create", "env-topic", "--partitions", "2"}, "created topic env-topic (2 partitions)"},
		{[]string{"topics", "list"}, "env-topic\t2 partitions"},
		{[]string{"topics", "describe", "env-topic"}, "env-topic\ttopic id "},
		{[]string{"topics", "delete", "env-topic"}, "deleted topic env-topic"},
	} {
		if out, code := runCLI(t, bin, env, c.args...); code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%v with SLUICE_BOOTSTRAP: exit %d, %q; want %q", c.args, code, out, c.want)
		}
	}
	// The flag wins: a bad variable does not matter when --bootstrap is given.
	if out, code := runCLI(t, bin, []string{"SLUICE_BOOTSTRAP=127.0.0.1:1"}, "topics", "list", "--bootstrap", addr); code != 0 {
		t.Errorf("--bootstrap over SLUICE_BOOTSTRAP: exit %d, %q", code, out)
	}
	// A client property the commands do not use is not silently dropped: a
	// typo gets a warning with the name meant; client.id is used.
	out, code := runCLI(t, bin, env, "topics", "list", "-X", "bootstrap.server=127.0.0.1:1", "-X", "client.id=ops-cli")
	if want := "sluice: warning: the client property bootstrap.server was supplied but the sluice commands do not use it (did you mean bootstrap.servers?)"; code != 0 || !strings.Contains(out, want) || strings.Contains(out, "client.id") {
		t.Errorf("-X bootstrap.server: exit %d, %q; want exit 0, %q and no word of client.id", code, out, want)
	}
}

// TestBinaryConfigSuggestions: an unknown config name gets a "did you mean"
// in a server.properties file and in topics create --config (validated by
// the broker, whose message the CLI prints).
func TestBinaryConfigSuggestions(t *testing.T) {
	bin, addr, _ := startBinary(t)
	dir := t.TempDir()
	for props, want := range map[string]string{
		"num.partitons=3\n": "num.partitons: unknown broker config name (did you mean num.partitions?)",
		"retention.ms=1\n":  "retention.ms: unknown broker config name (did you mean log.retention.ms?)",
	} {
		f := filepath.Join(dir, "server.properties")
		if err := os.WriteFile(f, []byte(props), 0o600); err != nil {
			t.Fatal(err)
		}
		out, code := runCLI(t, bin, nil, "--config", f, "--data-dir", filepath.Join(dir, "data"), "--metrics-listen", "")
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("%q: exit %d, %q; want exit 2 and %q", props, code, out, want)
		}
	}
	// A file with several bad names gets every one reported, each on its own
	// line, and the broker creates nothing.
	f := filepath.Join(dir, "several.properties")
	if err := os.WriteFile(f, []byte("num.partitons=3\nretention.ms=1\nsegment.bytes=x\nlog.segment.bytes=abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "several-data")
	out, code := runCLI(t, bin, nil, "--config", f, "--data-dir", data, "--metrics-listen", "")
	for _, want := range []string{
		"sluice: config file " + f + ": config num.partitons: unknown broker config name (did you mean num.partitions?)\n",
		"sluice: config file " + f + ": config retention.ms: unknown broker config name (did you mean log.retention.ms?)\n",
		"sluice: config file " + f + ": config segment.bytes: unknown broker config name (did you mean log.segment.bytes?)\n",
		"sluice: config file " + f + `: invalid value "abc" for config log.segment.bytes`,
	} {
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("several bad names: exit %d, %q; want exit 2 and %q", code, out, want)
		}
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("data directory after a bad config file: %v", err)
	}
	for cfg, want := range map[string]string{
		"cleanup.polcy=compact": "config cleanup.polcy: unknown topic config name (did you mean cleanup.policy?)",
		"log.retention.ms=1":    "config log.retention.ms: unknown topic config name (did you mean retention.ms?)",
	} {
		out, code := runCLI(t, bin, nil, "topics", "create", "t", "--config", cfg, "--bootstrap", addr)
		if code != 1 || !strings.Contains(out, "INVALID_CONFIG: "+want) {
			t.Errorf("--config %s: exit %d, %q; want %q", cfg, code, out, want)
		}
	}
}
