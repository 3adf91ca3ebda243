package quorum

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// restoreRecorder is a listSM that keeps the bytes Restore was given.
type restoreRecorder struct {
	listSM
	restored [][]byte
}

func (r *restoreRecorder) Restore(b []byte) error {
	r.restored = append(r.restored, append([]byte(nil), b...))
	return r.listSM.Restore(b)
}

// PeekSnapshot reads, without a node, the bytes that the node's Start then
// hands to Restore (a start decodes them ahead: metadata.Prefetch).
func TestPeekSnapshot(t *testing.T) {
	c := newCluster(t, 1, 4)
	fs := c.m[1].fs
	if data, err := PeekSnapshot(fs, "/data/quorum"); err != nil || data != nil {
		t.Fatalf("before any snapshot: %q, %v; want nothing", data, err)
	}
	if data, err := PeekSnapshot(vfs.NewMemFS(), "/data/quorum"); err != nil || data != nil {
		t.Fatalf("no metadata log: %q, %v; want nothing", data, err)
	}
	l := c.leader()
	vals := []string{"a", "b", "c", "d", "e", "f"}
	c.mustPropose(l, vals...)
	c.converge(vals)
	c.waitFor("a snapshot", func() bool {
		first, _ := c.m[1].node.st.FirstIndex()
		return first > 3
	})
	if err := c.m[1].node.Stop(); err != nil {
		t.Fatal(err)
	}
	c.m[1].node = nil
	data, err := PeekSnapshot(fs, "/data/quorum")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := json.Unmarshal(data, &got); err != nil || len(got) < 4 {
		t.Fatalf("peeked snapshot %q (%v): want the list of at least 4 values", data, err)
	}
	rec := &restoreRecorder{}
	cfg := c.config(1, false)
	cfg.StateMachine = rec
	n, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if len(rec.restored) != 1 || !bytes.Equal(rec.restored[0], data) {
		t.Fatalf("Start restored %q; PeekSnapshot read %q", rec.restored, data)
	}
}
