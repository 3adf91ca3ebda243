package security

import "maps"

// Replace makes users (user → mechanism name → credential) the store's
// credentials, in memory only: a cluster node's credentials live in the
// cluster metadata, which it feeds to its store on every change; its
// credential file is neither read again nor written.
func (s *ScramStore) Replace(users map[string]map[string]ScramCredential) {
	next := make(map[string]map[string]ScramCredential, len(users))
	for u, mechs := range users {
		if len(mechs) > 0 {
			next[u] = maps.Clone(mechs)
		}
	}
	s.mu.Lock()
	s.users = next
	s.mu.Unlock()
}

// Snapshot returns a copy of every stored credential (user → mechanism
// name → credential).
func (s *ScramStore) Snapshot() map[string]map[string]ScramCredential {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]map[string]ScramCredential, len(s.users))
	for u, mechs := range s.users {
		out[u] = maps.Clone(mechs)
	}
	return out
}
