package log

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
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

// readPartitionOffsets reads a data-dir checkpoint of "<topic> <partition>
// <offset>" entries (a missing file: none).
func readPartitionOffsets(fsys vfs.FS, path string) (*Offsets, error) {
	data, err := vfs.ReadFile(fsys, path)
	if err != nil {
		if os.IsNotExist(err) {
			return NewOffsets(), nil
		}
		return nil, err
	}
	o, err := ParseOffsets(data, false)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return o, nil
}

// ParsePartitionOffsets parses checkpoint text whose entries are
// "<topic> <partition> <offset>" (recovery-point, log-start-offset and
// cleaner-offset checkpoints) into a map.
func ParsePartitionOffsets(data []byte) (map[TopicPartition]int64, error) {
	o, err := ParseOffsets(data, false)
	if err != nil {
		return nil, err
	}
	return o.Map(), nil
}

// FormatPartitionOffsets returns the checkpoint text for m, entries sorted
// by topic and partition.
func FormatPartitionOffsets(m map[TopicPartition]int64) []byte { return OffsetsOf(m).Format() }

func writePartitionOffsets(fsys vfs.FS, path string, o *Offsets) error {
	return vfs.WriteFileAtomic(fsys, path, o.Format(), 0o644)
}
