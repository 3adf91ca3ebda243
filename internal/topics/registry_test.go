package topics

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
)

func TestValidateName(t *testing.T) {
	good := []string{"a", "A-b_c.d", strings.Repeat("x", 249), "__consumer_offsets", "..."}
	bad := []string{"", ".", "..", strings.Repeat("x", 250), "a b", "a/b", "é", "a\x00"}
	for _, n := range good {
		if err := ValidateName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	for _, n := range bad {
		if err := ValidateName(n); err == nil {
			t.Errorf("%q accepted", n)
		}
	}
}

func TestIDs(t *testing.T) {
	seen := map[ID]bool{}
	for range 1000 {
		id := NewID()
		s := id.String()
		if len(s) != 22 || s[0] == '-' || id.IsZero() || seen[id] {
			t.Fatalf("bad id %q", s)
		}
		seen[id] = true
		back, err := ParseID(s)
		if err != nil || back != id {
			t.Fatalf("round trip %q: %v", s, err)
		}
	}
	for _, s := range []string{"", "short", "!!!!!!!!!!!!!!!!!!!!!!", strings.Repeat("A", 23)} {
		if _, err := ParseID(s); err == nil {
			t.Errorf("ParseID(%q) accepted", s)
		}
	}
}

func TestRegistryPersists(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(vfs.OS(), dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.HadMetadata() {
		t.Fatal("fresh dir reports metadata")
	}
	a, err := r.Create(Topic{Name: "a", Partitions: 3, Configs: map[string]string{"cleanup.policy": "compact"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(Topic{Name: "a", Partitions: 1}); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := r.Create(Topic{Name: "b", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Update("a", func(t *Topic) error { t.Partitions = 5; t.Configs["retention.ms"] = "1"; return nil }); err != nil {
		t.Fatal(err)
	}
	if a.Partitions != 3 || len(a.Configs) != 1 {
		t.Fatal("Update modified a published snapshot")
	}
	if _, err := r.Update("a", func(t *Topic) error { t.Name = "z"; return nil }); err == nil {
		t.Fatal("rename allowed")
	}
	if _, err := r.Update("a", func(*Topic) error { return errors.New("no") }); err == nil {
		t.Fatal("fn error ignored")
	}
	if _, err := r.Delete("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Delete("b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("double delete: %v", err)
	}

	r2, err := Open(vfs.OS(), dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r2.ClusterID() != r.ClusterID() || len(r2.ClusterID()) != 22 || !r2.HadMetadata() {
		t.Fatalf("cluster id %q vs %q", r2.ClusterID(), r.ClusterID())
	}
	got, ok := r2.Get("a")
	if !ok || got.ID != a.ID || got.Partitions != 5 || got.Configs["retention.ms"] != "1" || got.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("reloaded %+v", got)
	}
	if byID, ok := r2.ByID(a.ID); !ok || byID.Name != "a" {
		t.Fatal("ByID after reload")
	}
	if _, ok := r2.Get("b"); ok || r2.Len() != 1 || r2.TotalPartitions() != 5 {
		t.Fatalf("deleted topic reloaded / counts %d %d", r2.Len(), r2.TotalPartitions())
	}
	if _, err := os.Stat(filepath.Join(dir, TopicsFile+".tmp")); !os.IsNotExist(err) {
		t.Fatal("temp file left behind")
	}
	// meta.properties is Kafka's format.
	mp, _ := os.ReadFile(filepath.Join(dir, MetaPropertiesFile))
	for _, want := range []string{"version=1", "node.id=1", "cluster.id=" + r.ClusterID(), "directory.id="} {
		if !strings.Contains(string(mp), want) {
			t.Fatalf("meta.properties lacks %q:\n%s", want, mp)
		}
	}
}

func TestRegistryRejectsBadState(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(vfs.OS(), dir, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(vfs.OS(), dir, 2); err == nil || !strings.Contains(err.Error(), "node.id") {
		t.Fatalf("node id mismatch: %v", err)
	}
	for _, doc := range []string{
		`{`,
		`{"version":2,"topics":[]}`,
		`{"version":1,"topics":[{"name":"a","id":"bad","partitions":1}]}`,
		`{"version":1,"topics":[{"name":"a b","id":"AAAAAAAAAAAAAAAAAAAAAQ","partitions":1}]}`,
		`{"version":1,"topics":[{"name":"a","id":"AAAAAAAAAAAAAAAAAAAAAg","partitions":0}]}`,
		`{"version":1,"topics":[{"name":"a","id":"AAAAAAAAAAAAAAAAAAAAAg","partitions":1},{"name":"a","id":"AAAAAAAAAAAAAAAAAAAAAw","partitions":1}]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, TopicsFile), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(vfs.OS(), dir, 1); err == nil {
			t.Errorf("accepted %s", doc)
		}
	}
}
