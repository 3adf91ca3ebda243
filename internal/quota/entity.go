package quota

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"sort"
	"strings"
)

// Kafka's quota entity types.
const (
	EntityUser     = "user"
	EntityClientID = "client-id"
	EntityIP       = "ip"
)

// Kafka's quota keys.
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
	ConnectionCreationRate = "connection_creation_rate"
)

// keyType is a quota key's type in Kafka's QuotaConfig.
type keyType int

const (
	typeLong keyType = iota
	typeInt
	typeDouble
)

var userClientKeys = map[string]keyType{
	ProducerByteRate:       typeLong,
	ConsumerByteRate:       typeLong,
	RequestPercentage:      typeDouble,
	ControllerMutationRate: typeDouble,
}

var ipKeys = map[string]keyType{ConnectionCreationRate: typeInt}

// Part is one component of an entity: absent (Set false), the default
// (Set and Default), or a name.
type Part struct {
	Set     bool
	Default bool
	Name    string
}

// Named returns the part naming name.
func Named(name string) Part { return Part{Set: true, Name: name} }

// DefaultPart returns the default part.
func DefaultPart() Part { return Part{Set: true, Default: true} }

func (p Part) String() string {
	if p.Default {
		return "<default>"
	}
	return p.Name
}

// Entity is a quota entity: a user, a client id, both, or an ip, each a
// name or the default.
type Entity struct {
	User, ClientID, IP Part
}

// Component is one (type, name) pair of an entity on the wire; a nil
// Name is the default.
type Component struct {
	Type string
	Name *string
}

// ParseEntity builds and validates an entity from its wire components,
// with Apache Kafka's controller's messages.
func ParseEntity(comps []Component) (Entity, error) {
	var e Entity
	if len(comps) == 0 {
		return e, errors.New("Invalid empty client quota entity")
	}
	for _, c := range comps {
		var p *Part
		switch c.Type {
		case EntityUser:
			p = &e.User
		case EntityClientID:
			p = &e.ClientID
		case EntityIP:
			p = &e.IP
		default:
			return e, fmt.Errorf("Unhandled client quota entity type: %s", c.Type)
		}
		if p.Set {
			return e, fmt.Errorf("Invalid client quota entity, duplicate entity entry %s", c.Type)
		}
		switch {
		case c.Name == nil:
			*p = DefaultPart()
		case *c.Name == "":
			return e, fmt.Errorf("Empty %s not supported", c.Type)
		default:
			*p = Named(*c.Name)
		}
	}
	if e.IP.Set && (e.User.Set || e.ClientID.Set) {
		return e, errors.New("Invalid quota entity combination, IP entity should not be combined with User or ClientId")
	}
	if e.IP.Set && !e.IP.Default && net.ParseIP(e.IP.Name) == nil {
		return e, fmt.Errorf("%s is not a valid IP or resolvable host.", e.IP.Name)
	}
	return e, nil
}

// Components returns the entity's wire components, in Kafka's order
// (user, client-id, ip).
func (e Entity) Components() []Component {
	var out []Component
	add := func(typ string, p Part) {
		if !p.Set {
			return
		}
		c := Component{Type: typ}
		if !p.Default {
			n := p.Name
			c.Name = &n
		}
		out = append(out, c)
	}
	add(EntityUser, e.User)
	add(EntityClientID, e.ClientID)
	add(EntityIP, e.IP)
	return out
}

// String renders the entity for messages and logs
// ("user=alice, client-id=<default>").
func (e Entity) String() string {
	var parts []string
	for _, c := range e.Components() {
		n := "<default>"
		if c.Name != nil {
			n = *c.Name
		}
		parts = append(parts, c.Type+"="+n)
	}
	return strings.Join(parts, ", ")
}

// Key is the entity's stable text form, used as the key of the stored
// quotas: "user/<name>/client-id/<name>" with names path-escaped and the
// default written "<default>" (which no escaped name can be).
func (e Entity) Key() string {
	var sb strings.Builder
	for _, c := range e.Components() {
		if sb.Len() > 0 {
			sb.WriteByte('/')
		}
		sb.WriteString(c.Type)
		sb.WriteByte('/')
		if c.Name == nil {
			sb.WriteString("<default>")
		} else {
			sb.WriteString(url.PathEscape(*c.Name))
		}
	}
	return sb.String()
}

// ParseKey reverses Key.
func ParseKey(key string) (Entity, error) {
	f := strings.Split(key, "/")
	if len(f)%2 != 0 || len(f) == 0 {
		return Entity{}, fmt.Errorf("quota: bad entity key %q", key)
	}
	var comps []Component
	for i := 0; i < len(f); i += 2 {
		c := Component{Type: f[i]}
		if f[i+1] != "<default>" {
			n, err := url.PathUnescape(f[i+1])
			if err != nil {
				return Entity{}, fmt.Errorf("quota: bad entity key %q: %v", key, err)
			}
			c.Name = &n
		}
		comps = append(comps, c)
	}
	return ParseEntity(comps)
}

// ValidateValue checks one quota key and value for the entity, as Kafka's
// controller does (INVALID_REQUEST messages).
func ValidateValue(e Entity, key string, value float64) error {
	keys := userClientKeys
	if e.IP.Set {
		keys = ipKeys
	}
	typ, ok := keys[key]
	if !ok {
		return fmt.Errorf("Invalid configuration key %s", key)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return fmt.Errorf("Quota %s must be a finite number", key)
	}
	if value <= 0 {
		return fmt.Errorf("Quota %s must be greater than 0", key)
	}
	switch typ {
	case typeInt:
		if value > math.MaxInt32 {
			return fmt.Errorf("Proposed value for %s is too large for an INT.", key)
		}
	case typeLong:
		if value > math.MaxInt64 {
			return fmt.Errorf("Proposed value for %s is too large for a LONG.", key)
		}
	case typeDouble:
		return nil
	}
	if value != math.Trunc(value) {
		return fmt.Errorf("%s cannot be a fractional value.", key)
	}
	return nil
}

// Quotas are the stored quotas: entity key → quota key → value. Never
// modified once shared; Apply returns a new one.
type Quotas map[string]map[string]float64

// Op is one alteration of an entity's quota: set Key to Value, or remove it.
type Op struct {
	Key    string  `json:"key"`
	Value  float64 `json:"value,omitempty"`
	Remove bool    `json:"remove,omitempty"`
}

// Alter returns the entity's quota set after ops (nil when none is left).
func Alter(cur map[string]float64, ops []Op) map[string]float64 {
	next := make(map[string]float64, len(cur)+len(ops))
	for k, v := range cur {
		next[k] = v
	}
	for _, op := range ops {
		if op.Remove {
			delete(next, op.Key)
		} else {
			next[op.Key] = op.Value
		}
	}
	if len(next) == 0 {
		return nil
	}
	return next
}

// SortedKeys returns the entity keys of q in order.
func (q Quotas) SortedKeys() []string {
	out := make([]string, 0, len(q))
	for k := range q {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
