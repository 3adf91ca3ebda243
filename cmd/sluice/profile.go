package main

// A CPU profile of the broker process for performance work (not a user
// feature): with SLUICE_CPU_PROFILE=FILE set, the process writes a pprof
// CPU profile of its first SLUICE_CPU_PROFILE_SECONDS seconds (default 10;
// start-up included) to FILE. docs/performance.md uses it for the restart of
// many partitions.

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/sluice-broker/sluice/internal/vfs"
)

func init() {
	path := os.Getenv("SLUICE_CPU_PROFILE")
	if path == "" {
		return
	}
	secs := 10.0
	if s := os.Getenv("SLUICE_CPU_PROFILE_SECONDS"); s != "" {
		if v, err := strconv.ParseFloat(s, 64); err == nil && v > 0 {
			secs = v
		}
	}
	f, err := vfs.OS().OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice: SLUICE_CPU_PROFILE:", err)
		return
	}
	time.AfterFunc(time.Duration(secs*float64(time.Second)), func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	})
}
