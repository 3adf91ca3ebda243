package log

import (
	"fmt"
	"maps"
	"strconv"
	"testing"
)

// ParseOffsets accepts and refuses what the generic checkpoint parser with
// three fields and integer partition and offset does, and reads the same
// entries.
func TestParseOffsetsMatchesCheckpointParser(t *testing.T) {
	inputs := []string{
		"", "0\n", "0\n0\n", "0\n0", "1\n0\n", " 0 \n 1 \nt 0 5\n", "0\n1\nt 0 5", "0\n1\nt 0 5\r\n",
		"0\n1\nt\t0  5\n", "0\n2\nt 0 5\n", "0\n1\nt 0 5\nu 1 6\n", "0\n1\nt 0\n", "0\n1\nt 0 5 6\n",
		"0\n1\nt x 5\n", "0\n1\nt 0 y\n", "0\n1\nt 99999999999 5\n", "0\n-1\n", "0\nx\n", "0\n2\nt 0 5\n\n",
		"0\n2\nt 0 5\nt 0 7\n", "0\n1\nt -1 5\n", "0\n1\nt 3 -5\n", "0\n3\na 2 9\nb 0 1\na 0 4\n",
		"0\n1\n\n", "0\n2\nt 0 5\n\nu 0 1\n",
	}
	for _, in := range inputs {
		want := map[TopicPartition]int64{}
		entries, err := parseCheckpoint([]byte(in), 3)
		for _, e := range entries {
			p, err1 := strconv.ParseInt(e[1], 10, 32)
			off, err2 := strconv.ParseInt(e[2], 10, 64)
			if err1 != nil || err2 != nil {
				err = fmt.Errorf("bad entry")
				break
			}
			if p >= 0 {
				want[TopicPartition{e[0], int32(p)}] = off
			}
		}
		got, gotErr := ParseOffsets([]byte(in), false)
		if (err == nil) != (gotErr == nil) {
			t.Fatalf("%q: error %v, the checkpoint parser's %v", in, gotErr, err)
		}
		if err == nil && !maps.Equal(got.Map(), want) {
			t.Fatalf("%q: %v, want %v", in, got.Map(), want)
		}
	}
	if _, err := ParseOffsets([]byte("0\n1\nt 3 -5\n"), true); err == nil {
		t.Fatal("a negative offset is accepted with nonNegative")
	}
	if _, err := ParseOffsets([]byte("0\n1\nt -3 5\n"), true); err == nil {
		t.Fatal("a negative partition is accepted with nonNegative")
	}
}

// Offsets formats what it holds sorted by topic and partition, and reads
// it back (values over several chunks, a sparse partition, a
// value set twice).
func TestOffsetsRoundTrip(t *testing.T) {
	m := map[TopicPartition]int64{}
	o := NewOffsets()
	for i := range 3000 {
		tp := TopicPartition{fmt.Sprintf("t%d", i%7), int32(i / 7)}
		m[tp] = int64(i)
		o.Set(tp.Topic, tp.Partition, int64(i)+1)
		o.Set(tp.Topic, tp.Partition, int64(i))
	}
	m[TopicPartition{"t0", 1 << 20}] = 42
	o.Set("t0", 1<<20, 42)
	if o.Len() != len(m) {
		t.Fatalf("Len %d, want %d", o.Len(), len(m))
	}
	back, err := ParseOffsets(o.Format(), true)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(back.Map(), m) || !back.Equal(o) || !o.Equal(OffsetsOf(m)) {
		t.Fatal("offsets differ after a round trip")
	}
	if want := "0\n3001\nt0 0 0\nt0 1 7\n"; string(o.Format()[:len(want)]) != want {
		t.Fatalf("checkpoint text starts %q, want %q", o.Format()[:len(want)], want)
	}
	o.Set("t1", 0, -7)
	if back.Equal(o) {
		t.Fatal("Equal misses a changed value")
	}
	if v, ok := o.Get("t1", 0); !ok || v != -7 {
		t.Fatalf("Get after Set: %d %v", v, ok)
	}
	var none *Offsets
	if none.Len() != 0 || !none.Equal(NewOffsets()) || NewOffsets().Equal(o) {
		t.Fatal("a nil Offsets is not empty")
	}
	if _, ok := none.Get("t", 0); ok {
		t.Fatal("a nil Offsets has an entry")
	}
}
