package log

import (
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// SyncedEnd, the position a follower reports to its leader: with
// flush.messages=N it is durable up to the last append that reached N
// unflushed messages even when that append left the fsync to its caller;
// with the default it syncs nothing; a failed fsync makes it an error, not
// a position.
func TestSyncedEnd(t *testing.T) {
	_, bs := leaderLog(t, DefaultConfig())

	// Never forced: the end, nothing made durable.
	e := newEnv(t, DefaultConfig())
	f := e.log()
	followerAppend(t, f, bs[0])
	if end, err := f.SyncedEnd(); err != nil || end != f.LogEndOffset() {
		t.Fatalf("SyncedEnd without flush.messages: %d %v (end %d)", end, err, f.LogEndOffset())
	}
	if d := f.durable.Load(); d != 0 {
		t.Fatalf("SyncedEnd without flush.messages made %d durable", d)
	}

	// flush.messages=3, appends that leave the fsync to the caller.
	cfg := DefaultConfig()
	cfg.FlushMessages = 3
	e = newEnv(t, cfg)
	f = e.log()
	if _, err := f.AppendAsFollower(slices.Clone(bs[0]), FollowerAppendOptions{DeferSync: true}); err != nil { // 1 record
		t.Fatal(err)
	}
	if end, err := f.SyncedEnd(); err != nil || end != 1 || f.durable.Load() != 0 {
		t.Fatalf("SyncedEnd below flush.messages: %d %v, durable %d (want 1, nothing synced)", end, err, f.durable.Load())
	}
	if _, err := f.AppendAsFollower(slices.Clone(bs[1]), FollowerAppendOptions{DeferSync: true}); err != nil { // 2 more: due
		t.Fatal(err)
	}
	end, err := f.SyncedEnd()
	if err != nil || end != f.LogEndOffset() {
		t.Fatalf("SyncedEnd after flush.messages was reached: %d %v (end %d)", end, err, f.LogEndOffset())
	}
	e.crash(vfs.CrashOptions{})
	if f = e.log(); f.LogEndOffset() != end {
		t.Fatalf("after a crash the end is %d, want the reported %d", f.LogEndOffset(), end)
	}
	// After a clean restart the log is not read to answer: its end is
	// known, nothing was appended.
	e.restart()
	f = e.log()
	if got, err := f.SyncedEnd(); err != nil || got != end || !f.Deferred() || f.Loaded() {
		t.Fatalf("SyncedEnd after a clean restart: %d %v, loaded %v (deferred %v)", got, err, f.Loaded(), f.Deferred())
	}

	// flush.messages=1 and a failing fsync: the append fails the log and
	// SyncedEnd reports no position, though the end moved.
	cfg.FlushMessages = 1
	e = newEnv(t, cfg)
	f = e.log()
	followerAppend(t, f, bs[0])
	e.fs.SetFault(func(op, name string) error {
		if op == "sync" && strings.HasSuffix(name, ".log") {
			return syscall.EIO
		}
		return nil
	})
	if _, err := f.AppendAsFollower(slices.Clone(bs[1]), FollowerAppendOptions{}); err == nil {
		t.Fatal("append whose fsync failed succeeded")
	}
	var se *StorageError
	if end, err := f.SyncedEnd(); !errors.As(err, &se) {
		t.Fatalf("SyncedEnd of a failed log: %d %v (want a storage error)", end, err)
	}
	e.fs.SetFault(nil)
}
