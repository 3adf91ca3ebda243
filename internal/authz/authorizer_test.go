package authz

import (
	"errors"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/vfs"
)

func allow(rt ResourceType, pt PatternType, name, principal, host string, op Operation) Binding {
	return Binding{rt, name, pt, principal, host, op, PermAllow}
}

func deny(rt ResourceType, pt PatternType, name, principal, host string, op Operation) Binding {
	return Binding{rt, name, pt, principal, host, op, PermDeny}
}

var (
	alice = Request{Principal: "User:alice", Host: "10.0.0.1"}
	bob   = Request{Principal: "User:bob", Host: "10.0.0.2"}
)

// TestAuthorize checks the decision rules of Kafka's StandardAuthorizer, one
// case per documented rule.
func TestAuthorize(t *testing.T) {
	type check struct {
		r    Request
		op   Operation
		rt   ResourceType
		name string
		want bool
	}
	cases := []struct {
		name         string
		acls         []Binding
		super        []string
		allowIfNoACL bool
		checks       []check
	}{
		{name: "no ACLs denies by default",
			checks: []check{{alice, OpRead, ResourceTopic, "t", false}}},
		{name: "no ACLs with allow.everyone.if.no.acl.found",
			allowIfNoACL: true,
			checks:       []check{{alice, OpRead, ResourceTopic, "t", true}, {alice, OpAlter, ResourceCluster, ClusterName, true}}},
		{name: "allow.everyone only where no ACL matches the resource at all",
			allowIfNoACL: true,
			acls:         []Binding{allow(ResourceTopic, PatternLiteral, "t", "User:bob", "*", OpRead)},
			checks: []check{
				{alice, OpRead, ResourceTopic, "t", false}, // an ACL exists on t, for someone else
				{alice, OpRead, ResourceTopic, "u", true},
				{bob, OpRead, ResourceTopic, "t", true},
			}},
		{name: "literal ACL matches only its name and type",
			acls: []Binding{allow(ResourceTopic, PatternLiteral, "orders", "User:alice", "*", OpRead)},
			checks: []check{
				{alice, OpRead, ResourceTopic, "orders", true},
				{alice, OpRead, ResourceTopic, "orders2", false},
				{alice, OpRead, ResourceGroup, "orders", false},
				{alice, OpWrite, ResourceTopic, "orders", false},
				{bob, OpRead, ResourceTopic, "orders", false},
			}},
		{name: "wildcard resource name",
			acls: []Binding{allow(ResourceTopic, PatternLiteral, "*", "User:alice", "*", OpWrite)},
			checks: []check{
				{alice, OpWrite, ResourceTopic, "anything", true},
				{alice, OpWrite, ResourceTopic, "*", true},
				{alice, OpWrite, ResourceGroup, "g", false},
			}},
		{name: "prefixed ACL",
			acls: []Binding{allow(ResourceTopic, PatternPrefixed, "team-a.", "User:alice", "*", OpRead)},
			checks: []check{
				{alice, OpRead, ResourceTopic, "team-a.orders", true},
				{alice, OpRead, ResourceTopic, "team-a.", true},
				{alice, OpRead, ResourceTopic, "team-a", false},
				{alice, OpRead, ResourceTopic, "team-b.orders", false},
			}},
		{name: "prefixed * is not a wildcard",
			acls: []Binding{allow(ResourceTopic, PatternPrefixed, "*", "User:alice", "*", OpRead)},
			checks: []check{
				{alice, OpRead, ResourceTopic, "orders", false},
				{alice, OpRead, ResourceTopic, "*x", true},
			}},
		{name: "wildcard principal",
			acls: []Binding{allow(ResourceTopic, PatternLiteral, "t", "User:*", "*", OpRead)},
			checks: []check{
				{alice, OpRead, ResourceTopic, "t", true},
				{bob, OpRead, ResourceTopic, "t", true},
				// As in Kafka, User:* matches principals of every type.
				{Request{"Group:x", "1.2.3.4"}, OpRead, ResourceTopic, "t", true},
			}},
		{name: "host matching",
			acls: []Binding{allow(ResourceTopic, PatternLiteral, "t", "User:alice", "10.0.0.1", OpRead)},
			checks: []check{
				{alice, OpRead, ResourceTopic, "t", true},
				{Request{"User:alice", "10.0.0.9"}, OpRead, ResourceTopic, "t", false},
			}},
		{name: "deny wins over allow",
			acls: []Binding{
				allow(ResourceTopic, PatternLiteral, "*", "User:*", "*", OpAll),
				deny(ResourceTopic, PatternPrefixed, "secret", "User:alice", "*", OpRead),
			},
			checks: []check{
				{alice, OpRead, ResourceTopic, "secret.x", false},
				{alice, OpWrite, ResourceTopic, "secret.x", true}, // the deny is for Read only
				{bob, OpRead, ResourceTopic, "secret.x", true},
				{alice, OpRead, ResourceTopic, "public", true},
			}},
		{name: "deny from one host only",
			acls: []Binding{
				allow(ResourceTopic, PatternLiteral, "t", "User:alice", "*", OpRead),
				deny(ResourceTopic, PatternLiteral, "t", "User:alice", "10.0.0.1", OpRead),
			},
			checks: []check{
				{alice, OpRead, ResourceTopic, "t", false},
				{Request{"User:alice", "10.0.0.5"}, OpRead, ResourceTopic, "t", true},
			}},
		{name: "allow implications: Read/Write/Delete/Alter imply Describe",
			acls: []Binding{
				allow(ResourceTopic, PatternLiteral, "r", "User:alice", "*", OpRead),
				allow(ResourceTopic, PatternLiteral, "w", "User:alice", "*", OpWrite),
				allow(ResourceTopic, PatternLiteral, "d", "User:alice", "*", OpDelete),
				allow(ResourceTopic, PatternLiteral, "a", "User:alice", "*", OpAlter),
				allow(ResourceTopic, PatternLiteral, "c", "User:alice", "*", OpCreate),
				allow(ResourceTopic, PatternLiteral, "ac", "User:alice", "*", OpAlterConfigs),
				allow(ResourceTopic, PatternLiteral, "dc", "User:alice", "*", OpDescribeConfigs),
			},
			checks: []check{
				{alice, OpDescribe, ResourceTopic, "r", true},
				{alice, OpDescribe, ResourceTopic, "w", true},
				{alice, OpDescribe, ResourceTopic, "d", true},
				{alice, OpDescribe, ResourceTopic, "a", true},
				{alice, OpDescribe, ResourceTopic, "c", false},
				{alice, OpRead, ResourceTopic, "w", false}, // Write does not imply Read
				{alice, OpDescribeConfigs, ResourceTopic, "ac", true},
				{alice, OpDescribe, ResourceTopic, "ac", false},
				{alice, OpAlterConfigs, ResourceTopic, "dc", false},
				{alice, OpDescribeConfigs, ResourceTopic, "a", false}, // Alter does not imply DescribeConfigs
			}},
		{name: "deny implications do not extend",
			acls: []Binding{
				allow(ResourceTopic, PatternLiteral, "t", "User:alice", "*", OpAll),
				deny(ResourceTopic, PatternLiteral, "t", "User:alice", "*", OpRead),
			},
			checks: []check{
				{alice, OpRead, ResourceTopic, "t", false},
				{alice, OpDescribe, ResourceTopic, "t", true}, // DENY Read does not deny Describe
			}},
		{name: "ALL allows and denies every operation",
			acls: []Binding{
				allow(ResourceGroup, PatternLiteral, "g", "User:alice", "*", OpAll),
				deny(ResourceGroup, PatternLiteral, "h", "User:*", "*", OpAll),
				allow(ResourceGroup, PatternLiteral, "h", "User:alice", "*", OpRead),
			},
			checks: []check{
				{alice, OpRead, ResourceGroup, "g", true},
				{alice, OpDelete, ResourceGroup, "g", true},
				{alice, OpDescribe, ResourceGroup, "g", true},
				{alice, OpRead, ResourceGroup, "h", false},
			}},
		{name: "super users bypass deny",
			super: []string{"User:admin", " User:root "},
			acls:  []Binding{deny(ResourceCluster, PatternLiteral, ClusterName, "User:*", "*", OpAll)},
			checks: []check{
				{Request{"User:admin", "1.1.1.1"}, OpAlter, ResourceCluster, ClusterName, true},
				{Request{"User:root", "1.1.1.1"}, OpAlter, ResourceCluster, ClusterName, true},
				{alice, OpAlter, ResourceCluster, ClusterName, false},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := New(Config{SuperUsers: c.super, AllowIfNoACL: c.allowIfNoACL}, c.acls, nil)
			for _, ch := range c.checks {
				if got := a.Authorize(ch.r, ch.op, ch.rt, ch.name); got != ch.want {
					t.Errorf("%s %s on %s %q: got %v, want %v (%s)", ch.r.Principal, ch.op, ch.rt, ch.name, got, ch.want,
						a.Decide(ch.r, ch.op, ch.rt, ch.name).Reason)
				}
			}
		})
	}
}

func TestAuthorizeAny(t *testing.T) {
	cases := []struct {
		name string
		acls []Binding
		r    Request
		want bool
	}{
		{"nothing", nil, alice, false},
		{"literal allow", []Binding{allow(ResourceTopic, PatternLiteral, "t", "User:alice", "*", OpWrite)}, alice, true},
		{"prefixed allow", []Binding{allow(ResourceTopic, PatternPrefixed, "a.", "User:*", "*", OpWrite)}, alice, true},
		{"other op", []Binding{allow(ResourceTopic, PatternLiteral, "t", "User:alice", "*", OpRead)}, alice, false},
		{"ALL op", []Binding{allow(ResourceTopic, PatternLiteral, "t", "User:alice", "*", OpAll)}, alice, true},
		{"other principal", []Binding{allow(ResourceTopic, PatternLiteral, "t", "User:bob", "*", OpWrite)}, alice, false},
		{"deny same literal", []Binding{
			allow(ResourceTopic, PatternLiteral, "t", "User:alice", "*", OpWrite),
			deny(ResourceTopic, PatternLiteral, "t", "User:alice", "*", OpWrite)}, alice, false},
		{"deny covering prefix", []Binding{
			allow(ResourceTopic, PatternPrefixed, "a.b", "User:alice", "*", OpWrite),
			deny(ResourceTopic, PatternPrefixed, "a.", "User:alice", "*", OpWrite)}, alice, false},
		{"deny narrower prefix leaves the allow", []Binding{
			allow(ResourceTopic, PatternPrefixed, "a.", "User:alice", "*", OpWrite),
			deny(ResourceTopic, PatternPrefixed, "a.b", "User:alice", "*", OpWrite)}, alice, true},
		{"wildcard deny", []Binding{
			allow(ResourceTopic, PatternLiteral, "t", "User:alice", "*", OpWrite),
			deny(ResourceTopic, PatternLiteral, "*", "User:*", "*", OpWrite)}, alice, false},
	}
	for _, c := range cases {
		a := New(Config{}, c.acls, nil)
		if got := a.AuthorizeAny(c.r, OpWrite, ResourceTopic); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	if !New(Config{AllowIfNoACL: true}, nil, nil).AuthorizeAny(alice, OpWrite, ResourceTopic) {
		t.Error("allow.everyone.if.no.acl.found without ACLs: want allowed")
	}
	if !New(Config{SuperUsers: []string{"User:alice"}}, nil, nil).AuthorizeAny(alice, OpWrite, ResourceTopic) {
		t.Error("super user: want allowed")
	}
}

func TestAuthorizedOps(t *testing.T) {
	a := New(Config{}, []Binding{allow(ResourceTopic, PatternLiteral, "t", "User:alice", "*", OpRead)}, nil)
	if got, want := a.AuthorizedOps(alice, ResourceTopic, "t"), int32(1<<OpRead|1<<OpDescribe); got != want {
		t.Fatalf("ops: %b, want %b", got, want)
	}
	if got := AllOps(ResourceGroup); got != 1<<OpRead|1<<OpDescribe|1<<OpDelete {
		t.Fatalf("group ops %b", got)
	}
}

func sp(s string) *string { return &s }

// TestFilterMatches follows Kafka's AclBindingFilter semantics.
func TestFilterMatches(t *testing.T) {
	lit := allow(ResourceTopic, PatternLiteral, "orders", "User:alice", "*", OpRead)
	wild := allow(ResourceTopic, PatternLiteral, "*", "User:alice", "*", OpRead)
	pre := deny(ResourceTopic, PatternPrefixed, "ord", "User:bob", "10.0.0.1", OpWrite)
	grp := allow(ResourceGroup, PatternLiteral, "orders", "User:alice", "*", OpRead)
	all := []Binding{lit, wild, pre, grp}
	any := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}
	with := func(f func(*Filter)) Filter { x := any; f(&x); return x }
	cases := []struct {
		name string
		f    Filter
		want []Binding
	}{
		{"match all", any, all},
		{"type", with(func(f *Filter) { f.ResourceType = ResourceGroup }), []Binding{grp}},
		{"ANY pattern with a name is exact", with(func(f *Filter) { f.ResourceName = sp("orders") }), []Binding{lit, grp}},
		{"LITERAL", with(func(f *Filter) { f.PatternType = PatternLiteral }), []Binding{lit, wild, grp}},
		{"PREFIXED with name", with(func(f *Filter) { f.PatternType = PatternPrefixed; f.ResourceName = sp("ord") }), []Binding{pre}},
		{"PREFIXED name is not matched as a prefix", with(func(f *Filter) { f.PatternType = PatternPrefixed; f.ResourceName = sp("orders") }), nil},
		{"MATCH", with(func(f *Filter) {
			f.PatternType = PatternMatch
			f.ResourceName = sp("orders")
			f.ResourceType = ResourceTopic
		}),
			[]Binding{lit, wild, pre}},
		{"MATCH other name", with(func(f *Filter) { f.PatternType = PatternMatch; f.ResourceName = sp("x") }), []Binding{wild}},
		{"MATCH without name", with(func(f *Filter) { f.PatternType = PatternMatch }), all},
		{"principal", with(func(f *Filter) { f.Principal = sp("User:bob") }), []Binding{pre}},
		{"principal is exact (no wildcard expansion)", with(func(f *Filter) { f.Principal = sp("User:*") }), nil},
		{"host", with(func(f *Filter) { f.Host = sp("10.0.0.1") }), []Binding{pre}},
		{"operation", with(func(f *Filter) { f.Operation = OpWrite }), []Binding{pre}},
		{"permission", with(func(f *Filter) { f.Permission = PermAllow }), []Binding{lit, wild, grp}},
	}
	for _, c := range cases {
		var got []Binding
		for _, b := range all {
			if c.f.Matches(b) {
				got = append(got, b)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: got %v, want %v", c.name, got, c.want)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	good := allow(ResourceTopic, PatternLiteral, "t", "User:alice", "*", OpRead)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		mut  func(*Binding)
		want string
	}{
		{func(b *Binding) { b.ResourceType = ResourceAny }, "Invalid resourceType ANY"},
		{func(b *Binding) { b.ResourceType = 99 }, "Invalid resourceType UNKNOWN"},
		{func(b *Binding) { b.ResourceType = ResourceDelegationToken }, "Sluice does not support delegation tokens: ACLs on DELEGATION_TOKEN resources are refused"},
		{func(b *Binding) { b.PatternType = PatternMatch }, "Invalid patternType MATCH"},
		{func(b *Binding) { b.Operation = OpAny }, "Invalid operation ANY"},
		{func(b *Binding) { b.Permission = PermAny }, "Invalid permissionType ANY"},
		{func(b *Binding) { b.ResourceType = ResourceCluster }, "The only valid name for the CLUSTER resource is kafka-cluster"},
		{func(b *Binding) { b.ResourceName = "" }, "Invalid empty resource name"},
		{func(b *Binding) { b.Principal = "alice" }, "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"},
		{func(b *Binding) { b.Host = "" }, "Invalid empty host: use * for every host"},
	}
	for _, c := range bad {
		b := good
		c.mut(&b)
		err := b.Validate()
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Msg != c.want {
			t.Errorf("%v: got %v, want %q", b, err, c.want)
		}
	}
	if err := (Filter{ResourceType: ResourceAny, PatternType: PatternUnknown, Operation: OpAny, Permission: PermAny}).Validate(); err == nil {
		t.Error("filter with UNKNOWN pattern type accepted")
	}
}

type failStore struct{ err error }

func (f *failStore) Persist([]Binding) error { return f.err }

func TestApplyAndStore(t *testing.T) {
	fs := vfs.NewMemFS()
	dir := "/data"
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st, initial, err := OpenFileStore(fs, dir)
	if err != nil || len(initial) != 0 {
		t.Fatalf("open empty: %v %v", initial, err)
	}
	a := New(Config{}, initial, st)
	b1 := allow(ResourceTopic, PatternLiteral, "t", "User:alice", "*", OpRead)
	b2 := allow(ResourceGroup, PatternPrefixed, "g", "User:alice", "*", OpRead)
	if err := a.Apply([]Binding{b1, b2, b1}, nil); err != nil {
		t.Fatal(err)
	}
	if got := a.Bindings(); len(got) != 2 {
		t.Fatalf("bindings after add: %v", got)
	}
	if err := a.Apply(nil, []Binding{b1, allow(ResourceTopic, PatternLiteral, "absent", "User:x", "*", OpRead)}); err != nil {
		t.Fatal(err)
	}
	_, back, err := OpenFileStore(fs, dir)
	if err != nil || len(back) != 1 || back[0] != b2 {
		t.Fatalf("reopen: %v %v", back, err)
	}
	if !New(Config{}, back, nil).Authorize(alice, OpRead, ResourceGroup, "g1") {
		t.Fatal("reloaded binding does not apply")
	}

	// A failing store changes nothing.
	boom := errors.New("disk full")
	f := New(Config{}, []Binding{b1}, &failStore{boom})
	if err := f.Apply(nil, []Binding{b1}); !errors.Is(err, boom) {
		t.Fatalf("apply with failing store: %v", err)
	}
	if !f.Authorize(alice, OpRead, ResourceTopic, "t") {
		t.Fatal("failed Apply removed the binding")
	}

	// A corrupt file is an error, not an empty set.
	if err := vfs.WriteFileAtomic(fs, filepath.Join(dir, ACLsFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenFileStore(fs, dir); err == nil {
		t.Fatal("corrupt acls.json accepted")
	}
}

func TestAuditor(t *testing.T) {
	now := time.Unix(1000, 0)
	a := &Auditor{Interval: time.Minute, Now: func() time.Time { return now }}
	if !a.Allow("User:a", OpRead, ResourceTopic, "t") {
		t.Fatal("first denial not logged")
	}
	if a.Allow("User:a", OpRead, ResourceTopic, "t") {
		t.Fatal("second denial within a minute logged")
	}
	if !a.Allow("User:a", OpWrite, ResourceTopic, "t") || !a.Allow("User:b", OpRead, ResourceTopic, "t") || !a.Allow("User:a", OpRead, ResourceTopic, "u") {
		t.Fatal("other keys are independent")
	}
	now = now.Add(time.Minute)
	if !a.Allow("User:a", OpRead, ResourceTopic, "t") {
		t.Fatal("denial after a minute not logged")
	}
}

// Many distinct denials within one interval are each logged once; entries
// older than the interval are forgotten when the map is pruned, and the
// map is pruned only after it has doubled.
func TestAuditorPrunes(t *testing.T) {
	now := time.Unix(1000, 0)
	a := &Auditor{Interval: time.Minute, Now: func() time.Time { return now }}
	name := func(i int) string { return "t" + strconv.Itoa(i) }
	for i := 0; i < 3*auditPruneMin; i++ {
		if !a.Allow("User:a", OpRead, ResourceTopic, name(i)) {
			t.Fatalf("first denial of %s not logged", name(i))
		}
	}
	if a.Allow("User:a", OpRead, ResourceTopic, name(0)) || len(a.last) != 3*auditPruneMin {
		t.Fatalf("recent entries forgotten: %d left", len(a.last))
	}
	if a.pruneAt <= 2*auditPruneMin {
		t.Fatalf("next pruning at %d entries, want after the map doubled", a.pruneAt)
	}
	now = now.Add(2 * time.Minute)
	before := len(a.last)
	for i := 0; len(a.last) >= before; i++ {
		if i > 2*a.pruneAt {
			t.Fatalf("never pruned: %d entries, next pruning at %d", len(a.last), a.pruneAt)
		}
		a.Allow("User:b", OpRead, ResourceTopic, name(i))
	}
	for k := range a.last {
		if k.principal == "User:a" {
			t.Fatalf("an entry two minutes old survived the pruning: %+v", k)
		}
	}
}
