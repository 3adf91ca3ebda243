package node

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestReplicaAbortedTxns(t *testing.T) {
	dir := t.TempDir()
	pdir := filepath.Join(dir, "t-0")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	entry := func(pid, first, last, lso int64) []byte {
		b := binary.BigEndian.AppendUint16(nil, 0)
		for _, v := range []int64{pid, first, last, lso} {
			b = binary.BigEndian.AppendUint64(b, uint64(v))
		}
		return b
	}
	seg0 := append(entry(7, 1, 4, 5), entry(8, 2, 6, 7)...)
	seg1 := append(entry(7, 10, 12, 13), 0, 0, 0) // a torn last entry
	for name, b := range map[string][]byte{"00000000000000000000.txnindex": seg0, "00000000000000000010.txnindex": seg1} {
		if err := os.WriteFile(filepath.Join(pdir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := ReplicaAbortedTxns(dir, "t", 0)
	if err != nil || !ok {
		t.Fatalf("ok %v err %v", ok, err)
	}
	if want := [][3]int64{{7, 1, 4}, {8, 2, 6}, {7, 10, 12}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	if _, ok, err := ReplicaAbortedTxns(dir, "t", 1); ok || err != nil {
		t.Fatalf("missing partition: ok %v err %v", ok, err)
	}
}
