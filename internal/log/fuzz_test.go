package log

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// FuzzRecover feeds arbitrary bytes as a segment file (plus an index file
// derived from the same bytes) to recovery after an unclean shutdown:
// recovery must not panic, must never serve a batch with a bad CRC, and
// the log must accept appends afterwards. Seeds in testdata/fuzz.
func FuzzRecover(f *testing.F) {
	f.Add(validSegment(f, 3), []byte{})
	f.Add(validSegment(f, 2)[:150], []byte{0, 0, 0, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, seg, idx []byte) {
		if len(seg) > 1<<20 || len(idx) > 1<<16 {
			return
		}
		fs := vfs.NewMemFS()
		dir := "/data/t-0"
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_ = fs.WriteFile(filepath.Join(dir, segmentName(0)+logSuffix), seg)
		_ = fs.WriteFile(filepath.Join(dir, segmentName(0)+indexSuffix), idx)
		_ = fs.WriteFile(filepath.Join(dir, segmentName(0)+timeIndexSuffix), idx)
		m, err := OpenManager(fs, "/data", ManagerOptions{Logger: quietLogger(), HousekeepingInterval: -1})
		if err != nil {
			t.Fatalf("recovery failed: %v", err)
		}
		l := m.Get("t", 0)
		readAllMode(t, l, l.LogStartOffset(), false)
		if _, err := l.Append(mkBatch(t, 1, 3, 1), AppendOptions{}); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		readAllMode(t, l, l.LogStartOffset(), false)
		if _, _, ok := l.OffsetForTimestamp(0); !ok {
			t.Fatal("timestamp lookup found nothing")
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// validSegment returns the bytes of a segment holding n small batches.
func validSegment(tb testing.TB, n int) []byte {
	var out []byte
	for i := 0; i < n; i++ {
		b := mkBatch(tb, 1+i, 20, int64(i))
		// offsets as the log would assign them
		base := int64(0)
		for j := 0; j < i; j++ {
			base += int64(j + 1)
		}
		putBase(b, base)
		out = append(out, b...)
	}
	return out
}

func putBase(b []byte, off int64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(off >> (56 - 8*i))
	}
}

// FuzzAppendAsFollower feeds arbitrary bytes to a follower's append on a
// log holding a batch: it must not panic; refused input changes nothing;
// accepted input is stored verbatim, continues the log, and survives a
// crash after a flush.
func FuzzAppendAsFollower(f *testing.F) {
	seg := validSegment(f, 4) // offsets 0..9
	first := mkBatch(f, 1, 20, 0)
	f.Add(seg[len(first):])
	f.Add(seg[len(first) : len(first)+30])
	f.Add(seg)
	f.Fuzz(func(t *testing.T, records []byte) {
		if len(records) > 1<<20 {
			return
		}
		e := newEnv(t, DefaultConfig())
		l := e.log()
		if _, err := l.AppendAsFollower(seg[:len(first)], FollowerAppendOptions{}); err != nil {
			t.Fatal(err)
		}
		before := stateOf(t, e, l)
		in := append([]byte(nil), records...)
		r, err := l.AppendAsFollower(in, FollowerAppendOptions{})
		if !bytes.Equal(in, records) {
			t.Fatal("input modified")
		}
		if err != nil {
			if KafkaCode(err) == CodeUnknownServerError {
				t.Fatalf("error without a Kafka code: %v", err)
			}
			unchanged(t, "refused", before, e, l)
			return
		}
		if r.FirstOffset != before.leo || l.LogEndOffset() != r.LastOffset+1 {
			t.Fatalf("accepted at [%d, %d], end before %d, after %d", r.FirstOffset, r.LastOffset, before.leo, l.LogEndOffset())
		}
		want := append(slices.Clone(seg[:len(first)]), records...)
		if got := allBytes(t, l); !bytes.Equal(got, want) {
			t.Fatal("stored bytes differ from the input")
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		e.crash(vfs.CrashOptions{})
		if got := allBytes(t, e.log()); !bytes.Equal(got, want) {
			t.Fatal("recovery changed an accepted follower append")
		}
	})
}
