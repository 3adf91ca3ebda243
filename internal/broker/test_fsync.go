// A test-only file system mode for the fault checker's lose-unfsynced fault
// (sluice.test.fsync.shadow.dir, docs/reliability.md): off by default.
//
// With sluice.test.fsync.shadow.dir set, every file the broker writes in
// its data directory goes through vfs.Shadow, which keeps under that
// directory a copy of the data directory as of each file's last fsync
// (vfs.ShadowPath). The fault checker kills the broker, replaces the data
// directory with the copy and starts it again: the broker then finds what
// a machine crash would have left of its un-fsynced writes.
package broker

import (
	"path/filepath"
	"strings"

	"github.com/sluice-broker/sluice/internal/vfs"
)

const testFsyncShadowConfig = "sluice.test.fsync.shadow.dir"

// installFsyncShadow wraps o.FS in a vfs.Shadow of dataDir when the config
// asks for it (and logs loudly that it does).
func (s *Server) installFsyncShadow(b *Broker, dataDir string) error {
	o := &s.opts
	dir := strings.TrimSpace(o.Config.Raw[testFsyncShadowConfig])
	if dir == "" {
		return nil
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	sh, err := vfs.NewShadow(o.FS, dataDir, dir)
	if err != nil {
		return err
	}
	o.FS, b.fs = sh, sh
	o.Logger.Warn("test-only fsync shadow is on ("+testFsyncShadowConfig+"): a copy of the data directory as of each file's last fsync is kept; never use it in production",
		"copy", vfs.ShadowPath(dir, dataDir))
	return nil
}
