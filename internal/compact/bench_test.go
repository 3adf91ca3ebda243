package compact

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// benchLogMB returns the dirty log sizes to clean; SLUICE_BENCH_LOG_MB
// (comma-free single number) overrides the default pair.
func benchLogMB() []int {
	if v, err := strconv.Atoi(os.Getenv("SLUICE_BENCH_LOG_MB")); err == nil && v > 0 {
		return []int{v}
	}
	return []int{32, 128}
}

// BenchmarkClean measures one cleaning pass over a dirty log of 1 KiB
// records in 16-record batches where 10% of the keys are unique (each key
// written ~10 times), on the OS filesystem (page cache). MB/s is dirty log
// bytes cleaned per second; B/op and the heap metrics show memory stays
// bounded by the dedupe buffer (16 MiB here) whatever the log size.
func BenchmarkClean(b *testing.B) {
	for _, codec := range []batch.Compression{batch.None, batch.LZ4} {
		for _, mb := range benchLogMB() {
			b.Run(fmt.Sprintf("codec=%s/log=%dMiB", codec, mb), func(b *testing.B) { benchClean(b, codec, mb) })
		}
	}
}

func benchClean(b *testing.B, codec batch.Compression, mb int) {
	const recSize, perBatch = 1024, 16
	records := mb << 20 / recSize
	keys := records / 10
	value := make([]byte, recSize-16)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var dirty int64
	b.ReportAllocs()
	var heapAfter uint64
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		cfg := log.DefaultConfig()
		cfg.Compact, cfg.DeleteRetention = true, false
		cfg.SegmentBytes = 64 << 20
		m, err := log.OpenManager(vfs.OS(), dir, log.ManagerOptions{Logger: quietLogger(), HousekeepingInterval: -1,
			ConfigFor: func(string, int32) log.Config { return cfg }})
		if err != nil {
			b.Fatal(err)
		}
		l, err := m.Open("bench", 0, cfg)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		bl := batch.NewBuilder()
		bl.Compression = codec
		for n := 0; n < records; n += perBatch {
			bl.Reset()
			bl.BaseTimestamp = 1_700_000_000_000
			for j := 0; j < perBatch; j++ {
				bl.AddAt(bl.BaseTimestamp, []byte(fmt.Sprintf("key-%010d", rng.IntN(keys))), value)
			}
			raw, err := bl.Build()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.Append(raw, log.AppendOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Roll(); err != nil {
			b.Fatal(err)
		}
		dirty = l.Size()
		c, err := New(Options{FS: vfs.OS(), DataDir: dir, Manager: m, DedupeBufferSize: 16 << 20, Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		b.StartTimer()
		t0 := time.Now()
		res, err := c.CleanNow("bench", 0)
		elapsed += time.Since(t0)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if res.MapFull || res.RecordsRead != int64(records) {
			b.Fatalf("pass: %+v", res)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heapAfter = ms.HeapInuse
		b.ReportMetric(float64(res.BytesWritten)/float64(res.BytesRead), "out/in")
		_ = c.Close()
		_ = m.Close()
		b.StartTimer()
	}
	b.SetBytes(dirty)
	b.ReportMetric(float64(heapAfter)/(1<<20), "heap-MiB")
	// Record bytes before compression per second (equals MB/s uncompressed).
	b.ReportMetric(float64(records*recSize)*float64(b.N)/elapsed.Seconds()/1e6, "record-MB/s")
}
