package log

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-broker/sluice/internal/vfs"
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
)

// writeCheckpoint atomically replaces path with the given entry lines.
func writeCheckpoint(fsys vfs.FS, path string, lines []string) error {
	return vfs.WriteFileAtomic(fsys, path, formatCheckpoint(lines), 0o644)
}

// formatCheckpoint returns the checkpoint text holding the entry lines.
func formatCheckpoint(lines []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// readCheckpoint returns the entry lines, split into fields, each with
// `fields` fields. A missing file is no entries; a malformed one an error.
func readCheckpoint(fsys vfs.FS, path string, fields int) ([][]string, error) {
	data, err := vfs.ReadFile(fsys, path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	out, err := parseCheckpoint(data, fields)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return out, nil
}

// parseCheckpoint splits checkpoint text into its entry lines, each split
// into exactly `fields` fields.
func parseCheckpoint(data []byte, fields int) ([][]string, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, errors.New("bad header")
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, errors.New("bad entry count")
	}
	out := make([][]string, 0, n)
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != fields {
			return nil, fmt.Errorf("bad entry %q", l)
		}
		out = append(out, f)
	}
	return out, nil
}

// readPartitionOffsets reads a data-dir checkpoint into a map.
func readPartitionOffsets(fsys vfs.FS, path string) (map[TopicPartition]int64, error) {
	data, err := vfs.ReadFile(fsys, path)
	if err != nil {
		if os.IsNotExist(err) {
			return map[TopicPartition]int64{}, nil
		}
		return nil, err
	}
	m, err := ParsePartitionOffsets(data)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return m, nil
}

// ParsePartitionOffsets parses checkpoint text whose entries are
// "<topic> <partition> <offset>" (recovery-point, log-start-offset and
// cleaner-offset checkpoints) into a map.
func ParsePartitionOffsets(data []byte) (map[TopicPartition]int64, error) {
	entries, err := parseCheckpoint(data, 3)
	if err != nil {
		return nil, err
	}
	m := make(map[TopicPartition]int64, len(entries))
	for _, e := range entries {
		p, err1 := strconv.ParseInt(e[1], 10, 32)
		off, err2 := strconv.ParseInt(e[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad entry %q", strings.Join(e, " "))
		}
		m[TopicPartition{e[0], int32(p)}] = off
	}
	return m, nil
}

// FormatPartitionOffsets returns the checkpoint text for m, entries sorted
// by topic and partition.
func FormatPartitionOffsets(m map[TopicPartition]int64) []byte {
	tps := make([]TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, m[tp])
	}
	return formatCheckpoint(lines)
}

func writePartitionOffsets(fsys vfs.FS, path string, m map[TopicPartition]int64) error {
	return vfs.WriteFileAtomic(fsys, path, FormatPartitionOffsets(m), 0o644)
}
