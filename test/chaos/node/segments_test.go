package node

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func rawBatch(base int64, lastDelta, epoch int32, crc int32) []byte {
	b := kmsg.RecordBatch{FirstOffset: base, PartitionLeaderEpoch: epoch, Magic: 2, CRC: crc,
		LastOffsetDelta: lastDelta, NumRecords: lastDelta + 1, Records: make([]byte, 7)}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	return b.AppendTo(nil)
}

// Batch headers are read from every segment in base-offset order; a torn
// tail and files other than segments are ignored; a partition the node has
// no directory for is reported as not held.
func TestReplicaBatches(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "chaos-append-2")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	seg0 := append(rawBatch(0, 2, 1, 111), rawBatch(3, 0, 1, 222)...)
	seg1 := append(rawBatch(4, 1, 2, -5), rawBatch(6, 0, 2, 9)[:30]...) // torn tail
	for name, b := range map[string][]byte{
		"00000000000000000000.log":      seg0,
		"00000000000000000004.log":      seg1,
		"00000000000000000004.index":    {1, 2, 3},
		"00000000000000000000.snapshot": {4},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := ReplicaBatches(data, "chaos-append", 2)
	if err != nil || !ok {
		t.Fatalf("ReplicaBatches: %v %v", ok, err)
	}
	want := [][4]int64{{0, 2, 1, 111}, {3, 3, 1, 222}, {4, 5, 2, int64(uint32(0xfffffffb))}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("batch %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if _, ok, err := ReplicaBatches(data, "chaos-append", 3); ok || err != nil {
		t.Fatalf("absent partition: ok %v, err %v", ok, err)
	}
}
