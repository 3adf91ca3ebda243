package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBinaryACLs: "sluice acl create/list/delete" against a broker with the
// authorizer on, where the PLAINTEXT listener's User:ANONYMOUS is the super
// user and a SCRAM user on a SASL listener is what the ACLs govern.
func TestBinaryACLs(t *testing.T) {
	bin := sluiceBinary(t)
	dir := t.TempDir()
	plainAddr, saslAddr := freeAddr(t), freeAddr(t)
	props := fmt.Sprintf("listeners=PLAINTEXT://%s,SASL_PLAINTEXT://%s\nsasl.enabled.mechanisms=SCRAM-SHA-256\n"+
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\nsuper.users=User:ANONYMOUS\noffsets.topic.num.partitions=1\n",
		plainAddr, saslAddr)
	cfgFile := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(cfgFile, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
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
	env := []string{"SLUICE_BOOTSTRAP=" + plainAddr, "SLUICE_CLI_CONFIG=", "HOME=" + dir, "XDG_CONFIG_HOME="}
	alice := []string{"--bootstrap", saslAddr, "--sasl-mechanism", "SCRAM-SHA-256", "--user", "alice", "--password", "alice-secret", "--timeout", "10s"}
	asAlice := func(args ...string) []string { return append(args, alice...) }

	mustCLI(t, bin, env, []string{"user", "create", "alice", "--new-password", "alice-secret"}, "created user alice")
	mustCLI(t, bin, env, []string{"topic", "create", "orders", "-p", "1"}, "created topic orders")

	// Without ACLs alice may do nothing.
	if out, code := runCLIInput(t, bin, env, "v1\n", asAlice("produce", "orders", "-q")...); code != 1 || !strings.Contains(out, "AUTHORIZATION_FAILED") {
		t.Fatalf("produce without ACLs: %d %q", code, out)
	}
	if out, code := runCLI(t, bin, env, asAlice("acl", "list")...); code != 1 || !strings.Contains(out, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("acl list without ACLs: %d %q", code, out)
	}

	mustCLI(t, bin, env, []string{"acl", "create", "--allow-principal", "User:alice", "--operation", "Write", "--operation", "Describe", "--topic", "orders"},
		"created 2 ACL(s)", "TOPIC orders LITERAL User:alice * DESCRIBE ALLOW", "TOPIC orders LITERAL User:alice * WRITE ALLOW")
	mustCLI(t, bin, env, []string{"acl", "create", "--deny-principal", "User:bob", "--operation", "All", "--group", "app-", "--resource-pattern-type", "prefixed", "--host", "10.0.0.1"},
		"created 1 ACL(s)", "GROUP app- PREFIXED User:bob 10.0.0.1 ALL DENY")
	mustCLI(t, bin, env, []string{"acl", "create", "--allow-principal", "User:alice", "--operation", "Describe", "--cluster", "--transactional-id", "tx-1"},
		"CLUSTER kafka-cluster LITERAL User:alice * DESCRIBE ALLOW", "TRANSACTIONAL_ID tx-1 LITERAL User:alice * DESCRIBE ALLOW")

	// The ACLs apply: alice writes to orders, and lists ACLs (DESCRIBE on the cluster) but may not create one (ALTER).
	if out, code := runCLIInput(t, bin, env, "v1\n", asAlice("produce", "orders", "-q")...); code != 0 {
		t.Fatalf("produce with the Write ACL: %d %q", code, out)
	}
	out := mustCLI(t, bin, env, asAlice("acl", "list"), "GROUP app- PREFIXED User:bob 10.0.0.1 ALL DENY", "TOPIC orders LITERAL User:alice * WRITE ALLOW")
	if n := strings.Count(out, "\n"); n != 6 { // header + 5 ACLs
		t.Errorf("acl list: %d lines:\n%s", n, out)
	}
	if out, code := runCLI(t, bin, env, asAlice("acl", "create", "--allow-principal", "User:alice", "--operation", "All", "--topic", "*")...); code != 1 || !strings.Contains(out, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Errorf("acl create by alice: %d %q", code, out)
	}

	// Filters.
	out = mustCLI(t, bin, env, []string{"acl", "list", "--principal", "User:bob"}, "GROUP app- PREFIXED User:bob")
	if strings.Contains(out, "alice") {
		t.Errorf("list --principal User:bob:\n%s", out)
	}
	out = mustCLI(t, bin, env, []string{"acl", "list", "--topic", "orders"}, "WRITE", "DESCRIBE")
	if strings.Contains(out, "GROUP") || strings.Contains(out, "CLUSTER ") {
		t.Errorf("list --topic orders:\n%s", out)
	}
	mustCLI(t, bin, env, []string{"acl", "list", "--group", "app-x", "--resource-pattern-type", "match"}, "GROUP app- PREFIXED User:bob")

	// Bad input: a usage error (exit 2) naming the problem.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"acl", "create", "--allow-principal", "alice", "--operation", "Read", "--topic", "x"}, `principal "alice"`},
		{[]string{"acl", "create", "--allow-principal", "User:alice", "--operation", "Bogus", "--topic", "x"}, `--operation "Bogus"`},
		{[]string{"acl", "create", "--allow-principal", "User:alice", "--operation", "Any", "--topic", "x"}, `--operation "Any"`},
		{[]string{"acl", "create", "--allow-principal", "User:alice", "--operation", "Read"}, "name a resource"},
		{[]string{"acl", "create", "--operation", "Read", "--topic", "x"}, "--allow-principal or --deny-principal"},
		{[]string{"acl", "create", "--allow-principal", "User:alice", "--topic", "x"}, "--operation"},
		{[]string{"acl", "create", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "x", "--resource-pattern-type", "match"}, "literal or prefixed"},
		{[]string{"acl", "delete", "--operation", "Read"}, "name a resource"},
	} {
		if out, code := runCLI(t, bin, env, c.args...); code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("%v: %d %q, want exit 2 and %q", c.args, code, out, c.want)
		}
	}

	// Delete: only what the filter names.
	mustCLI(t, bin, env, []string{"acl", "delete", "--topic", "orders", "--operation", "Write"}, "deleted 1 ACL(s)", "TOPIC orders LITERAL User:alice * WRITE ALLOW")
	mustCLI(t, bin, env, []string{"acl", "delete", "--topic", "orders", "--operation", "Write"}, "no ACL matched")
	if out, code := runCLIInput(t, bin, env, "v2\n", asAlice("produce", "orders", "-q")...); code != 1 || !strings.Contains(out, "AUTHORIZATION_FAILED") {
		t.Errorf("produce after the Write ACL is deleted: %d %q", code, out)
	}
	mustCLI(t, bin, env, []string{"acl", "delete", "--group", "app-", "--resource-pattern-type", "prefixed", "--deny-principal", "User:bob"}, "deleted 1 ACL(s)")
	out = mustCLI(t, bin, env, []string{"acl", "list"})
	if strings.Contains(out, "bob") || strings.Contains(out, "WRITE") || !strings.Contains(squeeze(out), "TOPIC orders LITERAL User:alice * DESCRIBE ALLOW") {
		t.Errorf("after deletes:\n%s", out)
	}

	// Help and completion know the noun.
	mustCLI(t, bin, nil, []string{"help"}, "acl create|list|delete")
	mustCLI(t, bin, nil, []string{"completion", "bash"}, `"acl") words="create list delete"`)
	mustCLI(t, bin, nil, []string{"acl", "create", "--help"}, "-allow-principal", "-resource-pattern-type")
	broker.Process.Signal(syscall.SIGTERM)
}
