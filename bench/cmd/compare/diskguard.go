package main

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// Free-space limits for the data directory. Produce runs write gigabytes
// (each topic is deleted after its run, and a run is capped at maxRunBytes),
// so the harness refuses to start a workload below minFreeToStart and cancels
// everything if a run brings the disk below minFreeWhileRunning.
const (
	minFreeToStart      = 12 << 30
	minFreeWhileRunning = 4 << 30
)

func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// checkFree fails when dir has less than minFreeToStart available.
func checkFree(dir string) error {
	free, err := freeBytes(dir)
	if err != nil {
		return err
	}
	if free < minFreeToStart {
		return fmt.Errorf("only %d MiB free in %s; the harness needs %d GiB", free>>20, dir, minFreeToStart>>30)
	}
	return nil
}

// guardDisk cancels the returned context when dir's free space drops below
// minFreeWhileRunning; the caller must call stop.
func guardDisk(parent context.Context, dir string) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if free, err := freeBytes(dir); err == nil && free < minFreeWhileRunning {
					err := fmt.Errorf("free space in %s fell to %d MiB: stopping the benchmark", dir, free>>20)
					logf("%v", err)
					cancel(err)
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}
