package compact

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/sluice-broker/sluice/internal/log"
)

// CheckpointFile is the data-dir file holding, per partition, the offset
// up to which the log has been cleaned (the first dirty offset), in Apache
// Kafka's checkpoint text format:
//
//	0
//	<number of entries>
//	<topic> <partition> <offset>
//	...
//
// It is replaced atomically (write <name>.tmp, fsync, rename, fsync the
// directory). A missing file means nothing was cleaned yet.
const CheckpointFile = "cleaner-offset-checkpoint"

func readCheckpoint(fsys log.FS, dir string) (map[log.TopicPartition]int64, error) {
	path := filepath.Join(dir, CheckpointFile)
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		if os.IsNotExist(err) {
			return map[log.TopicPartition]int64{}, nil
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, fi.Size())
	if n, err := f.ReadAt(data, 0); err != nil && !(err == io.EOF && n == len(data)) {
		return nil, err
	}
	return parseCheckpoint(data)
}

func parseCheckpoint(data []byte) (map[log.TopicPartition]int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, fmt.Errorf("%s: bad header", CheckpointFile)
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("%s: bad entry count", CheckpointFile)
	}
	out := make(map[log.TopicPartition]int64, n)
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: bad entry %q", CheckpointFile, l)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || off < 0 {
			return nil, fmt.Errorf("%s: bad entry %q", CheckpointFile, l)
		}
		out[log.TopicPartition{Topic: f[0], Partition: int32(p)}] = off
	}
	return out, nil
}

func formatCheckpoint(m map[log.TopicPartition]int64) []byte {
	tps := make([]log.TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(tps))
	for _, tp := range tps {
		fmt.Fprintf(&b, "%s %d %d\n", tp.Topic, tp.Partition, m[tp])
	}
	return b.Bytes()
}

func writeCheckpoint(fsys log.FS, dir string, m map[log.TopicPartition]int64) error {
	path := filepath.Join(dir, CheckpointFile)
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(formatCheckpoint(m), 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		_ = fsys.Remove(tmp)
	}
	return err
}
