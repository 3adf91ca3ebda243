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
