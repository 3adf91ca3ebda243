package node

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// A node's data directory on its own small tmpfs mount, so that the disk-full
// fault can fill it: a filler file takes every free byte, and deleting it
// heals the fault. The mount is removed (its content copied back into the
// node's directory first, so that a kept run directory still holds the data)
// when the run ends; a reaper process does it too if the checker dies.

// FillerName is the filler file's name in a full data directory (the broker
// ignores files that are not <topic>-<partition> directories).
const FillerName = ".sluice-chaos-filler"

// TmpfsAvailable tells whether a tmpfs can be mounted here (root, mount); the
// error says why not. It mounts and unmounts one to find out.
func TmpfsAvailable() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("mounting a tmpfs needs root (the checker runs as uid %d)", os.Geteuid())
	}
	dir, err := os.MkdirTemp("", "sluice-chaos-tmpfs-probe-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	if err := mountTmpfs(dir, "1m"); err != nil {
		return err
	}
	return unmount(dir)
}

func mountTmpfs(dir, size string) error {
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0755", "sluice-chaos", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("mount -t tmpfs %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func unmount(dir string) error {
	if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("umount %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

var (
	mountsMu sync.Mutex
	mounts   = map[string]bool{}
)

// MountDataTmpfs puts the node's (empty) data directory on a tmpfs of the
// given size ("256m").
func (n *Node) MountDataTmpfs(size string) error {
	if err := mountTmpfs(n.DataDir(), size); err != nil {
		return err
	}
	mountsMu.Lock()
	mounts[n.DataDir()] = true
	mountsMu.Unlock()
	return nil
}

// Fill takes every free byte of the node's data directory's file system with
// the filler file.
func (n *Node) Fill() error {
	path := filepath.Join(n.DataDir(), FillerName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	var st syscall.Statfs_t
	if err := syscall.Statfs(n.DataDir(), &st); err != nil {
		return err
	}
	fi, _ := f.Stat()
	free := int64(st.Bavail) * st.Bsize
	if free > 0 {
		if err := syscall.Fallocate(int(f.Fd()), 0, fi.Size(), free); err != nil && !errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("fill %s: %w", path, err)
		}
	}
	// Whatever is left (the broker may have freed some meanwhile).
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return fmt.Errorf("fill %s: %w", path, err)
		}
	}
}

// Unfill deletes the filler file.
func (n *Node) Unfill() error {
	err := os.Remove(filepath.Join(n.DataDir(), FillerName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Full tells whether the filler file is there.
func (n *Node) Full() bool {
	_, err := os.Stat(filepath.Join(n.DataDir(), FillerName))
	return err == nil
}

// UnmountAll copies each tmpfs data directory's content (without the filler)
// back into a plain directory and unmounts it. The nodes must be stopped.
func UnmountAll() error {
	mountsMu.Lock()
	dirs := make([]string, 0, len(mounts))
	for d := range mounts {
		dirs = append(dirs, d)
	}
	mounts = map[string]bool{}
	mountsMu.Unlock()
	var errs []error
	for _, d := range dirs {
		errs = append(errs, saveAndUnmount(d))
	}
	return errors.Join(errs...)
}

// UnmountUnder unmounts (saving their content) the sluice-chaos tmpfs
// mounts under dir: the reaper's cleanup.
func UnmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return err
	}
	defer f.Close()
	var errs []error
	sc := bufio.NewScanner(f)
	var found []string
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 3 && fs[0] == "sluice-chaos" && fs[2] == "tmpfs" && strings.HasPrefix(fs[1], dir+"/") {
			found = append(found, fs[1])
		}
	}
	for _, m := range found {
		errs = append(errs, saveAndUnmount(m))
	}
	return errors.Join(errs...)
}

func saveAndUnmount(d string) error {
	_ = os.Remove(filepath.Join(d, FillerName))
	saved := d + ".saved"
	if err := copyTree(d, saved); err != nil {
		return fmt.Errorf("save %s before unmounting: %w", d, err)
	}
	if err := unmount(d); err != nil {
		return err
	}
	if err := os.Remove(d); err != nil {
		return err
	}
	return os.Rename(saved, d)
}

func copyTree(src, dst string) error {
	return filepath.Walk(src, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
