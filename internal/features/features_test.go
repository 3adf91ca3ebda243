package features

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/vfs"
)

func TestApplyRules(t *testing.T) {
	cur := Defaults()
	cases := []struct {
		name    string
		updates []Update
		code    int16
	}{
		{"unknown feature", []Update{{Name: "no.such.version", Level: 1, Type: Upgrade}}, kerr.InvalidUpdateVersion.Code},
		{"above the supported range", []Update{{Name: GroupVersion, Level: 2, Type: Upgrade}}, kerr.InvalidUpdateVersion.Code},
		{"downgrade without a downgrade type", []Update{{Name: GroupVersion, Level: 0, Type: Upgrade}}, kerr.InvalidUpdateVersion.Code},
		{"metadata.version downgrade", []Update{{Name: MetadataVersion, Level: 20, Type: SafeDowngrade}}, kerr.InvalidUpdateVersion.Code},
		{"metadata.version removal", []Update{{Name: MetadataVersion, Level: 0, Type: UnsafeDowngrade}}, kerr.InvalidUpdateVersion.Code},
		{"negative level", []Update{{Name: GroupVersion, Level: -1, Type: SafeDowngrade}}, kerr.InvalidUpdateVersion.Code},
		{"bad upgrade type", []Update{{Name: GroupVersion, Level: 1, Type: 7}}, kerr.InvalidRequest.Code},
		{"duplicate", []Update{{Name: GroupVersion, Level: 1, Type: Upgrade}, {Name: GroupVersion, Level: 1, Type: Upgrade}}, kerr.InvalidRequest.Code},
		{"one bad update refuses all", []Update{{Name: ShareVersion, Level: 0, Type: SafeDowngrade}, {Name: "x", Level: 1, Type: Upgrade}}, kerr.InvalidUpdateVersion.Code},
		{"safe downgrade", []Update{{Name: GroupVersion, Level: 0, Type: SafeDowngrade}}, 0},
		{"unsafe downgrade", []Update{{Name: ShareVersion, Level: 0, Type: UnsafeDowngrade}}, 0},
		{"same level", []Update{{Name: MetadataVersion, Level: 33, Type: Upgrade}}, 0},
	}
	for _, c := range cases {
		next, err := Apply(cur, c.updates)
		switch {
		case c.code == 0 && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.code != 0 && err == nil:
			t.Errorf("%s: accepted (%v), want code %d", c.name, next, c.code)
		case c.code != 0 && err.Code != c.code:
			t.Errorf("%s: code %d (%s), want %d", c.name, err.Code, err.Msg, c.code)
		case c.code == 0:
			for _, u := range c.updates {
				if next.Level(u.Name) != u.Level {
					t.Errorf("%s: %s at %d, want %d", c.name, u.Name, next.Level(u.Name), u.Level)
				}
			}
		}
	}
	if cur.Level(GroupVersion) != 1 {
		t.Fatalf("Apply changed its input: %v", cur)
	}
}

func TestStorePersists(t *testing.T) {
	fs := vfs.NewMemFS()
	if err := fs.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Open(fs, "/data")
	if err != nil {
		t.Fatal(err)
	}
	if l, epoch := s.Get(); epoch != 0 || l.Level(GroupVersion) != 1 {
		t.Fatalf("fresh store: %v epoch %d", l, epoch)
	}
	if _, err := s.Update([]Update{{Name: GroupVersion, Level: 0, Type: SafeDowngrade}}, true); err != nil {
		t.Fatal(err)
	}
	if l, epoch := s.Get(); epoch != 0 || l.Level(GroupVersion) != 1 {
		t.Fatalf("validate-only changed the store: %v epoch %d", l, epoch)
	}
	if _, err := s.Update([]Update{{Name: GroupVersion, Level: 0, Type: SafeDowngrade}}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update([]Update{{Name: "bogus", Level: 1, Type: Upgrade}}, false); err == nil {
		t.Fatal("bogus feature accepted")
	}
	s2, err := Open(fs, "/data")
	if err != nil {
		t.Fatal(err)
	}
	l, epoch := s2.Get()
	if epoch != 1 || l.Level(GroupVersion) != 0 || l.Level(ShareVersion) != 1 {
		t.Fatalf("reopened store: %v epoch %d", l, epoch)
	}
}

// New clusters finalize eligible.leader.replicas.version 1; a cluster or
// data directory that recorded its levels without it (an older Sluice)
// keeps it at 0 until upgraded, and version 1 needs metadata.version 23.
func TestEligibleLeaderReplicasDefault(t *testing.T) {
	if got := Defaults().Level(EligibleLeaderReplicasVersion); got != 1 {
		t.Fatalf("new cluster: %s %d, want 1", EligibleLeaderReplicasVersion, got)
	}
	if got := Finalized(nil, false).Level(EligibleLeaderReplicasVersion); got != 1 {
		t.Fatalf("not yet formatted: %d, want 1", got)
	}
	if got := Finalized(nil, true).Level(EligibleLeaderReplicasVersion); got != 0 {
		t.Fatalf("formatted without a features record: %d, want 0", got)
	}
	old := Levels{MetadataVersion: 33, GroupVersion: 0}
	l := Finalized(old, true)
	if l.Level(EligibleLeaderReplicasVersion) != 0 || l.Level(GroupVersion) != 0 || l.Level(ShareVersion) != 1 {
		t.Fatalf("recorded by an older Sluice: %v", l)
	}
	up, err := Apply(l, []Update{{Name: EligibleLeaderReplicasVersion, Level: 1, Type: Upgrade}})
	if err != nil || up.Level(EligibleLeaderReplicasVersion) != 1 {
		t.Fatalf("upgrade: %v %v", up, err)
	}
	low := WithDefaults(Levels{MetadataVersion: 22})
	if _, err := Apply(low, []Update{{Name: EligibleLeaderReplicasVersion, Level: 1, Type: Upgrade}}); err == nil || err.Code != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("ELR 1 on metadata.version 22: %v, want INVALID_UPDATE_VERSION", err)
	}
	if _, err := Apply(low, []Update{{Name: MetadataVersion, Level: 23, Type: Upgrade},
		{Name: EligibleLeaderReplicasVersion, Level: 1, Type: Upgrade}}); err != nil {
		t.Fatalf("ELR 1 with metadata.version 23 in the same request: %v", err)
	}
}
