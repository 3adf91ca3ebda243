package topics

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// MaxNameLength is the longest legal topic name (Kafka's limit).
const MaxNameLength = 249

// ValidateName checks a topic name as Kafka does: 1–249 characters of
// [a-zA-Z0-9._-], and not "." or "..".
func ValidateName(name string) error {
	switch {
	case name == "":
		return errors.New("topic name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is illegal, it cannot be '.' or '..'", name)
	case len(name) > MaxNameLength:
		return fmt.Errorf("topic name is illegal, it can't be longer than %d characters, topic name: %.40s...", MaxNameLength, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// IsInternal reports whether name is one of Kafka's internal topics.
func IsInternal(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state" || name == "__share_group_state"
}

// HasCollisionChars reports whether name contains '.' or '_', which Kafka
// treats as equivalent in metric names (it warns about, and refuses, topics
// that collide only by them).
func HasCollisionChars(name string) bool { return strings.ContainsAny(name, "._") }

// UnifyCollisionChars maps '.' to '_' (Kafka's topic collision rule).
func UnifyCollisionChars(name string) string { return strings.ReplaceAll(name, ".", "_") }

// ID is a Kafka Uuid (topic ids, cluster ids, directory ids).
type ID [16]byte

// String returns the id in Kafka's form: base64url without padding, 22 chars.
func (id ID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// IsZero reports whether id is the zero Uuid (Kafka's "no id").
func (id ID) IsZero() bool { return id == ID{} }

// ParseID parses the 22-character base64url form.
func ParseID(s string) (ID, error) {
	var id ID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("invalid uuid %q", s)
	}
	copy(id[:], b)
	return id, nil
}

// NewID returns a random id as Kafka generates them: a version-4 UUID that is
// neither the zero id nor the reserved metadata-topic id (0…01), and whose
// string form does not start with '-' (so it can't be taken for a flag).
func NewID() ID {
	for {
		var id ID
		if _, err := rand.Read(id[:]); err != nil {
			panic("crypto/rand failed: " + err.Error()) // never happens on supported platforms
		}
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if id.IsZero() || id == (ID{15: 1}) || id.String()[0] == '-' {
			continue
		}
		return id
	}
}
