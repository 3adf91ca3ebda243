package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/vfs"
)

func TestParseScramSpec(t *testing.T) {
	c, err := parseScramSpec(`SCRAM-SHA-512=[name="alice",password="a=b,c",iterations=8192]`)
	if err == nil {
		t.Fatalf("a password with a comma parsed: %+v", c)
	}
	c, err = parseScramSpec(`scram-sha-256=[name=alice,password="alice-secret",iterations=8192]`)
	if err != nil || c.Mechanism != "SCRAM-SHA-256" || c.User != "alice" || c.Password != "alice-secret" || c.Iterations != 8192 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"SCRAM-SHA-512", "SCRAM-SHA-512=name=a,password=b", "SCRAM-SHA-512=[name=a]", "SCRAM-SHA-512=[name=a,password=b,salt=x]"} {
		if _, err := parseScramSpec(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestFormatCommand: sluice format writes the bootstrap credentials in
// the SCRAM store's format, and refuses a data directory that already
// holds a metadata log.
func TestFormatCommand(t *testing.T) {
	dir := t.TempDir()
	env := func(string) string { return "" }
	var out, errb bytes.Buffer
	if code := formatCommand([]string{"--data-dir", dir, "-S", "SCRAM-SHA-512=[name=admin,password=admin-secret]"}, env, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	st, err := security.OpenScramStore(vfs.OS(), filepath.Join(dir, "bootstrap"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Lookup("admin", security.ScramSHA512); !ok {
		t.Fatal("no credential written")
	}
	if err := os.Mkdir(filepath.Join(dir, "quorum"), 0o755); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := formatCommand([]string{"--data-dir", dir, "-S", "SCRAM-SHA-512=[name=other,password=x]"}, env, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "metadata log") {
		t.Fatalf("a formatted cluster's directory: exit %d: %s", code, errb.String())
	}
	if code := formatCommand([]string{"--data-dir", dir}, env, &out, &errb); code != 2 {
		t.Fatalf("nothing to do: exit %d", code)
	}
}
