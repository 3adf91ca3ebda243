package log

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// TestQuorumDirNotReportedAsStray: loading a cluster node's data directory
// passes over the metadata quorum's directory silently, and still warns of
// another directory that is not a partition's.
func TestQuorumDirNotReportedAsStray(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{QuorumDir, "stray"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	m, err := OpenManager(vfs.OS(), dir, ManagerOptions{Logger: slog.New(slog.NewTextHandler(&out, nil)), HousekeepingInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	logs := out.String()
	if strings.Contains(logs, "dir="+QuorumDir) {
		t.Fatalf("the quorum directory reported as stray:\n%s", logs)
	}
	if !strings.Contains(logs, "dir=stray") {
		t.Fatalf("a stray directory not reported:\n%s", logs)
	}
}
