package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
)

var allCodecs = []batch.Compression{batch.None, batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd}

// richBatch builds a batch with codec c that exercises every field a
// re-encode must keep: producer id/epoch/sequence, leader epoch, attribute
// bits, out-of-order and negative timestamp deltas, null and empty keys and
// values, headers with null values. attrs is OR-ed into the attributes.
func richBatch(t testing.TB, c batch.Compression, attrs int16) []byte {
	t.Helper()
	b := batch.NewBuilder()
	b.Compression = c
	b.Attributes = attrs
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = 7, 3, 11
	b.PartitionLeaderEpoch = 9
	b.BaseTimestamp = 1_700_000_000_000
	deltas := []int64{5, 0, -3, 40, 7, 7}
	for i, d := range deltas {
		r := batch.Record{TimestampDelta: d}
		switch i {
		case 0:
			r.Key, r.Value = []byte("key-0"), bytes.Repeat([]byte("value "), 50)
			r.Headers = []batch.RecordHeader{{Key: "h1", Value: []byte("x")}, {Key: "h2", Value: nil}}
		case 1:
			r.Key, r.Value = nil, []byte("null key")
		case 2:
			r.Key, r.Value = []byte("tomb"), nil
		case 3:
			r.Key, r.Value = []byte{}, []byte{}
			r.Headers = []batch.RecordHeader{{Key: "", Value: []byte{}}}
		default:
			r.Key, r.Value = []byte(fmt.Sprint("k", i)), bytes.Repeat([]byte{byte(i)}, 300)
		}
		b.Add(r)
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// storedBatches returns every stored batch of l as its own slice.
func storedBatches(t testing.TB, l *Log) [][]byte {
	t.Helper()
	raw, err := l.ReadBytes(0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for len(raw) > 0 {
		h, err := batch.ParseHeader(raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, raw[:h.TotalSize()])
		raw = raw[h.TotalSize():]
	}
	return out
}

// sameContent fails unless stored (as the log holds it, at offset base,
// leader epoch epoch) carries sent's records and header fields, with codec
// want.
func sameContent(t *testing.T, sent, stored []byte, want batch.Compression, base int64, epoch int32) {
	t.Helper()
	if err := batch.Validate(stored, batch.ValidateOptions{FromLog: true, CheckRecords: true}); err != nil {
		t.Fatalf("stored batch invalid: %v", err)
	}
	hs, _ := batch.ParseHeader(sent)
	hg, _ := batch.ParseHeader(stored)
	if hg.Compression() != want {
		t.Fatalf("stored codec %s, want %s", hg.Compression(), want)
	}
	if hg.BaseOffset != base || hg.PartitionLeaderEpoch != epoch {
		t.Fatalf("stored base offset %d epoch %d, want %d %d", hg.BaseOffset, hg.PartitionLeaderEpoch, base, epoch)
	}
	if hg.Attributes&^batch.AttrCompressionMask != hs.Attributes&^batch.AttrCompressionMask ||
		hg.LastOffsetDelta != hs.LastOffsetDelta || hg.BaseTimestamp != hs.BaseTimestamp ||
		hg.MaxTimestamp != hs.MaxTimestamp || hg.ProducerID != hs.ProducerID ||
		hg.ProducerEpoch != hs.ProducerEpoch || hg.BaseSequence != hs.BaseSequence ||
		hg.RecordCount != hs.RecordCount {
		t.Fatalf("header changed:\n sent   %+v\n stored %+v", hs, hg)
	}
	rs, err := batch.Records(sent, 0)
	if err != nil {
		t.Fatal(err)
	}
	rg, err := batch.Records(stored, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(rg) {
		t.Fatalf("%d records stored, %d sent", len(rg), len(rs))
	}
	for i := range rs {
		a, b := rs[i], rg[i]
		if a.Attributes != b.Attributes || a.OffsetDelta != b.OffsetDelta || a.TimestampDelta != b.TimestampDelta ||
			!sameBytes(a.Key, b.Key) || !sameBytes(a.Value, b.Value) || len(a.Headers) != len(b.Headers) {
			t.Fatalf("record %d differs:\n sent   %+v\n stored %+v", i, a, b)
		}
		for j := range a.Headers {
			if a.Headers[j].Key != b.Headers[j].Key || !sameBytes(a.Headers[j].Value, b.Headers[j].Value) {
				t.Fatalf("record %d header %d differs", i, j)
			}
		}
	}
}

// sameBytes compares including null-ness.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// sameExceptOffsetEpoch reports whether stored is sent byte for byte apart
// from the base offset and leader epoch, which Append always assigns.
func sameExceptOffsetEpoch(sent, stored []byte) bool {
	return len(sent) == len(stored) &&
		bytes.Equal(sent[batch.OffLength:batch.OffPartitionLeaderEpoch], stored[batch.OffLength:batch.OffPartitionLeaderEpoch]) &&
		bytes.Equal(sent[batch.OffMagic:], stored[batch.OffMagic:])
}

func compressionCfg(c batch.Compression, level int) Config {
	cfg := DefaultConfig()
	cfg.Compression, cfg.CompressionLevel = c, level
	return cfg
}

func TestRecompressEveryCodecPair(t *testing.T) {
	for _, src := range allCodecs {
		for _, dst := range allCodecs {
			t.Run(src.String()+"_to_"+dst.String(), func(t *testing.T) {
				e := newEnv(t, compressionCfg(dst, 0))
				l := e.log()
				sent := [][]byte{richBatch(t, src, 0), richBatch(t, src, batch.AttrTransactional)}
				for _, s := range sent {
					if _, err := l.Append(append([]byte(nil), s...), AppendOptions{LeaderEpoch: 4}); err != nil {
						t.Fatal(err)
					}
				}
				stored := storedBatches(t, l)
				if len(stored) != len(sent) {
					t.Fatalf("%d batches stored", len(stored))
				}
				for i := range sent {
					sameContent(t, sent[i], stored[i], dst, int64(6*i), 4)
					if src == dst && !sameExceptOffsetEpoch(sent[i], stored[i]) {
						t.Fatalf("batch already in the target codec was re-encoded")
					}
				}
				readAll(t, l, 0) // CRCs and dense offsets
			})
		}
	}
}

func TestRecompressProducerKeepsBytes(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	l := e.log()
	var sent [][]byte
	for _, c := range allCodecs {
		sent = append(sent, richBatch(t, c, 0))
	}
	// Several batches in one append, too.
	all := bytes.Join(sent, nil)
	mustAppend(t, l, all)
	stored := storedBatches(t, l)
	for i := range sent {
		if !sameExceptOffsetEpoch(sent[i], stored[i]) {
			t.Fatalf("%s batch changed with compression.type=producer", allCodecs[i])
		}
	}
}

func TestRecompressSameCodecOtherLevelKept(t *testing.T) {
	// Only the codec decides, as in Kafka: a zstd batch stays as produced on
	// a zstd topic whatever the levels.
	plain := richBatch(t, batch.None, 0)
	src, err := encodeRecords(plain[:batch.HeaderSize], batch.Zstd, 22, plain[batch.HeaderSize:])
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, compressionCfg(batch.Zstd, -5))
	l := e.log()
	mustAppend(t, l, src)
	if !sameExceptOffsetEpoch(src, storedBatches(t, l)[0]) {
		t.Fatal("zstd batch re-encoded on a zstd topic")
	}
}

func TestRecompressLevels(t *testing.T) {
	for _, tc := range []struct {
		c      batch.Compression
		levels []int
	}{
		{batch.Gzip, []int{0, -1, 1, 5, 9}},
		{batch.LZ4, []int{0, 1, 2, 8, 9, 10, 17}},
		{batch.Zstd, []int{0, -131072, -1, 1, 3, 5, 6, 9, 10, 22}},
	} {
		for _, lv := range tc.levels {
			t.Run(fmt.Sprintf("%s_%d", tc.c, lv), func(t *testing.T) {
				cfg := compressionCfg(tc.c, lv)
				if err := cfg.Validate(); err != nil {
					t.Fatalf("level refused: %v", err)
				}
				e := newEnv(t, cfg)
				l := e.log()
				sent := richBatch(t, batch.None, 0)
				mustAppend(t, l, sent)
				sameContent(t, sent, storedBatches(t, l)[0], tc.c, 0, 0)
			})
		}
	}
	for _, tc := range []struct {
		c  batch.Compression
		lv int
	}{
		{batch.Gzip, -2}, {batch.Gzip, 10}, {batch.LZ4, -1}, {batch.LZ4, 18},
		{batch.Zstd, 23}, {batch.Zstd, -131073},
	} {
		if err := compressionCfg(tc.c, tc.lv).Validate(); err == nil {
			t.Errorf("%s level %d accepted", tc.c, tc.lv)
		}
	}
	if err := compressionCfg(batch.Compression(5), 0).Validate(); err == nil {
		t.Error("codec 5 accepted")
	}
}

func TestRecompressLogAppendTime(t *testing.T) {
	cfg := compressionCfg(batch.LZ4, 0)
	cfg.MessageTimestampType = batch.LogAppendTime
	e := newEnv(t, cfg)
	l := e.log()
	sent := richBatch(t, batch.Gzip, 0)
	r := mustAppend(t, l, sent)
	now := e.clock.Now().UnixMilli()
	if r.LogAppendTime != now {
		t.Fatalf("LogAppendTime %d, want %d", r.LogAppendTime, now)
	}
	stored := storedBatches(t, l)[0]
	h, _ := batch.ParseHeader(stored)
	hs, _ := batch.ParseHeader(sent)
	if h.Compression() != batch.LZ4 || h.TimestampType() != batch.LogAppendTime || h.MaxTimestamp != now ||
		h.BaseTimestamp != hs.BaseTimestamp || batch.ComputeCRC(stored) != h.CRC {
		t.Fatalf("stored header %+v", h)
	}
	// Record timestamp deltas are kept, as in Kafka.
	rs, _ := batch.Records(sent, 0)
	rg, _ := batch.Records(stored, 0)
	for i := range rs {
		if rs[i].TimestampDelta != rg[i].TimestampDelta {
			t.Fatalf("record %d delta %d, sent %d", i, rg[i].TimestampDelta, rs[i].TimestampDelta)
		}
	}
}

// gzipWithBadPayload returns a gzip batch whose compressed bytes are damaged
// but whose CRC matches them, so only decompression can tell.
func gzipWithBadPayload(t testing.TB) []byte {
	b := richBatch(t, batch.Gzip, 0)
	for i := batch.HeaderSize + 12; i < len(b)-8; i += 7 {
		b[i] ^= 0x5a
	}
	batch.UpdateCRC(b)
	return b
}

func TestRecompressRejectsBadInput(t *testing.T) {
	cfg := compressionCfg(batch.Zstd, 0)
	cfg.MaxMessageBytes = 4000
	e := newEnv(t, cfg)
	l := e.log()

	badCRC := richBatch(t, batch.Gzip, 0)
	badCRC[len(badCRC)-1] ^= 1

	// A gzip batch that decompresses beyond maxDecompressed (1 MiB floor).
	bomb := batch.NewBuilder()
	bomb.Compression = batch.Gzip
	bomb.AddAt(0, []byte("k"), make([]byte, 2<<20))
	bombRaw, _ := bomb.Build()

	// Compresses well as gzip, too large once stored uncompressed.
	large := batch.NewBuilder()
	large.Compression = batch.Gzip
	for i := 0; i < 10; i++ {
		large.AddAt(0, []byte("k"), make([]byte, 1000))
	}
	largeRaw, _ := large.Build()
	cfgNone := compressionCfg(batch.None, 0)
	cfgNone.MaxMessageBytes = 4000
	lNone := newEnv(t, cfgNone).log()

	// Uncompressed input with a malformed record, to a compressed topic.
	badRecord := richBatch(t, batch.None, 0)
	badRecord[batch.HeaderSize] = 0x7f // first record's length varint: 63 bytes
	batch.UpdateCRC(badRecord)

	for _, tc := range []struct {
		name string
		l    *Log
		recs []byte
		code int16
	}{
		{"bad compressed payload", l, gzipWithBadPayload(t), CodeCorruptMessage},
		{"bad crc", l, badCRC, CodeCorruptMessage},
		{"decompression bomb", l, bombRaw, CodeMessageTooLarge},
		{"too large once decompressed", lNone, largeRaw, CodeMessageTooLarge},
		{"bad record", l, badRecord, CodeInvalidRecord},
	} {
		_, err := tc.l.Append(append([]byte(nil), tc.recs...), AppendOptions{})
		var ae *AppendError
		if !errors.As(err, &ae) || ae.Code != tc.code {
			t.Errorf("%s: got %v, want code %d", tc.name, err, tc.code)
		}
	}
	if l.LogEndOffset() != 0 || l.Size() != 0 || lNone.LogEndOffset() != 0 {
		t.Fatal("rejected appends left data")
	}
	if len(largeRaw) > 4000 {
		t.Fatalf("test input too large to reach the re-encode: %d bytes", len(largeRaw))
	}
}

func TestRecompressCompactedNeedsKeys(t *testing.T) {
	cfg := compressionCfg(batch.Snappy, 0)
	cfg.Compact = true
	l := newEnv(t, cfg).log()
	_, err := l.Append(richBatch(t, batch.Zstd, 0), AppendOptions{}) // record 1 has a null key
	var ae *AppendError
	if !errors.As(err, &ae) || ae.Code != CodeInvalidRecord || len(ae.RecordErrors) != 1 || ae.RecordErrors[0].Index != 1 {
		t.Fatalf("got %v", err)
	}
}

func TestRecompressKeepsUncompressedControlBatch(t *testing.T) {
	l := newEnv(t, compressionCfg(batch.Zstd, 0)).log()
	b := batch.NewBuilder()
	b.Attributes = batch.AttrControl | batch.AttrTransactional
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = 5, 0, 0
	key := make([]byte, 4)
	binary.BigEndian.PutUint16(key[2:], 1) // COMMIT
	b.AddAt(0, key, []byte{0, 0, 0, 0, 0, 0})
	ctl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(append([]byte(nil), ctl...), AppendOptions{AllowControl: true}); err != nil {
		t.Fatal(err)
	}
	if !sameExceptOffsetEpoch(ctl, storedBatches(t, l)[0]) {
		t.Fatal("uncompressed control batch was re-encoded")
	}
}

// seqGuard is a minimal idempotence guard: it remembers the offsets of each
// (producer id, epoch, base sequence) appended.
type seqGuard struct {
	seen map[[3]int64][2]int64
}

func (g *seqGuard) key(h batch.Header) [3]int64 {
	return [3]int64{h.ProducerID, int64(h.ProducerEpoch), int64(h.BaseSequence)}
}

func (g *seqGuard) Check(h batch.Header) (bool, int64, int64, error) {
	if o, ok := g.seen[g.key(h)]; ok {
		return true, o[0], o[1], nil
	}
	return false, 0, 0, nil
}

func (g *seqGuard) Appended(h batch.Header) {
	g.seen[g.key(h)] = [2]int64{h.BaseOffset, h.LastOffset()}
}

func TestRecompressedRetryIsDuplicate(t *testing.T) {
	l := newEnv(t, compressionCfg(batch.Zstd, 0)).log()
	l.SetProducerGuard(&seqGuard{seen: map[[3]int64][2]int64{}})
	mustAppend(t, l, mkBatch(t, 2, 10, 1)) // offsets 0-1, no producer
	sent := richBatch(t, batch.Gzip, 0)
	first := mustAppend(t, l, sent)
	if first.Duplicate || first.BaseOffset != 2 {
		t.Fatalf("first append %+v", first)
	}
	size := l.Size()
	retry := mustAppend(t, l, sent)
	if !retry.Duplicate || retry.BaseOffset != first.BaseOffset || retry.LastOffset != first.LastOffset {
		t.Fatalf("retry %+v, first %+v", retry, first)
	}
	if l.Size() != size || l.LogEndOffset() != first.LastOffset+1 {
		t.Fatal("retry stored data")
	}
	stored := storedBatches(t, l)
	if len(stored) != 2 {
		t.Fatalf("%d batches stored", len(stored))
	}
	sameContent(t, sent, stored[1], batch.Zstd, 2, 0)
}

func TestRecompressMultiBatchAppend(t *testing.T) {
	// Mixed batches in one append: some kept, some re-encoded, offsets
	// dense across them.
	l := newEnv(t, compressionCfg(batch.Gzip, 0)).log()
	sent := [][]byte{richBatch(t, batch.Gzip, 0), richBatch(t, batch.None, 0), richBatch(t, batch.Gzip, 0), richBatch(t, batch.Zstd, 0)}
	r := mustAppend(t, l, bytes.Join(sent, nil))
	if r.BaseOffset != 0 || r.LastOffset != 23 {
		t.Fatalf("result %+v", r)
	}
	stored := storedBatches(t, l)
	for i := range sent {
		sameContent(t, sent[i], stored[i], batch.Gzip, int64(6*i), 0)
	}
	if !sameExceptOffsetEpoch(sent[0], stored[0]) || !sameExceptOffsetEpoch(sent[2], stored[2]) {
		t.Fatal("gzip batches re-encoded on a gzip topic")
	}
	readAll(t, l, 0)
}

func TestProducerAppendAllocations(t *testing.T) {
	// compression.type=producer and a batch already in the topic's codec
	// take the in-place path: no more allocations than with no codec
	// configured at all.
	measure := func(cfg Config, raw []byte) float64 {
		l := newEnv(t, cfg).log()
		buf := make([]byte, len(raw))
		return testing.AllocsPerRun(50, func() {
			copy(buf, raw)
			if _, err := l.Append(buf, AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
	gz := richBatch(t, batch.Gzip, 0)
	base := measure(DefaultConfig(), gz)
	if same := measure(compressionCfg(batch.Gzip, 0), gz); same > base {
		t.Fatalf("same-codec append allocates %.1f, producer %.1f", same, base)
	}
	if re := measure(compressionCfg(batch.Zstd, 0), gz); re <= base {
		t.Fatalf("re-encoding append allocates %.1f, producer %.1f: measurement broken", re, base)
	}
}

// FuzzRecompress wraps arbitrary bytes as the record section of a batch
// with a valid header and CRC (so the fuzzer reaches the codecs and the
// record walk) and re-encodes it: no panic, and whatever is accepted
// re-encodes to a valid batch with the same records.
func FuzzRecompress(f *testing.F) {
	for _, c := range allCodecs {
		b := richBatch(f, c, 0)
		f.Add(b[batch.HeaderSize:], byte(c), byte(batch.Zstd), int32(6))
		f.Add(b[batch.HeaderSize:], byte(c), byte(batch.None), int32(6))
	}
	f.Fuzz(func(t *testing.T, payload []byte, src, dst byte, count int32) {
		if len(payload) > 1<<16 {
			return
		}
		b := richBatch(t, batch.None, 0)[:batch.HeaderSize]
		b = append(b, payload...)
		binary.BigEndian.PutUint32(b[batch.OffLength:], uint32(len(b)-12))
		binary.BigEndian.PutUint16(b[batch.OffAttributes:], uint16(src&7))
		binary.BigEndian.PutUint32(b[batch.OffRecordCount:], uint32(count))
		binary.BigEndian.PutUint32(b[batch.OffLastOffsetDelta:], uint32(count-1))
		batch.UpdateCRC(b)
		target := batch.Compression(dst % 5)
		if !needsRecompress(b, target) {
			return
		}
		vopts := batch.ValidateOptions{MaxDecompressed: 1 << 20}
		out, _, err := recompress(b, target, 0, vopts)
		if err != nil {
			var be *batch.Error
			if !errors.As(err, &be) {
				t.Fatalf("error without a Kafka code: %v", err)
			}
			return
		}
		if err := batch.Validate(out, batch.ValidateOptions{CheckRecords: true}); err != nil {
			t.Fatalf("re-encoded batch invalid: %v", err)
		}
		rs, err1 := batch.Records(b, 1<<20)
		rg, err2 := batch.Records(out, 1<<20)
		if err1 != nil || err2 != nil || len(rs) != len(rg) {
			t.Fatalf("records: %v %v %d/%d", err1, err2, len(rs), len(rg))
		}
		for i := range rs {
			if !sameBytes(rs[i].Key, rg[i].Key) || !sameBytes(rs[i].Value, rg[i].Value) || rs[i].TimestampDelta != rg[i].TimestampDelta {
				t.Fatalf("record %d changed", i)
			}
		}
	})
}
