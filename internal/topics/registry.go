package topics

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// TopicsFile is the name of the topic metadata file in the data directory.
const TopicsFile = "sluice-topics.json"

// fileVersion is the version of the TopicsFile document this code writes.
const fileVersion = 1

var (
	// ErrExists is returned by Create for a name (or id) already present.
	ErrExists = errors.New("topics: topic already exists")
	// ErrNotFound is returned for an unknown topic.
	ErrNotFound = errors.New("topics: unknown topic")
)

// Topic is one topic's metadata. A *Topic obtained from the Registry is an
// immutable snapshot: never modify it (Update hands you a copy).
type Topic struct {
	Name       string
	ID         ID
	Partitions int32
	// Configs holds the topic-level config overrides (Kafka names).
	Configs map[string]string
}

func (t *Topic) clone() *Topic {
	c := *t
	c.Configs = maps.Clone(t.Configs)
	if c.Configs == nil {
		c.Configs = map[string]string{}
	}
	return &c
}

type snapshot struct {
	byName map[string]*Topic
	byID   map[ID]*Topic
}

// Registry is the set of topics, persisted in the data directory.
type Registry struct {
	fs      vfs.FS
	dir     string
	ident   Identity
	existed bool

	mu   sync.Mutex // serialises writers
	snap atomic.Pointer[snapshot]
}

// Open loads (or initialises) the metadata of the data directory dir on fsys.
func Open(fsys vfs.FS, dir string, nodeID int32) (*Registry, error) {
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	ident, err := loadOrCreateIdentity(fsys, dir, nodeID)
	if err != nil {
		return nil, err
	}
	r := &Registry{fs: fsys, dir: dir, ident: ident}
	s := &snapshot{byName: map[string]*Topic{}, byID: map[ID]*Topic{}}
	data, err := vfs.ReadFile(fsys, filepath.Join(dir, TopicsFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("topics: %w", err)
	default:
		r.existed = true
		if s, err = decode(data); err != nil {
			return nil, fmt.Errorf("topics: %s: %w", filepath.Join(dir, TopicsFile), err)
		}
	}
	fsys.Remove(filepath.Join(dir, TopicsFile+vfs.TmpSuffix)) // leftover of an interrupted write
	r.snap.Store(s)
	return r, nil
}

// Identity returns the data directory's identity (cluster id, node id).
func (r *Registry) Identity() Identity { return r.ident }

// ClusterID returns the cluster id generated when the directory was first used.
func (r *Registry) ClusterID() string { return r.ident.ClusterID }

// HadMetadata reports whether a topic metadata file existed when the
// registry was opened (false for a fresh or pre-metadata directory).
func (r *Registry) HadMetadata() bool { return r.existed }

// Get returns the topic named name.
func (r *Registry) Get(name string) (*Topic, bool) {
	t, ok := r.snap.Load().byName[name]
	return t, ok
}

// ByID returns the topic with id.
func (r *Registry) ByID(id ID) (*Topic, bool) {
	t, ok := r.snap.Load().byID[id]
	return t, ok
}

// List returns every topic sorted by name.
func (r *Registry) List() []*Topic {
	s := r.snap.Load()
	out := make([]*Topic, 0, len(s.byName))
	for _, t := range s.byName {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Topic) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Len returns the number of topics.
func (r *Registry) Len() int { return len(r.snap.Load().byName) }

// TotalPartitions returns the number of partitions over all topics.
func (r *Registry) TotalPartitions() int {
	n := 0
	for _, t := range r.snap.Load().byName {
		n += int(t.Partitions)
	}
	return n
}

// Create adds t (a zero ID gets a fresh one) and persists the registry. It
// returns the published topic.
func (r *Registry) Create(t Topic) (*Topic, error) {
	if err := ValidateName(t.Name); err != nil {
		return nil, err
	}
	if t.Partitions <= 0 {
		return nil, fmt.Errorf("topics: %d partitions", t.Partitions)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	if _, ok := old.byName[t.Name]; ok {
		return nil, ErrExists
	}
	nt := t.clone()
	if nt.ID.IsZero() {
		for {
			nt.ID = NewID()
			if _, ok := old.byID[nt.ID]; !ok {
				break
			}
		}
	} else if _, ok := old.byID[nt.ID]; ok {
		return nil, ErrExists
	}
	s := old.with(nt, "")
	if err := r.persist(s); err != nil {
		return nil, err
	}
	r.snap.Store(s)
	return nt, nil
}

// Delete removes the topic named name and persists the registry. It returns
// the removed topic.
func (r *Registry) Delete(name string) (*Topic, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	t, ok := old.byName[name]
	if !ok {
		return nil, ErrNotFound
	}
	s := old.with(nil, name)
	if err := r.persist(s); err != nil {
		return nil, err
	}
	r.snap.Store(s)
	return t, nil
}

// Update applies fn to a copy of the topic named name and, if fn succeeds,
// persists and publishes the copy. The name and id cannot change.
func (r *Registry) Update(name string, fn func(t *Topic) error) (*Topic, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	t, ok := old.byName[name]
	if !ok {
		return nil, ErrNotFound
	}
	nt := t.clone()
	if err := fn(nt); err != nil {
		return nil, err
	}
	if nt.Name != t.Name || nt.ID != t.ID {
		return nil, errors.New("topics: Update may not change a topic's name or id")
	}
	if nt.Partitions <= 0 {
		return nil, fmt.Errorf("topics: %d partitions", nt.Partitions)
	}
	s := old.with(nt, "")
	if err := r.persist(s); err != nil {
		return nil, err
	}
	r.snap.Store(s)
	return nt, nil
}

// with returns a copy of s with t added/replaced (if non-nil) and the topic
// named remove removed (if non-empty).
func (s *snapshot) with(t *Topic, remove string) *snapshot {
	n := &snapshot{byName: maps.Clone(s.byName), byID: maps.Clone(s.byID)}
	if remove != "" {
		if old, ok := n.byName[remove]; ok {
			delete(n.byName, remove)
			delete(n.byID, old.ID)
		}
	}
	if t != nil {
		if old, ok := n.byName[t.Name]; ok {
			delete(n.byID, old.ID)
		}
		n.byName[t.Name] = t
		n.byID[t.ID] = t
	}
	return n
}

type fileDoc struct {
	Version int         `json:"version"`
	Topics  []fileTopic `json:"topics"`
}

type fileTopic struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

func (r *Registry) persist(s *snapshot) error {
	doc := fileDoc{Version: fileVersion, Topics: []fileTopic{}}
	for _, t := range s.byName {
		doc.Topics = append(doc.Topics, fileTopic{Name: t.Name, ID: t.ID.String(), Partitions: t.Partitions, Configs: t.Configs})
	}
	slices.SortFunc(doc.Topics, func(a, b fileTopic) int { return strings.Compare(a.Name, b.Name) })
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("topics: %w", err)
	}
	if err := vfs.WriteFileAtomic(r.fs, filepath.Join(r.dir, TopicsFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("topics: %w", err)
	}
	return nil
}

func decode(data []byte) (*snapshot, error) {
	var doc fileDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("corrupt metadata: %w", err)
	}
	if doc.Version != fileVersion {
		return nil, fmt.Errorf("unsupported metadata version %d (this build reads %d)", doc.Version, fileVersion)
	}
	s := &snapshot{byName: map[string]*Topic{}, byID: map[ID]*Topic{}}
	for _, ft := range doc.Topics {
		if err := ValidateName(ft.Name); err != nil {
			return nil, fmt.Errorf("corrupt metadata: %v", err)
		}
		id, err := ParseID(ft.ID)
		if err != nil || id.IsZero() {
			return nil, fmt.Errorf("corrupt metadata: topic %q: bad id %q", ft.Name, ft.ID)
		}
		if ft.Partitions <= 0 {
			return nil, fmt.Errorf("corrupt metadata: topic %q: %d partitions", ft.Name, ft.Partitions)
		}
		if _, dup := s.byName[ft.Name]; dup {
			return nil, fmt.Errorf("corrupt metadata: topic %q listed twice", ft.Name)
		}
		if _, dup := s.byID[id]; dup {
			return nil, fmt.Errorf("corrupt metadata: topic id %s listed twice", ft.ID)
		}
		t := &Topic{Name: ft.Name, ID: id, Partitions: ft.Partitions, Configs: ft.Configs}
		if t.Configs == nil {
			t.Configs = map[string]string{}
		}
		s.byName[t.Name] = t
		s.byID[id] = t
	}
	return s, nil
}
