package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
)

func TestAppendReadRoundTrip(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	l := e.log()
	var sent [][]byte
	for i := 0; i < 20; i++ {
		b := mkBatch(t, 1+i%5, 100, 1000+int64(i))
		sent = append(sent, b)
		r, err := l.Append(append([]byte(nil), b...), AppendOptions{LeaderEpoch: 3})
		if err != nil {
			t.Fatal(err)
		}
		if r.LogAppendTime != -1 || r.Duplicate {
			t.Fatalf("unexpected result %+v", r)
		}
		if r.LastOffset-r.BaseOffset+1 != int64(1+i%5) {
			t.Fatalf("offset range %+v for %d records", r, 1+i%5)
		}
	}
	hs := readAll(t, l, 0)
	if len(hs) != len(sent) {
		t.Fatalf("read %d batches, sent %d", len(hs), len(sent))
	}
	got, err := l.ReadBytes(0, math.MaxInt32)
	if err != nil {
		t.Fatal(err)
	}
	// The stored bytes are the sent bytes except baseOffset and leader epoch.
	for i, b := range sent {
		h := hs[i]
		stored := got[:h.TotalSize()]
		got = got[h.TotalSize():]
		if h.PartitionLeaderEpoch != 3 {
			t.Fatalf("leader epoch %d", h.PartitionLeaderEpoch)
		}
		if !bytes.Equal(stored[batch.OffMagic:], b[batch.OffMagic:]) || !bytes.Equal(stored[batch.OffLength:batch.OffPartitionLeaderEpoch], b[batch.OffLength:batch.OffPartitionLeaderEpoch]) {
			t.Fatalf("batch %d bytes changed beyond the offset/epoch fields", i)
		}
	}
	if l.HighWatermark() != l.LogEndOffset() || l.LogStartOffset() != 0 {
		t.Fatalf("hw %d leo %d start %d", l.HighWatermark(), l.LogEndOffset(), l.LogStartOffset())
	}
}

func TestReadSemantics(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	l := e.log()
	for i := 0; i < 10; i++ {
		mustAppend(t, l, mkBatch(t, 4, 200, 1)) // offsets 4i..4i+3
	}
	// Offset inside a batch: the batch containing it comes back.
	r, err := l.Read(6, 1<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Bytes()
	if h, _ := batch.ParseHeader(b); h.BaseOffset != 4 {
		t.Fatalf("read from 6 started at %d", h.BaseOffset)
	}
	// Budget smaller than a batch: nothing, unless minOneBatch.
	if r, _ := l.Read(0, 10, false); r.Size != 0 {
		t.Fatalf("got %d bytes with budget 10", r.Size)
	}
	r, _ = l.Read(0, 10, true)
	b, _ = r.Bytes()
	if h, _ := batch.ParseHeader(b); h.TotalSize() != len(b) {
		t.Fatalf("minOneBatch returned %d bytes, batch is %d", len(b), h.TotalSize())
	}
	// Budget of 2.5 batches: 2 whole batches.
	one := int(r.Size)
	r, _ = l.Read(0, one*5/2, false)
	if r.Size != int64(2*one) {
		t.Fatalf("got %d bytes, want %d", r.Size, 2*one)
	}
	// At LEO: empty; past it: out of range.
	if r, err := l.Read(40, 100, true); err != nil || r.Size != 0 {
		t.Fatalf("read at LEO: %v %d", err, r.Size)
	}
	if _, err := l.Read(41, 100, true); !errors.Is(err, ErrOffsetOutOfRange) || KafkaCode(err) != CodeOffsetOutOfRange {
		t.Fatalf("read past LEO: %v", err)
	}
	if _, err := l.Read(-1, 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
}

func TestAppendValidation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxMessageBytes = 2000
	e := newEnv(t, cfg)
	l := e.log()
	good := mkBatch(t, 2, 10, 5)

	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-1] ^= 1
	v1 := append([]byte(nil), good...)
	v1[batch.OffMagic] = 1
	truncated := good[:len(good)-3]
	big := mkBatch(t, 3, 1000, 5)

	for _, tc := range []struct {
		name string
		recs []byte
		code int16
	}{
		{"crc", badCRC, CodeCorruptMessage},
		{"magic1", v1, CodeUnsupportedForMessageFormat},
		{"truncated", truncated, CodeCorruptMessage},
		{"too large", big, CodeMessageTooLarge},
		{"empty", nil, CodeInvalidRecord},
		{"second batch bad", append(append([]byte(nil), good...), badCRC...), CodeCorruptMessage},
	} {
		_, err := l.Append(append([]byte(nil), tc.recs...), AppendOptions{})
		var ae *AppendError
		if !errors.As(err, &ae) || ae.Code != tc.code || KafkaCode(err) != tc.code {
			t.Errorf("%s: got %v, want code %d", tc.name, err, tc.code)
		}
	}
	if l.LogEndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("rejected appends left data: leo %d size %d", l.LogEndOffset(), l.Size())
	}
}

func TestCompactRequiresKeys(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Compact = true
	e := newEnv(t, cfg)
	l := e.log()
	b := batch.NewBuilder()
	b.BaseTimestamp = 1
	b.AddAt(1, []byte("k"), []byte("v"))
	b.AddAt(1, nil, []byte("v"))
	raw, _ := b.Build()
	_, err := l.Append(raw, AppendOptions{})
	var ae *AppendError
	if !errors.As(err, &ae) || ae.Code != CodeInvalidRecord || len(ae.RecordErrors) != 1 || ae.RecordErrors[0].Index != 1 {
		t.Fatalf("got %v", err)
	}
	mustAppend(t, l, mkBatch(t, 3, 5, 1))
}

func TestTimestampWindow(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TimestampBeforeMaxMs = 1000
	cfg.TimestampAfterMaxMs = 1000
	e := newEnv(t, cfg)
	l := e.log()
	now := e.clock.Now().UnixMilli()
	if _, err := l.Append(mkBatch(t, 1, 5, now-5000), AppendOptions{}); KafkaCode(err) != CodeInvalidTimestamp {
		t.Fatalf("old timestamp: %v", err)
	}
	if _, err := l.Append(mkBatch(t, 1, 5, now+5000), AppendOptions{}); KafkaCode(err) != CodeInvalidTimestamp {
		t.Fatalf("future timestamp: %v", err)
	}
	mustAppend(t, l, mkBatch(t, 1, 5, now+500))
}

func TestLogAppendTime(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MessageTimestampType = batch.LogAppendTime
	e := newEnv(t, cfg)
	l := e.log()
	r := mustAppend(t, l, mkBatch(t, 3, 10, 42))
	now := e.clock.Now().UnixMilli()
	if r.LogAppendTime != now {
		t.Fatalf("LogAppendTime %d, want %d", r.LogAppendTime, now)
	}
	b, _ := l.ReadBytes(0, 1<<20)
	h, _ := batch.ParseHeader(b)
	if h.TimestampType() != batch.LogAppendTime || h.MaxTimestamp != now || batch.ComputeCRC(b) != h.CRC {
		t.Fatalf("header %+v", h)
	}
	if err := batch.Validate(b, batch.ValidateOptions{FromLog: true}); err != nil {
		t.Fatal(err)
	}
}

func TestOffsetIndexMatchesKafka(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 1000
	e := newEnv(t, cfg)
	l := e.log()
	for i := 0; i < 200; i++ {
		mustAppend(t, l, mkBatch(t, 2, 300, int64(i))) // ~700 bytes per batch
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	s := l.active()
	idx, _ := e.fs.ReadFile(s.prefix + indexSuffix)
	logData, _ := e.fs.ReadFile(s.prefix + logSuffix)
	if len(idx) == 0 || len(idx)%8 != 0 {
		t.Fatalf("index size %d", len(idx))
	}
	// Every entry: relative offset = last offset of the batch at position.
	for i := 0; i < len(idx); i += 8 {
		rel, pos := be32(idx[i:]), be32(idx[i+4:])
		h, err := batch.ParseHeader(logData[pos:])
		if err != nil {
			t.Fatal(err)
		}
		if h.LastOffset() != s.base+int64(rel) {
			t.Fatalf("entry %d: offset %d, batch at %d ends at %d", i/8, rel, pos, h.LastOffset())
		}
	}
	tidx, _ := e.fs.ReadFile(s.prefix + timeIndexSuffix)
	if len(tidx) == 0 || len(tidx)%12 != 0 {
		t.Fatalf("timeindex size %d", len(tidx))
	}
	prev := int64(-1)
	for i := 0; i < len(tidx); i += 12 {
		ts := int64(binary.BigEndian.Uint64(tidx[i:]))
		if ts <= prev {
			t.Fatalf("timeindex not increasing")
		}
		prev = ts
	}
	// Index-based lookups work for every offset.
	for off := int64(0); off < l.LogEndOffset(); off += 7 {
		b, err := l.ReadBytes(off, 1)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := batch.ParseHeader(b)
		if h.BaseOffset > off || h.LastOffset() < off {
			t.Fatalf("read %d got batch %d..%d", off, h.BaseOffset, h.LastOffset())
		}
	}
}
