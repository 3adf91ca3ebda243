package metadata

import "maps"

// ScramCredential is what the cluster keeps of a user's SCRAM password
// (RFC 5802): the salt, the iteration count and the stored and server
// keys; never the password nor the salted password.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int    `json:"iterations"`
}

// applyScram applies SetScramCredential: User's credential for Mechanism
// (a SCRAM mechanism name) becomes Scram, or is removed when Scram is nil
// (a user without credentials is removed). ok is false for any other
// record type.
func (b *builder) applyScram(r Record) (why string, ok bool) {
	if r.Type != SetScramCredential {
		return "", false
	}
	if r.User == "" || r.Mechanism == "" {
		return "no user or mechanism", true
	}
	im := b.im
	next := maps.Clone(im.Scram) // copied per record: credential changes are rare
	if next == nil {
		next = map[string]map[string]ScramCredential{}
	}
	mechs := maps.Clone(next[r.User])
	if mechs == nil {
		mechs = map[string]ScramCredential{}
	}
	if r.Scram == nil {
		delete(mechs, r.Mechanism)
	} else {
		mechs[r.Mechanism] = *r.Scram
	}
	if len(mechs) == 0 {
		delete(next, r.User)
	} else {
		next[r.User] = mechs
	}
	im.Scram = next
	return "", true
}
