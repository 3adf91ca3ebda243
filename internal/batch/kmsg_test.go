package batch

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Round trips against franz-go's kmsg, an independent encoder/decoder of the
// same wire format.

// kmsgSplitRecords cuts an uncompressed record section into kmsg.Records.
func kmsgSplitRecords(t *testing.T, data []byte, n int) []kmsg.Record {
	t.Helper()
	var out []kmsg.Record
	for i := 0; i < n; i++ {
		l, m := binary.Varint(data)
		if m <= 0 || int(l) > len(data)-m {
			t.Fatalf("record %d: bad length", i)
		}
		var r kmsg.Record
		if err := r.ReadFrom(data[:m+int(l)]); err != nil {
			t.Fatalf("record %d: kmsg: %v", i, err)
		}
		out = append(out, r)
		data = data[m+int(l):]
	}
	if len(data) != 0 {
		t.Fatalf("%d trailing bytes", len(data))
	}
	return out
}

func fromKmsg(rs []kmsg.Record) []Record {
	out := make([]Record, len(rs))
	for i, r := range rs {
		out[i] = Record{Attributes: r.Attributes, TimestampDelta: r.TimestampDelta64, OffsetDelta: r.OffsetDelta, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			out[i].Headers = append(out[i].Headers, RecordHeader{Key: h.Key, Value: h.Value})
		}
	}
	return out
}

// refDecompress decompresses with the libraries directly.
func refDecompress(t *testing.T, c Compression, data []byte) []byte {
	t.Helper()
	if c == None {
		return data
	}
	if c == Snappy && bytes.HasPrefix(data, []byte("\x82SNAPPY\x00")) {
		var out []byte
		for p := 16; p < len(data); {
			n := int(binary.BigEndian.Uint32(data[p:]))
			blk, err := snappy.Decode(nil, data[p+4:p+4+n])
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, blk...)
			p += 4 + n
		}
		return out
	}
	out, err := Decompress(c, data, 0) // gzip/lz4/zstd are the libraries' stream readers
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBuilderReadByKmsg(t *testing.T) {
	want := sampleRecords(37)
	for _, c := range []Compression{None, Gzip, Snappy, LZ4, Zstd} {
		bd := NewBuilder()
		bd.Compression = c
		bd.BaseOffset = 77
		bd.PartitionLeaderEpoch = 3
		bd.BaseTimestamp = 1_700_000_000_123
		bd.ProducerID, bd.ProducerEpoch, bd.BaseSequence = 4000, 2, 100
		bd.Attributes = 0x10 // transactional
		for _, r := range want {
			bd.Add(r)
		}
		b, err := bd.Build()
		if err != nil {
			t.Fatal(err)
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(b); err != nil {
			t.Fatalf("%s: kmsg: %v", c, err)
		}
		if kb.FirstOffset != 77 || kb.PartitionLeaderEpoch != 3 || kb.Magic != 2 || kb.Attributes != int16(c)|0x10 ||
			kb.LastOffsetDelta != 36 || kb.FirstTimestamp != 1_700_000_000_123 || kb.MaxTimestamp != 1_700_000_000_123+1<<40 ||
			kb.ProducerID != 4000 || kb.ProducerEpoch != 2 || kb.FirstSequence != 100 || kb.NumRecords != 37 ||
			int(kb.Length) != len(b)-12 {
			t.Fatalf("%s: kmsg header %+v", c, kb)
		}
		// kmsg does not check the CRC; compare with an independent one.
		if uint32(kb.CRC) != crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)) {
			t.Fatalf("%s: CRC", c)
		}
		recs := kmsgSplitRecords(t, refDecompress(t, c, kb.Records), int(kb.NumRecords))
		sameRecords(t, fromKmsg(recs), want)
		if c == None && !bytes.Equal(kb.AppendTo(nil), b) {
			t.Fatal("kmsg re-encoding differs")
		}
	}
}

// kmsgRecords encodes records with kmsg (lengths computed the way a client does).
func kmsgRecords(rs []Record) []byte {
	var out []byte
	for _, r := range rs {
		kr := kmsg.Record{Attributes: r.Attributes, TimestampDelta64: r.TimestampDelta, OffsetDelta: r.OffsetDelta, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		body := kr.AppendTo(nil) // Length 0 → one byte of varint
		kr.Length = int32(len(body) - 1)
		out = kr.AppendTo(out)
	}
	return out
}

func TestKmsgReadByUs(t *testing.T) {
	want := sampleRecords(41)
	raw := kmsgRecords(want)
	forms := []struct {
		name string
		c    Compression
		data []byte
	}{
		{"none", None, raw},
		{"gzip", Gzip, refGzip(t, raw)},
		{"snappy-raw", Snappy, snappy.Encode(nil, raw)},
		{"snappy-xerial", Snappy, refXerial(raw, 32<<10)},
		{"lz4", LZ4, refLZ4(t, raw)},
		{"zstd", Zstd, refZstd(t, raw)},
	}
	for _, f := range forms {
		kb := kmsg.RecordBatch{
			FirstOffset: 0, PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(f.c),
			LastOffsetDelta: int32(len(want) - 1), FirstTimestamp: 5000, MaxTimestamp: 5000 + 1<<40,
			ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(want)),
			Records: f.data, Length: int32(49 + len(f.data)),
		}
		b := kb.AppendTo(nil)
		binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))

		parts, err := Split(append(append([]byte(nil), b...), b...))
		if err != nil || len(parts) != 2 {
			t.Fatalf("%s: Split: %v", f.name, err)
		}
		if err := Validate(b, ValidateOptions{CheckRecords: true, RequireKeys: false}); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		got, err := Records(b, 0)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		sameRecords(t, got, want)

		// ForEachRecord sees the same records, reusing one Record.
		i := 0
		err = ForEachRecord(b, 0, func(r *Record) error {
			sameRecords(t, []Record{*r}, want[i:i+1])
			i++
			return nil
		})
		if err != nil || i != len(want) {
			t.Fatalf("%s: ForEachRecord: %v after %d", f.name, err, i)
		}
	}
}
