package node

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeBin writes an executable that prints help for any arguments.
func fakeBin(t *testing.T, help string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sluice")
	script := "#!/bin/sh\ncat <<'EOF'\n" + help + "\nEOF\nexit 0\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestClusterSupportFromHelp(t *testing.T) {
	cluster := fakeBin(t, "Usage: sluice [flags]   run a broker (a cluster node when --config sets controller.quorum.voters)")
	single := fakeBin(t, "Usage: sluice [flags]   run a single-node Kafka-compatible broker")
	other := fakeBin(t, "Usage: something else")
	if err := ClusterSupport(cluster); err != nil {
		t.Fatalf("cluster binary: %v", err)
	}
	if err := ClusterSupport(single); err == nil || !strings.Contains(err.Error(), "single node only") {
		t.Fatalf("single-node binary: %v", err)
	}
	if err := ClusterSupport(other); err == nil || !strings.Contains(err.Error(), "does not mention controller.quorum.voters") {
		t.Fatalf("other binary: %v", err)
	}
	if _, err := NewCluster(single, t.TempDir(), 3, nil); err == nil || !strings.Contains(err.Error(), "--nodes 3") {
		t.Fatalf("NewCluster with a single-node binary: %v", err)
	}
	if _, err := NewCluster(single, t.TempDir(), 6, nil); err == nil {
		t.Fatal("6 nodes accepted")
	}
}

// Three nodes get one cluster's server.properties: the same voters, each its
// own CONTROLLER listener among them, and the run's configs.
func TestClusterProperties(t *testing.T) {
	bin := fakeBin(t, "a cluster node when --config sets controller.quorum.voters")
	dir := t.TempDir()
	c, err := NewCluster(bin, dir, 3, map[string]string{"num.partitions": "4"})
	if err != nil {
		t.Fatal(err)
	}
	var voters string
	for i, n := range c.Nodes {
		b, err := os.ReadFile(n.PropertiesPath())
		if err != nil {
			t.Fatal(err)
		}
		props := map[string]string{}
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") {
				props[k] = v
			}
		}
		if props["node.id"] != string(rune('1'+i)) || props["process.roles"] != "broker,controller" ||
			props["controller.listener.names"] != "CONTROLLER" || props["num.partitions"] != "4" ||
			props["listener.security.protocol.map"] != "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT" ||
			props["listeners"] != "PLAINTEXT://"+n.Listen+",CONTROLLER://"+n.Controller ||
			props["advertised.listeners"] != "PLAINTEXT://"+n.Listen || props["log.dirs"] != n.DataDir() {
			t.Fatalf("node %d: %v", i+1, props)
		}
		if !regexp.MustCompile(`^1@127\.0\.0\.1:\d+,2@127\.0\.0\.1:\d+,3@127\.0\.0\.1:\d+$`).MatchString(props["controller.quorum.voters"]) ||
			!strings.Contains(props["controller.quorum.voters"], n.Controller) {
			t.Fatalf("node %d: voters %q", i+1, props["controller.quorum.voters"])
		}
		if voters != "" && props["controller.quorum.voters"] != voters {
			t.Fatalf("node %d: voters %q, node 1 %q", i+1, props["controller.quorum.voters"], voters)
		}
		voters = props["controller.quorum.voters"]
	}
	// One node stays a single-node broker.
	one, err := NewCluster(bin, t.TempDir(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(one.Nodes[0].PropertiesPath())
	if strings.Contains(string(b), "controller") {
		t.Fatalf("single node properties:\n%s", b)
	}
}

// The addresses of one cluster never share a port.
func TestFreeLoopbackAddrsDistinct(t *testing.T) {
	as, err := FreeLoopbackAddrs(15)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range as {
		if seen[a] {
			t.Fatalf("%s twice in %v", a, as)
		}
		seen[a] = true
	}
}
