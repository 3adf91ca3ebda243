package log

import (
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkAppendReserve: appends of 256 KiB batches to four partitions
// with blocks reserved ahead (reserve.go) and without. Every 256 MiB the
// logs are deleted (untimed), so the writes land in page-cache memory
// recycled from the last round rather than in ever more fresh memory; the
// metric sys-s/GB is the process's system CPU while appending.
func BenchmarkAppendReserve(b *testing.B) {
	for _, reserve := range []bool{true, false} {
		b.Run("reserve="+strconv.FormatBool(reserve), func(b *testing.B) {
			raw := mkBatch(b, 256, 1000, 1)
			dir := benchDir(b)
			var m *Manager
			var logs []*Log
			open := func() {
				m = benchManager(b, dir)
				m.noReserve.Store(!reserve)
				logs = logs[:0]
				for p := int32(0); p < 4; p++ {
					l, err := m.Create("bench", p, DefaultConfig())
					if err != nil {
						b.Fatal(err)
					}
					logs = append(logs, l)
				}
			}
			drop := func() {
				for p := int32(0); p < 4; p++ {
					if err := m.Delete("bench", p); err != nil {
						b.Fatal(err)
					}
				}
				m.Close()
			}
			var sys time.Duration
			var written int64
			rusage := func() time.Duration {
				var ru syscall.Rusage
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
				return time.Duration(ru.Stime.Nano())
			}
			open()
			b.SetBytes(int64(len(raw)))
			b.ResetTimer()
			s0 := rusage()
			for i := 0; i < b.N; i++ {
				if _, err := logs[i%4].Append(raw, AppendOptions{}); err != nil {
					b.Fatal(err)
				}
				written += int64(len(raw))
				if written%(256<<20) < int64(len(raw)) {
					sys += rusage() - s0
					b.StopTimer()
					drop()
					open()
					b.StartTimer()
					s0 = rusage()
				}
			}
			sys += rusage() - s0
			b.StopTimer()
			drop()
			b.ReportMetric(sys.Seconds()/(float64(written)/1e9), "sys-s/GB")
		})
	}
}
