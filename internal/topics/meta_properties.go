package topics

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// MetaPropertiesFile is Kafka's data-directory identity file.
const MetaPropertiesFile = "meta.properties"

// Identity is what meta.properties records about a data directory.
type Identity struct {
	ClusterID   string
	NodeID      int32
	DirectoryID ID
}

// loadOrCreateIdentity reads meta.properties in dir, or creates it with a new
// cluster id for nodeID. A node.id different from nodeID is an error, as in
// Kafka (the directory belongs to another node).
func loadOrCreateIdentity(fsys vfs.FS, dir string, nodeID int32) (Identity, error) {
	path := filepath.Join(dir, MetaPropertiesFile)
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		id := Identity{ClusterID: NewID().String(), NodeID: nodeID, DirectoryID: NewID()}
		var b bytes.Buffer
		fmt.Fprintf(&b, "#\n#%s\n", time.Now().UTC().Format(time.UnixDate))
		fmt.Fprintf(&b, "cluster.id=%s\ndirectory.id=%s\nnode.id=%d\nversion=1\n", id.ClusterID, id.DirectoryID, id.NodeID)
		if err := vfs.WriteFileAtomic(fsys, path, b.Bytes(), 0o644); err != nil {
			return Identity{}, fmt.Errorf("topics: %w", err)
		}
		return id, nil
	}
	if err != nil {
		return Identity{}, fmt.Errorf("topics: reading %s: %w", path, err)
	}
	props := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return Identity{}, fmt.Errorf("topics: %s: malformed line %q", path, line)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if v := props["version"]; v != "1" {
		return Identity{}, fmt.Errorf("topics: %s: unsupported version %q (want 1)", path, v)
	}
	id := Identity{ClusterID: props["cluster.id"]}
	if id.ClusterID == "" {
		return Identity{}, fmt.Errorf("topics: %s: missing cluster.id", path)
	}
	n, err := strconv.ParseInt(props["node.id"], 10, 32)
	if err != nil {
		return Identity{}, fmt.Errorf("topics: %s: bad node.id %q", path, props["node.id"])
	}
	id.NodeID = int32(n)
	if id.NodeID != nodeID {
		return Identity{}, fmt.Errorf("topics: stored node.id %d in %s doesn't match configured node.id %d", id.NodeID, path, nodeID)
	}
	if s := props["directory.id"]; s != "" {
		if id.DirectoryID, err = ParseID(s); err != nil {
			return Identity{}, fmt.Errorf("topics: %s: %v", path, err)
		}
	}
	return id, nil
}
