package compact

import (
	"fmt"
	"testing"
)

func TestOffsetMapPutGet(t *testing.T) {
	m := newOffsetMap(24*1000, 0.9)
	if m.maxEntries != 900 {
		t.Fatalf("maxEntries %d, want 900", m.maxEntries)
	}
	for i := 0; i < 900; i++ {
		if !m.put([]byte(fmt.Sprintf("key-%d", i)), int64(i)) {
			t.Fatalf("put %d failed below capacity", i)
		}
	}
	if m.put([]byte("one-too-many"), 5000) {
		t.Fatal("put of a new key into a full map succeeded")
	}
	if got := m.get([]byte("one-too-many")); got != -1 {
		t.Fatalf("failed put left an entry: %d", got)
	}
	// Updating an existing key works even when full.
	if !m.put([]byte("key-7"), 7777) {
		t.Fatal("update of an existing key failed in a full map")
	}
	for i := 0; i < 900; i++ {
		want := int64(i)
		if i == 7 {
			want = 7777
		}
		if got := m.get([]byte(fmt.Sprintf("key-%d", i))); got != want {
			t.Fatalf("get key-%d = %d, want %d", i, got, want)
		}
	}
	if got := m.get([]byte("absent")); got != -1 {
		t.Fatalf("get absent = %d", got)
	}
	// Offset 0 and the empty key are ordinary values.
	m.reset()
	if !m.put([]byte{}, 0) || m.get([]byte{}) != 0 || m.get(nil) != 0 {
		t.Fatal("empty key at offset 0 not stored")
	}
	if m.entries != 1 || m.latest != -1 {
		t.Fatalf("after reset+put: entries %d latest %d", m.entries, m.latest)
	}
}

func TestOffsetMapTinyNeverLoops(t *testing.T) {
	m := newOffsetMap(1, 0.9) // one slot, no entry fits
	if m.put([]byte("a"), 1) {
		t.Fatal("put into a zero-capacity map succeeded")
	}
	if m.get([]byte("a")) != -1 {
		t.Fatal("get from an empty map found something")
	}
	m = newOffsetMap(48, 1) // two slots, load factor 1 → one entry, one empty slot
	if !m.put([]byte("a"), 1) || m.put([]byte("b"), 2) {
		t.Fatal("two-slot map must take exactly one key")
	}
}

func TestOffsetMapMemoryIsFixed(t *testing.T) {
	m := newOffsetMap(1<<20, 0.9)
	before := m.memBytes()
	for i := 0; m.put([]byte(fmt.Sprintf("k%d", i)), int64(i)); i++ {
	}
	if m.memBytes() != before || before > 1<<20 {
		t.Fatalf("map memory %d → %d, budget %d", before, m.memBytes(), 1<<20)
	}
}
