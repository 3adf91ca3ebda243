package log

// Partitions left unrecovered by a clean shutdown. After an unclean
// shutdown a log is recovered on its first use or by the background loader
// (deferred.go); a broker stopped cleanly before that has reached every log
// still has logs to recover. Rather than withholding the clean-shutdown
// marker (which would make the next start recover every partition again,
// and tell the controller that the shutdown was unclean when nothing was
// written since the last start), Close lists those logs with their
// recovery points in .sluice_unrecovered before it writes the marker, and
// the next start recovers them only: the others are entered as after any
// clean shutdown. The list is honoured only with the marker, and removed
// at start once the marker is.

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/sluice-broker/sluice/internal/vfs"
)

const unrecoveredFile = ".sluice_unrecovered"

// readUnrecovered reads the list a clean shutdown left (empty without one).
func readUnrecovered(fsys vfs.FS, dataDir string) (*Offsets, error) {
	return readPartitionOffsets(fsys, filepath.Join(dataDir, unrecoveredFile))
}

// writeUnrecovered lists, before the clean-shutdown marker is written, the
// logs not recovered since an unclean start (none: the list is removed).
func (m *Manager) writeUnrecovered(logs *Offsets) error {
	if logs.Len() == 0 {
		return removeUnrecovered(m.fs, m.dir)
	}
	if err := writePartitionOffsets(m.fs, filepath.Join(m.dir, unrecoveredFile), logs); err != nil {
		return storageErr("unrecovered partitions list", err)
	}
	m.logger.Info("partitions not recovered since the unclean start are recovered at the next start", "partitions", logs.Len())
	return nil
}

// removeUnrecovered removes the list, if there is one, and syncs the
// directory when it did.
func removeUnrecovered(fsys vfs.FS, dataDir string) error {
	err := fsys.Remove(filepath.Join(dataDir, unrecoveredFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return fsys.SyncDir(dataDir)
}
