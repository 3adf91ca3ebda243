package main

import (
	"strings"
	"testing"
)

// TestBinaryQuotas: "sluice quota alter/list/describe" against the binary.
func TestBinaryQuotas(t *testing.T) {
	bin, addr, _ := startBinary(t)
	cli := func(args ...string) []string { return append(args, "--bootstrap", addr) }
	mustCLI(t, bin, nil, cli("quota", "alter", "--entity-type", "clients", "--entity-name", "c1",
		"--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048"), "altered quotas of client-id=c1")
	mustCLI(t, bin, nil, cli("quota", "alter", "--entity-type", "users", "--entity-name", "alice",
		"--entity-type", "clients", "--entity-default", "--add-config", "request_percentage=12.5"),
		"altered quotas of user=alice, client-id=<default>")
	mustCLI(t, bin, nil, cli("quota", "alter", "--entity-type", "ips", "--entity-default", "--add-config", "connection_creation_rate=50"))

	out := mustCLI(t, bin, nil, cli("quota", "list"), "ENTITY QUOTA VALUE", "client-id=c1 consumer_byte_rate 2048",
		"client-id=c1 producer_byte_rate 1024", "user=alice, client-id=<default> request_percentage 12.5", "ip=<default> connection_creation_rate 50")
	if n := strings.Count(out, "\n"); n != 5 {
		t.Errorf("list: %d lines:\n%s", n, out)
	}
	// describe is strict: only the entity named.
	out = mustCLI(t, bin, nil, cli("quota", "describe", "--entity-type", "users", "--entity-name", "alice",
		"--entity-type", "clients", "--entity-default"), "request_percentage 12.5")
	if strings.Contains(out, "c1") {
		t.Errorf("describe shows another entity:\n%s", out)
	}
	// list narrows by component.
	out = mustCLI(t, bin, nil, cli("quota", "list", "--entity-type", "users", "--entity-name", "alice"), "request_percentage")
	if strings.Contains(out, "c1") {
		t.Errorf("list --entity-type users --entity-name alice:\n%s", out)
	}
	mustCLI(t, bin, nil, cli("quota", "alter", "--entity-type", "clients", "--entity-name", "c1", "--delete-config", "producer_byte_rate"))
	if out := mustCLI(t, bin, nil, cli("quota", "describe", "--entity-type", "clients", "--entity-name", "c1")); strings.Contains(out, "producer_byte_rate") {
		t.Errorf("after --delete-config:\n%s", out)
	}

	// Refusals: the broker's message, and usage errors.
	if out, code := runCLI(t, bin, nil, cli("quota", "alter", "--entity-type", "clients", "--entity-name", "c1", "--add-config", "producer_byte_rat=5")...); code != 1 ||
		!strings.Contains(out, "Invalid configuration key producer_byte_rat") {
		t.Errorf("unknown key: %d %q", code, out)
	}
	if out, code := runCLI(t, bin, nil, cli("quota", "alter", "--entity-type", "clients", "--add-config", "producer_byte_rate=5")...); code != 2 ||
		!strings.Contains(out, "needs --entity-name or --entity-default") {
		t.Errorf("entity without a name: %d %q", code, out)
	}
	if out, code := runCLI(t, bin, nil, cli("quota", "alter", "--entity-type", "groups", "--entity-name", "g")...); code != 2 ||
		!strings.Contains(out, "users, clients or ips") {
		t.Errorf("bad entity type: %d %q", code, out)
	}
}
