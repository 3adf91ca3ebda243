package log

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Checkpoint files use Apache Kafka's text format:
//
//	<version, 0>\n
//	<number of entries>\n
//	<entry>\n ...
//
// recovery-point-offset-checkpoint and log-start-offset-checkpoint (data dir)
// hold "<topic> <partition> <offset>" entries; leader-epoch-checkpoint
// (partition dir) holds "<epoch> <start offset>". They are replaced
// atomically: written to <name>.tmp, fsynced, renamed, directory fsynced.
const (
	recoveryPointFile = "recovery-point-offset-checkpoint"
	logStartFile      = "log-start-offset-checkpoint"
	leaderEpochFile   = "leader-epoch-checkpoint"
	cleanShutdownFile = ".kafka_cleanshutdown"
	tmpSuffix         = ".tmp"
)

// writeCheckpoint atomically replaces path with the given entry lines.
func writeCheckpoint(fsys FS, path string, lines []string) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return writeFileAtomic(fsys, path, b.Bytes())
}

func writeFileAtomic(fsys FS, path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
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
		err = fsys.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = fsys.Remove(tmp)
	}
	return err
}

// readCheckpoint returns the entry lines, split into fields, each with
// `fields` fields. A missing file is no entries; a malformed one an error.
func readCheckpoint(fsys FS, path string, fields int) ([][]string, error) {
	data, err := readFile(fsys, path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, fmt.Errorf("checkpoint %s: bad header", path)
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("checkpoint %s: bad entry count", path)
	}
	out := make([][]string, 0, n)
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != fields {
			return nil, fmt.Errorf("checkpoint %s: bad entry %q", path, l)
		}
		out = append(out, f)
	}
	return out, nil
}

func readFile(fsys FS, path string) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, fi.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && n != len(buf) {
		return nil, err
	}
	return buf, nil
}

// partitionOffsets reads a data-dir checkpoint into a map.
func readPartitionOffsets(fsys FS, path string) (map[TopicPartition]int64, error) {
	entries, err := readCheckpoint(fsys, path, 3)
	if err != nil {
		return nil, err
	}
	m := make(map[TopicPartition]int64, len(entries))
	for _, e := range entries {
		p, err1 := strconv.ParseInt(e[1], 10, 32)
		off, err2 := strconv.ParseInt(e[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("checkpoint %s: bad entry %v", path, e)
		}
		m[TopicPartition{e[0], int32(p)}] = off
	}
	return m, nil
}

func writePartitionOffsets(fsys FS, path string, m map[TopicPartition]int64) error {
	lines := make([]string, 0, len(m))
	for tp, off := range m {
		lines = append(lines, fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, off))
	}
	return writeCheckpoint(fsys, path, lines)
}
