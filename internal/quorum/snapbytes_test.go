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
