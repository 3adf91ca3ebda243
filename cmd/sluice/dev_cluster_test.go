package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDevNodePropsKeepsPorts checks that a node's server.properties holds
// every port, metrics included, so a node restarted from it alone keeps them.
func TestDevNodePropsKeepsPorts(t *testing.T) {
	props := devNodeProps(2, 9092, []string{"1@127.0.0.1:9192", "2@127.0.0.1:9193"}, "dc/node-2")
	for _, want := range []string{"node.id=2", "PLAINTEXT://127.0.0.1:9093", "CONTROLLER://127.0.0.1:9193", "sluice.metrics.listen=127.0.0.1:9293"} {
		if !strings.Contains(props, want) {
			t.Errorf("props lack %q:\n%s", want, props)
		}
	}
	cmd := devRestartCommand("sluice", "dc/node-2")
	if !strings.Contains(cmd, "--config ") || !strings.HasSuffix(cmd, filepath.Join("dc", "node-2", "sluice.log")+" 2>&1") ||
		!strings.Contains(cmd, filepath.Join("dc", "node-2", "server.properties")) {
		t.Errorf("restart command %q", cmd)
	}
}

// TestDevClusterRefusesBusyPorts runs "sluice dev cluster" while its Kafka
// port is taken: it must refuse up front, naming the node, and start nothing.
func TestDevClusterRefusesBusyPorts(t *testing.T) {
	bin := sluiceBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if port+300 > 65535 {
		t.Skipf("port %d leaves no room for the dev cluster's ports", port)
	}
	dir := filepath.Join(t.TempDir(), "dc")
	out, err := exec.Command(bin, "dev", "cluster", "--nodes", "2", "--base-port", strconv.Itoa(port), "--dir", dir).CombinedOutput()
	if err == nil {
		t.Fatalf("dev cluster started with its port busy:\n%s", out)
	}
	want := "node 1: kafka 127.0.0.1:" + strconv.Itoa(port)
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "--config ") {
		t.Fatalf("output lacks %q and the restart command:\n%s", want, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dev cluster wrote %s although it refused (%v)", dir, err)
	}
}
