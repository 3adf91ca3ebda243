package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/quota"
)

func TestControllerQuotasAndACLs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	lid, l := e.active()

	// Entries of one entity apply in order, in one batch.
	r, err := l.ctrl.AlterClientQuotas(ctx, AlterClientQuotasRequest{Entries: []QuotaEntry{
		{Entity: "user/alice", Ops: []quota.Op{{Key: "producer_byte_rate", Value: 1024}, {Key: "consumer_byte_rate", Value: 10}}},
		{Entity: "client-id/<default>", Ops: []quota.Op{{Key: "request_percentage", Value: 5}}},
		{Entity: "user/alice", Ops: []quota.Op{{Key: "consumer_byte_rate", Remove: true}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	im := l.store.Image()
	if im.Offset < r.Offset || len(im.ClientQuotas) != 2 || len(im.ClientQuotas["user/alice"]) != 1 ||
		im.ClientQuotas["user/alice"]["producer_byte_rate"] != 1024 {
		t.Fatalf("quotas after alteration: %+v", im.ClientQuotas)
	}
	// Removing the last key removes the entity.
	if _, err := l.ctrl.AlterClientQuotas(ctx, AlterClientQuotasRequest{Entries: []QuotaEntry{
		{Entity: "client-id/<default>", Ops: []quota.Op{{Key: "request_percentage", Remove: true}}}}}); err != nil {
		t.Fatal(err)
	}
	if q := l.store.Image().ClientQuotas; len(q) != 1 {
		t.Fatalf("after removal: %+v", q)
	}

	acl := metadata.ACL{ResourceType: 2, ResourceName: "t", PatternType: 3, Principal: "User:a", Host: "*", Operation: 3, Permission: 3}
	if _, err := l.ctrl.AlterACLs(ctx, AlterACLsRequest{Add: []metadata.ACL{acl}}); err != nil {
		t.Fatal(err)
	}
	// Every voter applies the same records.
	e.until("every voter to hold the ACL", func() bool {
		for _, m := range e.m {
			if len(m.store.Image().ACLs) != 1 || len(m.store.Image().ClientQuotas) != 1 {
				return false
			}
		}
		return true
	})
	if _, err := l.ctrl.AlterACLs(ctx, AlterACLsRequest{Remove: []metadata.ACL{acl}}); err != nil || len(l.store.Image().ACLs) != 0 {
		t.Fatalf("remove: %v %+v", err, l.store.Image().ACLs)
	}

	// DeleteACLs matches filters against the controller's image; a binding
	// matched by two filters is listed under the first only.
	other := acl
	other.ResourceName = "u"
	if _, err := l.ctrl.AlterACLs(ctx, AlterACLsRequest{Add: []metadata.ACL{acl, other}}); err != nil {
		t.Fatal(err)
	}
	name := "t"
	dr, err := l.ctrl.DeleteACLs(ctx, DeleteACLsRequest{Filters: []authz.Filter{
		{ResourceType: authz.ResourceTopic, ResourceName: &name, PatternType: authz.PatternAny, Operation: authz.OpAny, Permission: authz.PermAny},
		{ResourceType: authz.ResourceAny, PatternType: authz.PatternAny, Operation: authz.OpAny, Permission: authz.PermAny},
	}})
	if err != nil || len(dr.Matched) != 2 || len(dr.Matched[0]) != 1 || dr.Matched[0][0] != acl ||
		len(dr.Matched[1]) != 1 || dr.Matched[1][0] != other || len(l.store.Image().ACLs) != 0 {
		t.Fatalf("delete: %v %+v %+v", err, dr, l.store.Image().ACLs)
	}

	// A follower's controller refuses.
	for id, m := range e.m {
		if id == lid {
			continue
		}
		if _, err := m.ctrl.AlterACLs(ctx, AlterACLsRequest{Add: []metadata.ACL{acl}}); code(err) != kerr.NotController.Code {
			t.Fatalf("follower %d: %v", id, err)
		}
		if _, err := m.ctrl.AlterClientQuotas(ctx, AlterClientQuotasRequest{}); code(err) != kerr.NotController.Code {
			t.Fatalf("follower %d: %v", id, err)
		}
	}
}
