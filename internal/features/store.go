package features

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// FileName is the single-node store's file in the data directory.
const FileName = "features.json"

// fileFormat is features.json: the finalized levels and their epoch.
type fileFormat struct {
	Version int    `json:"version"`
	Epoch   int64  `json:"epoch"`
	Levels  Levels `json:"levels"`
}

// Store keeps a single node's finalized feature levels in
// <data-dir>/features.json (written with vfs.WriteFileAtomic). A data
// directory without the file has the default levels at epoch 0; every
// update increments the epoch (ApiVersions' FinalizedFeaturesEpoch).
type Store struct {
	fs   vfs.FS
	path string

	mu     sync.Mutex
	levels Levels
	epoch  int64
}

// Open reads the store of data directory dir.
func Open(fsys vfs.FS, dir string) (*Store, error) {
	s := &Store{fs: fsys, path: filepath.Join(dir, FileName), levels: Defaults()}
	data, err := vfs.ReadFile(fsys, s.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("features: reading %s: %w", s.path, err)
	}
	var f fileFormat
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("features: %s is damaged: %w", s.path, err)
	}
	if f.Version != 0 {
		return nil, fmt.Errorf("features: %s has unknown version %d", s.path, f.Version)
	}
	s.levels, s.epoch = WithDefaults(f.Levels), f.Epoch
	return s, nil
}

// Get returns the finalized levels (a copy) and their epoch.
func (s *Store) Get() (Levels, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.levels.Clone(), s.epoch
}

// Update applies updates (see Apply) and, unless validateOnly, stores the
// result durably before returning it. A *Error is a refusal; any other
// error a failed write (nothing changed).
func (s *Store) Update(updates []Update, validateOnly bool) (Levels, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, ferr := Apply(s.levels, updates)
	if ferr != nil {
		return nil, ferr
	}
	if validateOnly {
		return next, nil
	}
	data, err := json.Marshal(fileFormat{Epoch: s.epoch + 1, Levels: next})
	if err != nil {
		return nil, err
	}
	if err := vfs.WriteFileAtomic(s.fs, s.path, append(data, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("features: writing %s: %w", s.path, err)
	}
	s.levels, s.epoch = next, s.epoch+1
	return next.Clone(), nil
}
