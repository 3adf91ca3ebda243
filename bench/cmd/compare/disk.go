package main

import (
	"os"
	"path/filepath"
	"time"

	"syscall"
)

// diskBaseline is the reference for the durable-produce target.
type diskBaseline struct {
	// BulkMBps: write size bytes in 1 MiB writes, then one fdatasync — what
	// `dd bs=1M conv=fdatasync` measures: the disk's fdatasync bandwidth.
	BulkMBps float64 `json:"bulk_fdatasync_mb_s"`
	// PerWrite1MiBMBps: fdatasync after every 1 MiB write (group commit of
	// 1 MiB per sync, the best a broker syncing each batch can hope for).
	PerWrite1MiBMBps float64 `json:"fdatasync_each_1mib_mb_s"`
	// PerWrite16KiBMBps and SyncLatencyMs: fdatasync after every 16 KiB
	// write (one small batch per sync) and the mean time of one such sync.
	PerWrite16KiBMBps float64 `json:"fdatasync_each_16kib_mb_s"`
	SyncLatencyMs     float64 `json:"fdatasync_16kib_latency_ms"`
	Bytes             int64   `json:"bulk_bytes"`
	// PageCache: writing into the page cache (no sync), first into whatever
	// memory the kernel hands out, then again right after that file was
	// deleted (its pages just freed). On a VM whose free memory goes back to
	// the host, the first is much slower: every new page costs the host a
	// fault. Both brokers that store on disk pay this per byte they write.
	PageCache *pageCacheProbe `json:"page_cache,omitempty"`
}

// pageCacheProbe is the result of measurePageCache.
type pageCacheProbe struct {
	Bytes          int64   `json:"bytes"`
	FreshMBps      float64 `json:"fresh_mb_s"`
	FreshCPUSPerGB float64 `json:"fresh_cpu_s_per_gb"`
	ReusedMBps     float64 `json:"reused_mb_s"`
	ReusedCPUSPerG float64 `json:"reused_cpu_s_per_gb"`
}

// measurePageCache writes size bytes into a new file in dir without syncing
// (after idle, so that memory freed earlier has gone back to the host, as
// between benchmark runs; a VM may keep the first GiB or so of freed memory,
// hence a size of several GiB), deletes it, and writes size bytes again at
// once into the pages just freed. It reports both rates and the CPU time
// this process spent per GB (almost all of it in the kernel's copy into the
// page cache).
func measurePageCache(dir string, size int64, idle time.Duration) (pageCacheProbe, error) {
	res := pageCacheProbe{Bytes: size}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 13)
	}
	write := func(name string) (float64, float64, error) {
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			return 0, 0, err
		}
		defer f.Close()
		cpu0 := selfCPU()
		start := time.Now()
		for w := int64(0); w < size; w += int64(len(buf)) {
			if _, err := f.Write(buf); err != nil {
				return 0, 0, err
			}
		}
		el := time.Since(start).Seconds()
		return float64(size) / el / 1e6, (selfCPU() - cpu0).Seconds() / (float64(size) / 1e9), nil
	}
	time.Sleep(idle)
	var err error
	if res.FreshMBps, res.FreshCPUSPerGB, err = write("pagecache-probe-a"); err != nil {
		return res, err
	}
	_ = os.Remove(filepath.Join(dir, "pagecache-probe-a")) // frees its (dirty) pages now
	res.ReusedMBps, res.ReusedCPUSPerG, err = write("pagecache-probe-b")
	_ = os.Remove(filepath.Join(dir, "pagecache-probe-b"))
	return res, err
}

// selfCPU is this process's user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureDisk measures fdatasync bandwidth in dir (the brokers' disk).
func measureDisk(dir string, size int64) (diskBaseline, error) {
	res := diskBaseline{Bytes: size}
	path := filepath.Join(dir, "fdatasync-probe")
	defer os.Remove(path)
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	run := func(chunk int, total int64, syncEach bool) (float64, time.Duration, int, error) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			return 0, 0, 0, err
		}
		defer f.Close()
		start := time.Now()
		var syncTime time.Duration
		syncs := 0
		for w := int64(0); w < total; w += int64(chunk) {
			if _, err := f.Write(buf[:chunk]); err != nil {
				return 0, 0, 0, err
			}
			if syncEach {
				t := time.Now()
				if err := syscall.Fdatasync(int(f.Fd())); err != nil {
					return 0, 0, 0, err
				}
				syncTime += time.Since(t)
				syncs++
			}
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return 0, 0, 0, err
		}
		return float64(total) / time.Since(start).Seconds() / 1e6, syncTime, syncs, nil
	}
	var err error
	if res.BulkMBps, _, _, err = run(1<<20, size, false); err != nil {
		return res, err
	}
	if res.PerWrite1MiBMBps, _, _, err = run(1<<20, size/4, true); err != nil {
		return res, err
	}
	var st time.Duration
	var n int
	if res.PerWrite16KiBMBps, st, n, err = run(16<<10, 16<<20, true); err != nil {
		return res, err
	}
	if n > 0 {
		res.SyncLatencyMs = float64(st) / float64(n) / 1e6
	}
	return res, nil
}
