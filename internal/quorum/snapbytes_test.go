package quorum

import (
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// A few large entries take a snapshot (Config.SnapshotBytes) long before
// SnapshotEvery entries: the log behind it is compacted, and a restart
// restores the snapshot and replays only what came after.
func TestSnapshotBySize(t *testing.T) {
	c := &cluster{t: t, nw: NewMemNetwork(), peers: []uint64{1}, m: map[uint64]*member{}, snapBytes: 4096}
	c.m[1] = &member{fs: vfs.NewMemFS()}
	if err := c.start(1, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stopAll)
	l := c.leader()
	big := strings.Repeat("x", 1500)
	var want []string
	for i := 0; i < 5; i++ {
		want = append(want, big+string(rune('a'+i)))
	}
	c.mustPropose(l, want...)
	c.converge(want)
	c.waitFor("a snapshot", func() bool {
		fi, err := c.m[1].fs.ReadDir("/data/quorum")
		return err == nil && hasSnap(fi)
	})
	if first, _ := c.m[1].node.st.FirstIndex(); first <= 3 {
		t.Fatalf("log starts at %d after a snapshot by size (SnapshotEvery is 10000): not compacted", first)
	}
	c.crash(1, vfs.CrashOptions{})
	if err := c.start(1, false); err != nil {
		t.Fatal(err)
	}
	c.converge(want)
}

// Entries since the last snapshot that hold as many bytes as it (and at
// least minRelativeSnapshotBytes) take the next one, well before
// SnapshotBytes or SnapshotEvery: a start never replays more than it
// restores.
func TestSnapshotByRelativeSize(t *testing.T) {
	c := &cluster{t: t, nw: NewMemNetwork(), peers: []uint64{1}, m: map[uint64]*member{}, every: 4, snapBytes: 1 << 40}
	c.m[1] = &member{fs: vfs.NewMemFS()}
	if err := c.start(1, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stopAll)
	l := c.leader()
	small := []string{"a", "b", "c", "d"}
	c.mustPropose(l, small...)
	c.converge(small)
	c.waitFor("the first snapshot (SnapshotEvery)", func() bool {
		first, _ := c.m[1].node.st.FirstIndex()
		return first > 3
	})
	big := strings.Repeat("x", minRelativeSnapshotBytes+1)
	c.mustPropose(l, big)
	c.converge(append(small, big))
	last, _ := c.m[1].node.st.LastIndex()
	c.waitFor("a snapshot after an entry larger than the last snapshot", func() bool {
		first, _ := c.m[1].node.st.FirstIndex()
		return first > last
	})
	small2 := strings.Repeat("y", 100)
	c.mustPropose(l, small2)
	c.converge(append(small, big, small2))
	c.crash(1, vfs.CrashOptions{})
	if err := c.start(1, false); err != nil {
		t.Fatal(err)
	}
	c.converge(append(small, big, small2))
}
