package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
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
