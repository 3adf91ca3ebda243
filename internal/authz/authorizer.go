package authz

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Store keeps the bindings durably. Persist is given the complete next set
// (sorted) and must have made it durable when it returns nil.
type Store interface {
	Persist(all []Binding) error
}

// Config is the static configuration of an Authorizer.
type Config struct {
	// SuperUsers are principals ("User:admin") allowed everything.
	SuperUsers []string
	// AllowIfNoACL is allow.everyone.if.no.acl.found.
	AllowIfNoACL bool
}

// Authorizer decides requests from a snapshot of the bindings. It is safe
// for concurrent use.
type Authorizer struct {
	super        map[string]bool
	allowIfNoACL bool
	store        Store

	mu   sync.Mutex // serialises Apply and Replace
	snap atomic.Pointer[snapshot]
}

// snapshot is an immutable set of bindings indexed for lookups.
type snapshot struct {
	all []Binding // sorted, no duplicates
	// literal[type][name] and prefixed[type] hold the bindings of each
	// resource type by pattern.
	literal  map[ResourceType]map[string][]Binding
	prefixed map[ResourceType][]Binding
}

// New returns an authorizer holding initial (validated by the caller or
// read back from its store) that persists changes through store (nil: none).
func New(cfg Config, initial []Binding, store Store) *Authorizer {
	a := &Authorizer{super: map[string]bool{}, allowIfNoACL: cfg.AllowIfNoACL, store: store}
	for _, u := range cfg.SuperUsers {
		if u = strings.TrimSpace(u); u != "" {
			a.super[u] = true
		}
	}
	a.snap.Store(buildSnapshot(initial))
	return a
}

func compareBindings(x, y Binding) int {
	if c := int(x.ResourceType) - int(y.ResourceType); c != 0 {
		return c
	}
	if c := strings.Compare(x.ResourceName, y.ResourceName); c != 0 {
		return c
	}
	if c := int(x.PatternType) - int(y.PatternType); c != 0 {
		return c
	}
	if c := strings.Compare(x.Principal, y.Principal); c != 0 {
		return c
	}
	if c := strings.Compare(x.Host, y.Host); c != 0 {
		return c
	}
	if c := int(x.Operation) - int(y.Operation); c != 0 {
		return c
	}
	return int(x.Permission) - int(y.Permission)
}

func buildSnapshot(bs []Binding) *snapshot {
	all := slices.Clone(bs)
	slices.SortFunc(all, compareBindings)
	all = slices.Compact(all)
	s := &snapshot{all: all, literal: map[ResourceType]map[string][]Binding{}, prefixed: map[ResourceType][]Binding{}}
	for _, b := range all {
		switch b.PatternType {
		case PatternLiteral:
			m := s.literal[b.ResourceType]
			if m == nil {
				m = map[string][]Binding{}
				s.literal[b.ResourceType] = m
			}
			m[b.ResourceName] = append(m[b.ResourceName], b)
		case PatternPrefixed:
			s.prefixed[b.ResourceType] = append(s.prefixed[b.ResourceType], b)
		}
	}
	return s
}

// Bindings returns every binding, sorted by resource then entry.
func (a *Authorizer) Bindings() []Binding { return slices.Clone(a.snap.Load().all) }

// Select returns the bindings f matches, sorted.
func (a *Authorizer) Select(f Filter) []Binding {
	var out []Binding
	for _, b := range a.snap.Load().all {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// IsSuperUser reports whether principal is listed in super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.super[principal] }

// Apply adds and removes bindings as one batch: the next set is the current
// one plus add minus remove (adding a present binding and removing an absent
// one are no-ops). It is persisted through the store, then published. On a
// store error nothing changes (the error is returned).
func (a *Authorizer) Apply(add, remove []Binding) error {
	if len(add) == 0 && len(remove) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := a.snap.Load().all
	gone := make(map[Binding]bool, len(remove))
	for _, b := range remove {
		gone[b] = true
	}
	next := make([]Binding, 0, len(cur)+len(add))
	for _, b := range cur {
		if !gone[b] {
			next = append(next, b)
		}
	}
	next = append(next, add...)
	return a.publish(next)
}

// Replace swaps the whole set (loading a metadata snapshot), persisting it
// first as Apply does.
func (a *Authorizer) Replace(all []Binding) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.publish(all)
}

func (a *Authorizer) publish(next []Binding) error {
	s := buildSnapshot(next)
	if a.store != nil {
		if err := a.store.Persist(s.all); err != nil {
			return fmt.Errorf("authz: persisting ACLs: %w", err)
		}
	}
	a.snap.Store(s)
	return nil
}

// Request is who asks: principal ("User:alice") and client host (an IP
// address in Go's form, e.g. "127.0.0.1" or "::1").
type Request struct {
	Principal string
	Host      string
}

// Decision is the outcome of one check.
type Decision struct {
	Allowed bool
	// Reason says why, for the audit log: "super user", "allow ACL",
	// "deny ACL", "no matching ACL", "no ACL on the resource".
	Reason string
}

// Authorize decides whether r may perform op on the resource (rt, name).
func (a *Authorizer) Authorize(r Request, op Operation, rt ResourceType, name string) bool {
	return a.Decide(r, op, rt, name).Allowed
}

// Decide is Authorize with the reason.
func (a *Authorizer) Decide(r Request, op Operation, rt ResourceType, name string) Decision {
	if a.super[r.Principal] {
		return Decision{true, "super user"}
	}
	s := a.snap.Load()
	found, allow, deny := false, false, false
	check := func(bs []Binding) {
		for _, b := range bs {
			found = true
			switch applies(b, r, op) {
			case PermAllow:
				allow = true
			case PermDeny:
				deny = true
			}
		}
	}
	lit := s.literal[rt]
	check(lit[name])
	if name != Wildcard {
		check(lit[Wildcard])
	}
	for _, b := range s.prefixed[rt] {
		if strings.HasPrefix(name, b.ResourceName) {
			check([]Binding{b})
		}
	}
	switch {
	case deny:
		return Decision{false, "deny ACL"}
	case allow:
		return Decision{true, "allow ACL"}
	case !found && a.allowIfNoACL:
		return Decision{true, "no ACL on the resource, allow.everyone.if.no.acl.found=true"}
	case !found:
		return Decision{false, "no ACL on the resource"}
	}
	return Decision{false, "no matching ACL"}
}

// applies returns the binding's permission if it applies to (r, op), else
// PermUnknown: Kafka's StandardAuthorizerData.findResult.
func applies(b Binding, r Request, op Operation) Permission {
	if b.Principal != r.Principal && b.Principal != WildcardPrincipal {
		return PermUnknown
	}
	if b.Host != Wildcard && b.Host != r.Host {
		return PermUnknown
	}
	if b.Operation != OpAll {
		if b.Permission == PermAllow {
			switch op {
			case OpDescribe:
				switch b.Operation {
				case OpDescribe, OpRead, OpWrite, OpDelete, OpAlter:
				default:
					return PermUnknown
				}
			case OpDescribeConfigs:
				if b.Operation != OpDescribeConfigs && b.Operation != OpAlterConfigs {
					return PermUnknown
				}
			default:
				if b.Operation != op {
					return PermUnknown
				}
			}
		} else if b.Operation != op {
			return PermUnknown
		}
	}
	return b.Permission
}

// AuthorizeAny reports whether r may perform op on at least one resource of
// type rt (Kafka's authorizeByResourceType, used for idempotent producers
// without IDEMPOTENT_WRITE): a super user may; a DENY on the wildcard
// resource forbids; otherwise some ALLOW binding (LITERAL or PREFIXED) not
// shadowed by a DENY (on the same literal name, or a PREFIXED DENY that is a
// prefix of it) allows. With allow.everyone.if.no.acl.found, a resource name
// without any binding is also enough, as in Kafka.
func (a *Authorizer) AuthorizeAny(r Request, op Operation, rt ResourceType) bool {
	if a.super[r.Principal] {
		return true
	}
	// Kafka first checks a made-up name so that super users and
	// allow.everyone.if.no.acl.found behave as for a concrete resource.
	if a.Authorize(r, op, rt, "\x00sluice-authorize-any\x00") {
		return true
	}
	s := a.snap.Load()
	matchesEntry := func(b Binding, perm Permission) bool {
		return b.Permission == perm && (b.Principal == r.Principal || b.Principal == WildcardPrincipal) &&
			(b.Host == Wildcard || b.Host == r.Host) && (b.Operation == op || b.Operation == OpAll)
	}
	var denyLit = map[string]bool{}
	var denyPre []string
	for _, b := range s.all {
		if b.ResourceType != rt || !matchesEntry(b, PermDeny) {
			continue
		}
		if b.PatternType == PatternLiteral {
			if b.ResourceName == Wildcard {
				return false
			}
			denyLit[b.ResourceName] = true
		} else {
			denyPre = append(denyPre, b.ResourceName)
		}
	}
	shadowed := func(name string) bool {
		for _, p := range denyPre {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	for _, b := range s.all {
		if b.ResourceType != rt || !matchesEntry(b, PermAllow) {
			continue
		}
		if b.PatternType == PatternLiteral && !denyLit[b.ResourceName] && !shadowed(b.ResourceName) {
			return true
		}
		if b.PatternType == PatternPrefixed && !shadowed(b.ResourceName) {
			return true
		}
	}
	return false
}

// AuthorizedOps is the bit field of the authorized-operations fields: bit
// op is set for each supported operation of rt that r may perform on name.
func (a *Authorizer) AuthorizedOps(r Request, rt ResourceType, name string) int32 {
	var bits int32
	for _, op := range SupportedOps[rt] {
		if a.Authorize(r, op, rt, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// AllOps is AuthorizedOps with every supported operation (no authorizer).
func AllOps(rt ResourceType) int32 {
	var bits int32
	for _, op := range SupportedOps[rt] {
		bits |= 1 << op
	}
	return bits
}
