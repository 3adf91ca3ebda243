package compact

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
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

func readCheckpoint(fsys vfs.FS, dir string) (map[log.TopicPartition]int64, error) {
	data, err := vfs.ReadFile(fsys, filepath.Join(dir, CheckpointFile))
	if err != nil {
		if os.IsNotExist(err) {
			return map[log.TopicPartition]int64{}, nil
		}
		return nil, err
	}
	return parseCheckpoint(data)
}

// parseCheckpoint parses the file's text; unlike the log's checkpoints it
// also refuses negative partitions and offsets.
func parseCheckpoint(data []byte) (map[log.TopicPartition]int64, error) {
	m, err := log.ParsePartitionOffsets(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CheckpointFile, err)
	}
	for tp, off := range m {
		if tp.Partition < 0 || off < 0 {
			return nil, fmt.Errorf("%s: bad entry \"%s %d %d\"", CheckpointFile, tp.Topic, tp.Partition, off)
		}
	}
	return m, nil
}

func formatCheckpoint(m map[log.TopicPartition]int64) []byte {
	return log.FormatPartitionOffsets(m)
}

func writeCheckpoint(fsys vfs.FS, dir string, m map[log.TopicPartition]int64) error {
	return vfs.WriteFileAtomic(fsys, filepath.Join(dir, CheckpointFile), formatCheckpoint(m), 0o644)
}
