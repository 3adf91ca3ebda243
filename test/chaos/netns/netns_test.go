package netns

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestHelperProcess is not a test: run inside a namespace by
// TestPartitionDropsPackets, it answers (CHAOS_NETNS_HELPER=listen:ADDR)
// or dials (dial:ADDR, exit 0 if connected within 1 s, else 1).
func TestHelperProcess(t *testing.T) {
	h := os.Getenv("CHAOS_NETNS_HELPER")
	if h == "" {
		return
	}
	mode, addr, _ := strings.Cut(h, ":")
	switch mode {
	case "listen":
		l, err := net.Listen("tcp", addr)
		if err != nil {
			os.Exit(2)
		}
		for {
			c, err := l.Accept()
			if err != nil {
				os.Exit(0)
			}
			c.Close()
		}
	case "dial":
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			os.Exit(1)
		}
		c.Close()
		os.Exit(0)
	}
	os.Exit(2)
}

func TestPartitionDropsPackets(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("network namespaces cannot be made here: %v", err)
	}
	n, err := Setup(2)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Teardown()
	self, _ := os.Executable()
	run := func(node int, helper string) *exec.Cmd {
		argv := n.Command(node, self, "-test.run=^TestHelperProcess$")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "CHAOS_NETNS_HELPER="+helper)
		return cmd
	}
	addr := n.IP(2) + ":7001"
	lis := run(2, "listen:"+addr)
	if err := lis.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lis.Process.Kill(); _ = lis.Wait() }()
	dial := func() bool { return run(1, "dial:"+addr).Run() == nil }
	// Node 1 reaches node 2 once it listens; the root namespace too.
	deadline := time.Now().Add(10 * time.Second)
	for !dial() {
		if time.Now().After(deadline) {
			t.Fatal("node 1 cannot reach node 2 before any partition")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := n.Cut([]Pair{{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if dial() {
		t.Fatal("node 1 reached node 2 through a partition")
	}
	if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err != nil {
		t.Fatalf("the root namespace (clients) no longer reaches node 2 during a partition between nodes: %v", err)
	} else {
		c.Close()
	}
	if got := n.CutPairs(); len(got) != 1 || got[0] != (Pair{1, 2}) {
		t.Fatalf("cut pairs %v", got)
	}
	if err := n.HealAll(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for !dial() {
		if time.Now().After(deadline) {
			t.Fatal("node 1 cannot reach node 2 after healing")
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.Teardown()
	for _, name := range []string{"/run/netns/" + n.NS(1), "/run/netns/" + n.NS(2), "/sys/class/net/" + n.Bridge, "/sys/class/net/" + n.HostVeth(1)} {
		if _, err := os.Stat(name); err == nil {
			t.Errorf("%s is still there after Teardown", name)
		}
	}
}

func TestOwnerPid(t *testing.T) {
	for name, want := range map[string]int{"slc123n1": 123, "slc9h2": 9, "slcb12": -1, "slc12n": -1, "other1n1": -1} {
		pid, ok := ownerPid(name, name[len(name)-2])
		if !ok {
			pid = -1
		}
		if pid != want {
			t.Errorf("%s: %d, want %d", name, pid, want)
		}
	}
}

func TestLossyAndSlowLinks(t *testing.T) {
	if err := LossyAvailable(); err != nil {
		t.Skipf("lossy links cannot be made here: %v", err)
	}
	if err := SlowAvailable(); err != nil {
		t.Skipf("slow links cannot be made here: %v", err)
	}
	n, err := Setup(2)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Teardown()
	self, _ := os.Executable()
	run := func(node int, helper string) *exec.Cmd {
		argv := n.Command(node, self, "-test.run=^TestHelperProcess$")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "CHAOS_NETNS_HELPER="+helper)
		return cmd
	}
	addr := n.IP(2) + ":7001"
	lis := run(2, "listen:"+addr)
	if err := lis.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lis.Process.Kill(); _ = lis.Wait() }()
	dial := func() bool { return run(1, "dial:"+addr).Run() == nil }
	reaches := func(what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !dial() {
			if time.Now().After(deadline) {
				t.Fatalf("node 1 cannot reach node 2 %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	reaches("before any fault")
	// Every packet dropped: nothing gets through, from a node or a client.
	if err := n.Lossy(2, 100); err != nil {
		t.Fatal(err)
	}
	if dial() {
		t.Fatal("node 1 reached node 2 through a link dropping every packet")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("the root namespace reached node 2 through a link dropping every packet")
	}
	if err := n.Lossy(2, 30); err != nil { // replaces the rate
		t.Fatal(err)
	}
	if err := n.ClearLossy(2); err != nil {
		t.Fatal(err)
	}
	if err := n.ClearLossy(2); err != nil {
		t.Fatalf("clearing a link that is not lossy: %v", err)
	}
	reaches("after a lossy link is healed")
	if err := n.Lossy(2, 101); err == nil {
		t.Fatal("a loss of 101% was accepted")
	}

	if err := n.Slow(2, 256); err != nil {
		t.Fatal(err)
	}
	qdiscs := func(argv ...string) string {
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v: %s", argv, err, out)
		}
		return string(out)
	}
	if q := qdiscs(n.Command(2, "tc", "qdisc", "show", "dev", Dev)...); !strings.Contains(q, "tbf") || !strings.Contains(q, "256Kbit") {
		t.Fatalf("node 2's interface after Slow: %s", q)
	}
	if q := qdiscs("tc", "qdisc", "show", "dev", n.HostVeth(2)); !strings.Contains(q, "tbf") {
		t.Fatalf("the bridge's end of node 2's link after Slow: %s", q)
	}
	reaches("over a slow link")
	if err := n.ClearSlow(2); err != nil {
		t.Fatal(err)
	}
	if q := qdiscs(n.Command(2, "tc", "qdisc", "show", "dev", Dev)...); strings.Contains(q, "tbf") {
		t.Fatalf("node 2's interface after ClearSlow: %s", q)
	}
	reaches("after a slow link is healed")
}
