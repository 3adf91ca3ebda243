package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBinaryLoneNodeLogsNoControllerEndpoint: a lone node serves no
// controller listener, so its start-up log names no address but its Kafka
// listener (the lone voter's port only gives it an address in the metadata).
func TestBinaryLoneNodeLogsNoControllerEndpoint(t *testing.T) {
	bin := sluiceBinary(t)
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--listen", addr, "--data-dir", filepath.Join(t.TempDir(), "data"), "--metrics-listen", "")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ports := regexp.MustCompile(`(?:127\.0\.0\.1:|Port:)(\d+)`)
	_, ownPort, _ := strings.Cut(addr, ":")
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		l := sc.Text()
		seen = append(seen, l)
		for _, m := range ports.FindAllStringSubmatch(l, -1) {
			if m[1] != ownPort {
				t.Errorf("start-up line names port %s, not served:\n%s", m[1], l)
			}
		}
		if strings.Contains(l, "sluice started") {
			if !strings.Contains(strings.Join(seen, "\n"), `controller_listener="none`) {
				t.Errorf("no \"cluster node started\" line saying there is no controller listener:\n%s", strings.Join(seen, "\n"))
			}
			go func() {
				for sc.Scan() {
				}
			}()
			return
		}
	}
	t.Fatalf("no startup line:\n%s", strings.Join(seen, "\n"))
}
