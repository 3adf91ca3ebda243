package topics

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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
func loadOrCreateIdentity(dir string, nodeID int32) (Identity, error) {
	path := filepath.Join(dir, MetaPropertiesFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		id := Identity{ClusterID: NewID().String(), NodeID: nodeID, DirectoryID: NewID()}
		var b bytes.Buffer
		fmt.Fprintf(&b, "#\n#%s\n", time.Now().UTC().Format(time.UnixDate))
		fmt.Fprintf(&b, "cluster.id=%s\ndirectory.id=%s\nnode.id=%d\nversion=1\n", id.ClusterID, id.DirectoryID, id.NodeID)
		if err := writeFileAtomic(dir, MetaPropertiesFile, b.Bytes()); err != nil {
			return Identity{}, err
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

// writeFileAtomic replaces dir/name with data durably: temp file, fsync,
// rename, fsync of the directory.
func writeFileAtomic(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("topics: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("topics: writing %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("topics: syncing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("topics: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("topics: %w", err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("topics: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("topics: syncing directory %s: %w", dir, err)
	}
	return nil
}
