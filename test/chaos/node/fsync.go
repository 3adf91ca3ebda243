package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// FsyncShadowConfig is the broker config naming the directory where the
// broker keeps a copy of its data directory as of each file's last fsync
// (test only; the lose-unfsynced fault). A node whose Props give it the
// value FsyncShadowPerNode gets its own directory, FsyncedDir.
const (
	FsyncShadowConfig  = "sluice.test.fsync.shadow.dir"
	FsyncShadowPerNode = "(per node)"
)

// FsyncedDir is where the node's broker keeps the copy of its data
// directory as of the last fsyncs (with FsyncShadowConfig).
func (c Config) FsyncedDir() string { return filepath.Join(c.Dir, "fsynced") }

// fsyncedCopy is the copy of the data directory itself: the broker keeps it
// at the shadow directory followed by the data directory's absolute path.
func (c Config) fsyncedCopy() string {
	return filepath.Join(c.FsyncedDir(), filepath.Clean(c.DataDir()))
}

// LoseUnfsynced kills the node (SIGKILL) and replaces its data directory's
// content with the broker's copy as of its last fsyncs: what a machine
// crash would leave. It returns what was lost (bytes past the synced size,
// files not synced since they changed). The node is started again by Start.
func (n *Node) LoseUnfsynced(timeout time.Duration) (string, error) {
	if err := n.Kill(timeout); err != nil {
		return "", err
	}
	return n.RestoreFsynced()
}

// KillTogether sends SIGKILL to every given node before waiting for any
// (a power loss of several machines at once), then waits for each as Kill
// does.
func KillTogether(timeout time.Duration, nodes ...*Node) error {
	for _, n := range nodes {
		if err := n.signal(syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
	}
	var errs []error
	for _, n := range nodes {
		errs = append(errs, n.Kill(timeout))
	}
	return errors.Join(errs...)
}

// RestoreFsynced replaces the data directory's content of a node that is
// not running with the broker's copy as of its last fsyncs (LoseUnfsynced
// after the kill).
func (n *Node) RestoreFsynced() (string, error) {
	if n.Running() {
		return "", fmt.Errorf("node %d is running: its data directory cannot be replaced", n.ID)
	}
	src := n.fsyncedCopy()
	if _, err := os.Stat(src); err != nil {
		return "", fmt.Errorf("node %d: no copy of its data directory as of its fsyncs (%s=%s?): %w", n.ID, FsyncShadowConfig, n.FsyncedDir(), err)
	}
	lostBytes, changed, err := diffTrees(n.DataDir(), src)
	if err != nil {
		return "", err
	}
	// The content only: the data directory may be a mount point (disk-full).
	ents, err := os.ReadDir(n.DataDir())
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(n.DataDir(), e.Name())); err != nil {
			return "", err
		}
	}
	if err := copyTree(src, n.DataDir()); err != nil {
		return "", fmt.Errorf("node %d: restoring the fsynced copy: %w", n.ID, err)
	}
	return fmt.Sprintf("lost %d bytes past the synced sizes; %d files differed from their synced content", lostBytes, changed), nil
}

// diffTrees compares the regular files of cur with those of synced: bytes
// of cur past the synced size, and how many files differ in size or are
// missing from the copy.
func diffTrees(cur, synced string) (lost int64, changed int, err error) {
	err = filepath.WalkDir(cur, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(cur, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		si, serr := os.Stat(filepath.Join(synced, rel))
		switch {
		case serr != nil:
			lost += fi.Size()
			changed++
		case si.Size() != fi.Size():
			lost += max(fi.Size()-si.Size(), 0)
			changed++
		}
		return nil
	})
	return lost, changed, err
}
