package node

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testRecord(delta int32, key string, value []byte) []byte {
	r := kmsg.Record{OffsetDelta: delta, Key: []byte(key), Value: value}
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	return r.AppendTo(nil)
}

func testBatch(base int64, attrs int16, records ...[]byte) []byte {
	var raw []byte
	for _, r := range records {
		raw = append(raw, r...)
	}
	if attrs&7 == 2 {
		raw = s2.EncodeSnappy(nil, raw)
	}
	b := kmsg.RecordBatch{FirstOffset: base, Magic: 2, Attributes: attrs, LastOffsetDelta: int32(len(records) - 1),
		NumRecords: int32(len(records)), Records: raw, ProducerID: -1}
	b.Length = int32(49 + len(raw))
	return b.AppendTo(nil)
}

// TestReplicaLatest: the latest record of each key below the bound, across
// segments, uncompressed and snappy batches, tombstones kept as nil
// values, control batches and a torn tail ignored.
func TestReplicaLatest(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "chaos-compact-0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	seg0 := append(testBatch(0, 0, testRecord(0, "k1", []byte("1")), testRecord(1, "k2", []byte("2"))),
		testBatch(2, 2, testRecord(0, "k2", nil), testRecord(1, "k3", []byte("3")))...)
	seg0 = append(seg0, testBatch(4, 0x20, testRecord(0, "\x00\x00\x00\x01", []byte{0, 0, 0, 0, 0, 0}))...)
	seg1 := append(testBatch(5, 2, testRecord(0, "k1", []byte("5")), testRecord(2, "k3", []byte("7"))), 1, 2, 3)
	if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), seg0, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "00000000000000000005.log"), seg1, 0o644); err != nil {
		t.Fatal(err)
	}
	got, ok, err := ReplicaLatest(data, "chaos-compact", 0, 7)
	if err != nil || !ok {
		t.Fatalf("ReplicaLatest: %v %v", ok, err)
	}
	want := map[string]string{"k1": "5@5", "k2": "<tombstone>@2", "k3": "3@3"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, w := range want {
		kv := got[k]
		v := string(kv.Value)
		if kv.Value == nil {
			v = "<tombstone>"
		}
		if s := v + "@" + strconv.FormatInt(kv.Offset, 10); s != w {
			t.Errorf("%s: %s, want %s", k, s, w)
		}
	}
	if all, _, _ := ReplicaLatest(data, "chaos-compact", 0, 100); string(all["k3"].Value) != "7" || all["k3"].Offset != 7 {
		t.Errorf("without a bound: k3 %+v, want 7 at offset 7", all["k3"])
	}
	if _, ok, err := ReplicaLatest(data, "chaos-compact", 1, 7); ok || err != nil {
		t.Errorf("partition 1: ok %v err %v, want no copy", ok, err)
	}
}
