package log

import (
	"fmt"
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
)

// textBatch is a batch with codec c of 16 records of ~1 KiB of log-like
// text (compressible about 3-5x, unlike mkBatch's repeated bytes), without
// a producer id.
func textBatch(b testing.TB, c batch.Compression) []byte {
	bl := batch.NewBuilder()
	bl.Compression = c
	bl.BaseTimestamp = 1_700_000_000_000
	for i := 0; i < 16; i++ {
		var v []byte
		for j := 0; len(v) < 1000; j++ {
			v = fmt.Appendf(v, "ts=%d user=%d action=%s amount=%d; ", 1_700_000_000_000+i*j, (i*131+j*7919)%10007,
				[]string{"buy", "sell", "hold", "cancel"}[(i+j)%4], (i*31+j*17)%977)
		}
		bl.AddAt(bl.BaseTimestamp+int64(i), fmt.Appendf(nil, "key-%d", i), v)
	}
	out, err := bl.Build()
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkRecompress: re-encoding one 16 KiB (uncompressed) batch, no I/O.
// Bytes/s are uncompressed record bytes.
func BenchmarkRecompress(b *testing.B) {
	vopts := batch.ValidateOptions{MaxDecompressed: 1 << 20}
	for _, tc := range []struct {
		src, dst batch.Compression
		level    int
	}{
		{batch.Gzip, batch.Zstd, 0},
		{batch.Snappy, batch.Zstd, 0},
		{batch.LZ4, batch.Zstd, 0},
		{batch.None, batch.Zstd, 0},
		{batch.Zstd, batch.None, 0},
		{batch.Zstd, batch.Gzip, 0},
		{batch.Zstd, batch.Snappy, 0},
		{batch.Zstd, batch.LZ4, 0},
		{batch.Zstd, batch.LZ4, 1},  // lz4 high-compression mode
		{batch.Gzip, batch.Zstd, 1}, // zstd fastest
		{batch.Gzip, batch.Zstd, 19},
	} {
		name := fmt.Sprintf("%s_to_%s", tc.src, tc.dst)
		if tc.level != 0 {
			name += fmt.Sprintf("_level%d", tc.level)
		}
		b.Run(name, func(b *testing.B) {
			raw := textBatch(b, tc.src)
			out, sum, err := recompress(raw, tc.dst, tc.level, vopts)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(sum.Uncompressed))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, _, err := recompress(raw, tc.dst, tc.level, vopts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(raw)), "in-bytes")
			b.ReportMetric(float64(len(out)), "out-bytes")
		})
	}
}

// BenchmarkAppendRecompress: Append of gzip batches to a zstd topic on the
// real filesystem, against the same batches on a "producer" topic.
func BenchmarkAppendRecompress(b *testing.B) {
	for _, tc := range []struct {
		name string
		c    batch.Compression
	}{{"producer", ProducerCompression}, {"gzip_to_zstd", batch.Zstd}} {
		b.Run(tc.name, func(b *testing.B) {
			m := benchManager(b, benchDir(b))
			defer m.Close()
			cfg := DefaultConfig()
			cfg.Compression = tc.c
			l, err := m.Create("bench", 0, cfg)
			if err != nil {
				b.Fatal(err)
			}
			raw := textBatch(b, batch.Gzip)
			buf := make([]byte, len(raw))
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				copy(buf, raw)
				if _, err := l.Append(buf, AppendOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
