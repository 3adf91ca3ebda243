// Command copyfloor measures the kernel's share of a produce path with no
// broker at all (issue #14, item 1): a child process streams bytes over
// loopback TCP, and this process reads them in 1 MiB frames and writes each
// frame to files with pwrite(2), 64 KiB per file in turn (as a 1 MiB
// produce over 16 partitions is appended). It reports this process's user
// and system CPU per GB (getrusage), which is what any broker that reads a
// socket and writes into the page cache pays before doing any work of its
// own.
//
//	go -C bench run ./cmd/copyfloor --dir bench/.cache --recycle-mib 3000
//
// --reserve allocates blocks ahead of each file's end as Sluice's log does
// (internal/log/reserve.go). --recycle-mib writes and deletes that much first, so the pwrites go into
// recycled page-cache memory (see bench/README.md); the files are removed
// at the end.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sluice-broker/sluice/internal/vfs"
)

func main() {
	dir := flag.String("dir", os.TempDir(), "directory for the files (the filesystem under test)")
	mib := flag.Int64("mib", 2048, "MiB to stream")
	files := flag.Int("files", 16, "files written in turn (partitions)")
	chunk := flag.Int("chunk", 64<<10, "bytes per pwrite")
	recycle := flag.Int64("recycle-mib", 0, "write and delete this many MiB first (recycled page-cache memory)")
	reserve := flag.Bool("reserve", false, "reserve blocks ahead of each file's end as Sluice's log does (fallocate KEEP_SIZE, up to 4 MiB ahead)")
	send := flag.String("send", "", "internal: stream to this address")
	flag.Parse()
	if *send != "" {
		sendTo(*send, *mib)
		return
	}
	if *recycle > 0 {
		if err := recycleMemory(*dir, *recycle); err != nil {
			log.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	snd := exec.Command(exe, "--send", l.Addr().String(), "--mib", fmt.Sprint(*mib))
	snd.Stderr = os.Stderr
	if err := snd.Start(); err != nil {
		log.Fatal(err)
	}
	c, err := l.Accept()
	if err != nil {
		log.Fatal(err)
	}
	fs := make([]*os.File, *files)
	for i := range fs {
		if fs[i], err = os.Create(filepath.Join(*dir, fmt.Sprintf("copyfloor-%d", i))); err != nil {
			log.Fatal(err)
		}
	}
	defer func() {
		for _, f := range fs {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	offs := make([]int64, *files)
	reserved := make([]int64, *files)
	buf := make([]byte, 1<<20)
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	var n int64
	k := 0
	for {
		m, rerr := io.ReadFull(c, buf)
		for p := 0; p < m; p += *chunk {
			e := min(p+*chunk, m)
			if end := offs[k] + int64(e-p); *reserve && end > reserved[k] {
				reserved[k] = end + min(end, 4<<20)
				if err := vfs.Reserve(fs[k], offs[k], reserved[k]-offs[k]); err != nil {
					log.Fatal(err)
				}
			}
			if _, err := fs[k].WriteAt(buf[p:e], offs[k]); err != nil {
				log.Fatal(err)
			}
			offs[k] += int64(e - p)
			k = (k + 1) % *files
		}
		n += int64(m)
		if rerr != nil {
			break
		}
	}
	elapsed := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	if err := snd.Wait(); err != nil {
		log.Fatal(err)
	}
	gb := float64(n) / 1e9
	user := float64(ru1.Utime.Nano()-ru0.Utime.Nano()) / 1e9
	sys := float64(ru1.Stime.Nano()-ru0.Stime.Nano()) / 1e9
	fmt.Printf("%.2f GB in %.2f s (%.0f MB/s): %.2f CPU s/GB (user %.2f, system %.2f)\n",
		gb, elapsed.Seconds(), gb*1e3/elapsed.Seconds(), (user+sys)/gb, user/gb, sys/gb)
}

func sendTo(addr string, mib int64) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for range mib {
		if _, err := c.Write(buf); err != nil {
			log.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		log.Fatal(err)
	}
}

func recycleMemory(dir string, mib int64) error {
	path := filepath.Join(dir, "copyfloor-recycle.tmp")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	buf := make([]byte, 1<<20)
	for range mib {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
