package batch

import (
	"bytes"
	"fmt"
	"testing"
)

// uncompressed16K is the size of batch16K's records before compression.
const uncompressed16K = 15 * (1024 + 16)

// batch16K builds a ~16 KiB batch of 1 KiB records (as a producer with
// batch.size=16384 would send).
func batch16K(b *testing.B, c Compression) []byte {
	bd := NewBuilder()
	bd.Compression = c
	bd.BaseTimestamp = 1_700_000_000_000
	val := bytes.Repeat([]byte("0123456789abcdef"), 64)
	for i := 0; i < 15; i++ {
		bd.AddAt(bd.BaseTimestamp+int64(i), []byte(fmt.Sprintf("key-%04d", i)), val)
	}
	out, err := bd.Build()
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// batchSmall builds a ~16 KiB batch of many 100-byte records.
func batchSmall(b *testing.B) []byte {
	bd := NewBuilder()
	val := bytes.Repeat([]byte("x"), 100)
	for i := 0; i < 140; i++ {
		bd.AddAt(0, []byte(fmt.Sprintf("key-%04d", i)), val)
	}
	out, _ := bd.Build()
	return out
}

func BenchmarkComputeCRC16K(b *testing.B) {
	x := batch16K(b, None)
	b.SetBytes(int64(len(x)))
	for b.Loop() {
		ComputeCRC(x)
	}
}

// BenchmarkValidate16K is the produce-path (and follower-path) check of an uncompressed 16 KiB
// batch: header, CRC and a walk of the records.
func BenchmarkValidate16K(b *testing.B) {
	for _, tc := range []struct {
		name string
		x    []byte
		opts ValidateOptions
	}{
		{"1KiB-records", batch16K(b, None), ValidateOptions{}},
		{"100B-records", batchSmall(b), ValidateOptions{}},
		{"100B-records-from-log", batchSmall(b), ValidateOptions{FromLog: true}}, // a follower's append
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.x)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Validate(tc.x, tc.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidate1MiB is the same check of 1 MiB batches of 100-byte
// records, the size franz-go's producer fills by default (about 9,000
// records, offset deltas of up to three bytes). It cycles through 32 copies,
// so that each batch comes from beyond the core's own caches, as a batch just
// read from a socket does.
func BenchmarkValidate1MiB(b *testing.B) {
	bd := NewBuilder()
	val := bytes.Repeat([]byte("x"), 100)
	for i := 0; i < 9000; i++ {
		bd.AddAt(0, []byte(fmt.Sprintf("key-%06d", i)), val)
	}
	x, err := bd.Build()
	if err != nil {
		b.Fatal(err)
	}
	copies := make([][]byte, 32)
	for i := range copies {
		copies[i] = append([]byte(nil), x...)
	}
	for _, tc := range []struct {
		name string
		opts ValidateOptions
	}{{"100B-records", ValidateOptions{}}, {"100B-records-from-log", ValidateOptions{FromLog: true}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(x)))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if err := Validate(copies[n%len(copies)], tc.opts); err != nil {
					b.Fatal(err)
				}
				n++
			}
		})
	}
}

// BenchmarkValidateCompressed16K: header and CRC only (the default for a
// compressed batch), and with records decompressed and walked.
func BenchmarkValidateCompressed16K(b *testing.B) {
	for _, c := range []Compression{Gzip, Snappy, LZ4, Zstd} {
		x := batch16K(b, c)
		for _, check := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/records=%v", c, check), func(b *testing.B) {
				b.SetBytes(int64(len(x))) // header and CRC: the compressed bytes
				if check {
					b.SetBytes(uncompressed16K) // records: throughput in record bytes
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := Validate(x, ValidateOptions{CheckRecords: check}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkRecords16K(b *testing.B) {
	x := batch16K(b, None)
	b.SetBytes(int64(len(x)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Records(x, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForEachRecordKeys is what the cleaner does: read every key.
func BenchmarkForEachRecordKeys(b *testing.B) {
	for _, tc := range []struct {
		name string
		x    []byte
	}{{"1KiB-records", batch16K(b, None)}, {"100B-records", batchSmall(b)}, {"zstd-1KiB-records", batch16K(b, Zstd)}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.x)))
			if h, _ := ParseHeader(tc.x); h.Compression() != None {
				b.SetBytes(uncompressed16K)
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if err := ForEachRecord(tc.x, 0, func(r *Record) error { n += len(r.Key); return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBuild16K(b *testing.B) {
	val := bytes.Repeat([]byte("0123456789abcdef"), 64)
	bd := NewBuilder()
	b.SetBytes(15 * 1024)
	b.ReportAllocs()
	for b.Loop() {
		bd.Reset()
		for i := 0; i < 15; i++ {
			bd.AddAt(0, []byte("key"), val)
		}
		if _, err := bd.Build(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSetLogAppendTime16K(b *testing.B) {
	x := batch16K(b, None)
	b.SetBytes(int64(len(x)))
	for b.Loop() {
		SetLogAppendTime(x, 1)
	}
}

// BenchmarkWalk16K is the record walk alone (walkProduce, without the CRC)
// over the records of a 16 KiB batch of 100-byte records, warm in the cache.
func BenchmarkWalk16K(b *testing.B) {
	x := batchSmall(b)
	h, err := ParseHeader(x)
	if err != nil {
		b.Fatal(err)
	}
	data := x[HeaderSize:]
	b.SetBytes(int64(len(x)))
	for b.Loop() {
		if _, _, ok := walkProduce(data, int(h.RecordCount), h.BaseTimestamp, false); !ok {
			b.Fatal("walk refused the batch")
		}
	}
}
