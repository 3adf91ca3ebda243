package batch

import (
	"bytes"
	"errors"
	"testing"
)

// fuzzMax keeps decompression in the fuzzers small and fast.
const fuzzMax = 1 << 20

// seedBatches returns varied valid batches (and a few invalid inputs) for
// the fuzzers; testdata/fuzz holds more, derived from these.
func seedBatches(t testing.TB) [][]byte {
	var out [][]byte
	for _, c := range []Compression{None, Gzip, Snappy, LZ4, Zstd} {
		out = append(out, buildRecords(t, c, 1_700_000_000_000, sampleRecords(6)))
	}
	out = append(out, NewBatch(0, 0, KV{Key: []byte("k"), Value: []byte("v")}))

	ctl := NewBuilder()
	ctl.Attributes = 0x30
	ctl.ProducerID, ctl.ProducerEpoch, ctl.BaseSequence = 1, 0, 0
	ctl.Add(Record{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}})
	b, _ := ctl.Build()
	out = append(out, b)

	empty := NewBuilder()
	empty.LastOffsetDelta = 3
	b, _ = empty.Build()
	out = append(out, b)

	gaps := NewBuilder()
	gaps.ExplicitOffsetDeltas = true
	gaps.Add(Record{OffsetDelta: 1, Key: []byte("a")})
	gaps.Add(Record{OffsetDelta: 4, Key: []byte("b"), Headers: []RecordHeader{{Key: "h", Value: nil}}})
	b, _ = gaps.Build()
	out = append(out, b)

	lat := buildRecords(t, None, 5, sampleRecords(2))
	SetLogAppendTime(lat, 1234)
	out = append(out, lat)

	v1 := make([]byte, 34)
	v1[11], v1[16] = 22, 1
	out = append(out, v1, []byte{}, bytes.Repeat([]byte{0xff}, 70))
	return out
}

func FuzzValidate(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkValidate(t, data)
		if len(data) >= HeaderSize {
			// Most mutations break the CRC; also try with it repaired so the
			// fuzzer reaches the record checks.
			x := append([]byte(nil), data...)
			UpdateCRC(x)
			checkValidate(t, x)
		}
	})
}

func checkValidate(t *testing.T, data []byte) {
	for _, opts := range []ValidateOptions{
		{MaxDecompressed: fuzzMax},
		{MaxDecompressed: fuzzMax, CheckRecords: true, RequireKeys: true},
		{MaxDecompressed: fuzzMax, CheckRecords: true, FromLog: true},
	} {
		s, err := Inspect(data, opts)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code.KafkaCode() < 0 {
				t.Fatalf("Validate returned %v (%T)", err, err)
			}
			continue
		}
		h, err := ParseHeader(data)
		if err != nil || h != s.Header || h.TotalSize() != len(data) {
			t.Fatalf("accepted batch with bad header: %v", err)
		}
		if !s.RecordsChecked {
			continue
		}
		recs, err := Records(data, fuzzMax)
		if err != nil {
			t.Fatalf("Validate accepted but Records failed: %v", err)
		}
		if len(recs) != int(h.RecordCount) {
			t.Fatalf("%d records, header says %d", len(recs), h.RecordCount)
		}
		// Re-encoding with the Builder gives the same records and header.
		bd := NewBuilder()
		bd.BaseOffset, bd.PartitionLeaderEpoch, bd.Attributes = h.BaseOffset, h.PartitionLeaderEpoch, h.Attributes
		bd.Compression = h.Compression()
		bd.ProducerID, bd.ProducerEpoch, bd.BaseSequence = h.ProducerID, h.ProducerEpoch, h.BaseSequence
		bd.BaseTimestamp, bd.MaxTimestamp, bd.LastOffsetDelta = h.BaseTimestamp, h.MaxTimestamp, h.LastOffsetDelta
		bd.ExplicitOffsetDeltas = true
		for _, r := range recs {
			bd.Add(r)
		}
		out, err := bd.Build()
		if err != nil {
			t.Fatalf("rebuilding accepted batch: %v", err)
		}
		if err := Validate(out, opts); err != nil {
			t.Fatalf("rebuilt batch rejected: %v", err)
		}
		h2, _ := ParseHeader(out)
		h2.CRC, h2.Length = h.CRC, h.Length
		h2.MaxTimestamp = h.MaxTimestamp // the header's MaxTimestamp is not tied to the records
		if h2 != h {
			t.Fatalf("rebuilt header %+v\nwant %+v", h2, h)
		}
		recs2, err := Records(out, fuzzMax)
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, recs2, recs)
		// The builder derives MaxTimestamp from the records; align the input's
		// (tolerated) header value before comparing encodings.
		want := append([]byte(nil), data...)
		copy(want[OffMaxTimestamp:OffMaxTimestamp+8], out[OffMaxTimestamp:OffMaxTimestamp+8])
		UpdateCRC(want)
		if h.Compression() == None && !opts.FromLog && !bytes.Equal(out, want) {
			// An uncompressed batch has one canonical encoding only if its
			// varints are minimal; the fuzzer may find non-minimal ones, so
			// compare sizes only when they match.
			if len(out) == len(data) {
				t.Fatalf("uncompressed re-encoding differs at equal size")
			}
		}
	}
}

func FuzzSplit(f *testing.F) {
	seeds := seedBatches(f)
	for _, b := range seeds {
		f.Add(b)
	}
	f.Add(bytes.Join(seeds[:5], nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		parts, err := Split(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Split returned %v (%T)", err, err)
			}
			return
		}
		var joined []byte
		for _, p := range parts {
			h, err := ParseHeader(p)
			if err != nil {
				t.Fatalf("Split returned an unparsable batch: %v", err)
			}
			if h.TotalSize() != len(p) || cap(p) != len(p) {
				t.Fatalf("part of %d bytes (cap %d), header says %d", len(p), cap(p), h.TotalSize())
			}
			joined = append(joined, p...)
		}
		if !bytes.Equal(joined, data) {
			t.Fatal("parts do not reassemble the input")
		}
		for _, p := range parts {
			_ = Validate(p, ValidateOptions{MaxDecompressed: fuzzMax, CheckRecords: true})
		}
	})
}
