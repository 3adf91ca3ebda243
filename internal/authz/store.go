package authz

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// ACLsFile is the file of the data directory holding the ACL bindings of a
// single node: JSON, {"version":1,"acls":[{...binding...}, ...]} with
// Kafka's numeric codes, replaced atomically.
const ACLsFile = "acls.json"

const aclsFileVersion = 1

type aclsFile struct {
	Version int       `json:"version"`
	ACLs    []Binding `json:"acls"`
}

// FileStore keeps the bindings in ACLsFile of a directory.
type FileStore struct {
	fs   vfs.FS
	path string
}

// OpenFileStore reads the bindings kept in dir on fsys (none if the file
// does not exist yet) and returns the store that persists later changes.
func OpenFileStore(fsys vfs.FS, dir string) (*FileStore, []Binding, error) {
	s := &FileStore{fs: fsys, path: filepath.Join(dir, ACLsFile)}
	data, err := vfs.ReadFile(fsys, s.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("authz: reading ACLs: %w", err)
	}
	var f aclsFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, nil, fmt.Errorf("authz: %s is corrupt: %w", s.path, err)
	}
	if f.Version != aclsFileVersion {
		return nil, nil, fmt.Errorf("authz: %s has version %d; this Sluice reads version %d", s.path, f.Version, aclsFileVersion)
	}
	for _, b := range f.ACLs {
		if err := b.Validate(); err != nil {
			return nil, nil, fmt.Errorf("authz: %s: bad ACL %s: %w", s.path, b, err)
		}
	}
	return s, f.ACLs, nil
}

// Persist replaces the file with all. A rename that could not be synced
// (vfs.ErrNotDurable) is an error: the caller keeps the old set visible,
// and the next change rewrites the file anyway.
func (s *FileStore) Persist(all []Binding) error {
	if all == nil {
		all = []Binding{}
	}
	data, err := json.MarshalIndent(aclsFile{Version: aclsFileVersion, ACLs: all}, "", "  ")
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(s.fs, s.path, append(data, '\n'), 0o600)
}
