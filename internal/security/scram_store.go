package security

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// ScramCredentialsFile is the file in the data directory holding the SCRAM
// credentials: JSON, {"version":1,"users":{"<user>":{"SCRAM-SHA-256":
// {"salt":..., "stored_key":..., "server_key":..., "iterations":N}}}}, with
// base64 byte fields. It holds no password and no salted password, only
// what RFC 5802 has the server keep. It is replaced atomically (temporary
// file, fsync, rename, fsync of the directory) and readable by its owner
// only.
const ScramCredentialsFile = "scram-credentials.json"

const scramFileVersion = 1

type scramFile struct {
	Version int                                   `json:"version"`
	Users   map[string]map[string]ScramCredential `json:"users"`
}

// ScramStore holds the SCRAM credentials of the broker's users, keyed by
// user and mechanism. It is safe for concurrent use; a nil *ScramStore has
// no credentials.
type ScramStore struct {
	fs   vfs.FS
	path string

	mu    sync.RWMutex
	users map[string]map[string]ScramCredential // user → mechanism name → credential
}

// OpenScramStore reads the credentials kept in dir on fsys (none if the file
// does not exist yet).
func OpenScramStore(fsys vfs.FS, dir string) (*ScramStore, error) {
	s := &ScramStore{fs: fsys, path: filepath.Join(dir, ScramCredentialsFile), users: map[string]map[string]ScramCredential{}}
	data, err := vfs.ReadFile(fsys, s.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("security: reading SCRAM credentials: %w", err)
	}
	var f scramFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("security: %s is corrupt: %w", s.path, err)
	}
	if f.Version != scramFileVersion {
		return nil, fmt.Errorf("security: %s has version %d; this Sluice reads version %d", s.path, f.Version, scramFileVersion)
	}
	for user, mechs := range f.Users {
		for name, c := range mechs {
			m, ok := ScramMechanismByName(name)
			if !ok || len(c.StoredKey) != m.hash().Size() || len(c.ServerKey) != m.hash().Size() || c.Iterations <= 0 {
				return nil, fmt.Errorf("security: %s: bad %s credential for user %q", s.path, name, user)
			}
		}
		s.users[user] = mechs
	}
	return s, nil
}

// Lookup returns user's credential for m.
func (s *ScramStore) Lookup(user string, m ScramMechanism) (ScramCredential, bool) {
	if s == nil {
		return ScramCredential{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.users[user][m.Name]
	return c, ok
}

// ScramInfo describes one stored credential (DescribeUserScramCredentials).
type ScramInfo struct {
	Mechanism  ScramMechanism
	Iterations int
}

// Describe returns user's credentials, SHA-256 first; ok is false for a user
// without any.
func (s *ScramStore) Describe(user string) ([]ScramInfo, bool) {
	if s == nil {
		return nil, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	mechs, ok := s.users[user]
	if !ok || len(mechs) == 0 {
		return nil, false
	}
	var out []ScramInfo
	for _, m := range []ScramMechanism{ScramSHA256, ScramSHA512} {
		if c, ok := mechs[m.Name]; ok {
			out = append(out, ScramInfo{Mechanism: m, Iterations: c.Iterations})
		}
	}
	return out, true
}

// Users returns the users with at least one credential, sorted.
func (s *ScramStore) Users() []string {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.users))
}

// ScramChange is one upsertion or deletion.
type ScramChange struct {
	User       string
	Mechanism  ScramMechanism
	Delete     bool
	Credential ScramCredential // for an upsertion
}

// Apply makes every change durable, then visible: all of them or (on an
// error writing the file) none. Deleting a missing credential is a no-op.
// User names must be valid UTF-8 (the file is JSON).
func (s *ScramStore) Apply(changes []ScramChange) error {
	if len(changes) == 0 {
		return nil
	}
	for _, c := range changes {
		if !utf8.ValidString(c.User) {
			return fmt.Errorf("security: SCRAM user name %q is not valid UTF-8", c.User)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]map[string]ScramCredential, len(s.users))
	for u, mechs := range s.users {
		next[u] = maps.Clone(mechs)
	}
	for _, c := range changes {
		if c.Delete {
			delete(next[c.User], c.Mechanism.Name)
			if len(next[c.User]) == 0 {
				delete(next, c.User)
			}
			continue
		}
		if next[c.User] == nil {
			next[c.User] = map[string]ScramCredential{}
		}
		next[c.User][c.Mechanism.Name] = c.Credential
	}
	data, err := json.MarshalIndent(scramFile{Version: scramFileVersion, Users: next}, "", "  ")
	if err != nil {
		return err
	}
	// Readable by its owner only; a leftover temporary file is removed,
	// never reused or written through.
	err = vfs.WriteFileAtomic(s.fs, s.path, append(data, '\n'), 0o600)
	if err == nil || errors.Is(err, vfs.ErrNotDurable) {
		// The new file is in place: it is the state now, even if syncing
		// the directory failed (reported: the rename may not survive a
		// power loss).
		s.users = next
	}
	if err != nil {
		return fmt.Errorf("security: writing SCRAM credentials: %w", err)
	}
	return nil
}
