package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBrokenBrokerIsCaught runs the checker against a sluice built with the
// chaosbug_ackearly tag (the leader acknowledges acks=all writes before the
// in-sync replicas hold them: internal/broker/chaosbug_ackearly.go) on three
// nodes at replication factor 3 with network partitions (kills where
// namespaces cannot be made), and expects it to name lost
// acknowledged writes. About a minute: it runs only with
// CHAOS_SELFTEST_BROKEN=1 (scripts/chaos.sh --selftest-broken sets it).
func TestBrokenBrokerIsCaught(t *testing.T) {
	if os.Getenv("CHAOS_SELFTEST_BROKEN") != "1" {
		t.Skip("a real run of about a minute: set CHAOS_SELFTEST_BROKEN=1 (scripts/chaos.sh --selftest-broken)")
	}
	dir := t.TempDir()
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	build := func(out, pkgDir string, args ...string) {
		cmd := exec.Command("go", append(append([]string{"build", "-o", out}, args...), ".")...)
		cmd.Dir = pkgDir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkgDir, err, b)
		}
	}
	build(filepath.Join(dir, "sluice-buggy"), filepath.Join(root, "cmd", "sluice"), "-tags", "chaosbug_ackearly")
	build(filepath.Join(dir, "sluice-chaos"), ".")
	seed := os.Getenv("CHAOS_SELFTEST_SEED")
	if seed == "" {
		seed = "5"
	}
	// An isolated leader that clients still reach acknowledges writes its
	// followers never get, which the new leader's log then lacks: network
	// partitions show the bug in every run; kills only when one lands in
	// the millisecond between an answer and the followers' next fetch.
	faults := "kill"
	if exec.Command(filepath.Join(dir, "sluice-chaos"), "--netns-check").Run() == nil {
		faults = "partition"
	} else {
		t.Log("network namespaces cannot be made here: kill faults only, which may not hit the bug")
	}
	run := filepath.Join(dir, "run")
	cmd := exec.Command(filepath.Join(dir, "sluice-chaos"), "--bin", filepath.Join(dir, "sluice-buggy"), "--dir", run,
		"--nodes", "3", "--rf", "3", "--min-insync", "2", "--quick", "--time", "40s", "--faults", faults,
		"--workloads", "append", "--seed", seed)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("sluice-chaos against the broken build: %v (want exit status 1: anomalies)\n%s", err, out.String())
	}
	summary := out.String()
	if !strings.Contains(summary, "lost-write") {
		t.Fatalf("the checker did not name lost writes against a broker acknowledging before replication:\n%s", summary)
	}
	t.Logf("named against the broken build:\n%s", summary)
}
