package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Without an authorizer every ACL request is answered SECURITY_DISABLED with
// Kafka's messages, on every advertised version.
func TestACLsWithoutAuthorizer(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	ctx := dpCtx(t, 10*time.Second)
	adm := tb.admin()

	b := kadm.NewACLs().Topics("orders").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(described) != 1 || !errors.Is(described[0].Err, kerr.SecurityDisabled) ||
		described[0].ErrMessage != "No Authorizer is configured on the broker" {
		t.Fatalf("describe: want SECURITY_DISABLED, got %v %+v", err, described)
	}
	created, err := adm.CreateACLs(ctx, b)
	if err != nil || len(created) != 1 || !errors.Is(created[0].Err, kerr.SecurityDisabled) || created[0].ErrMessage != "No Authorizer is configured." {
		t.Fatalf("create: %v %+v", err, created)
	}
	deleted, err := adm.DeleteACLs(ctx, b)
	if err != nil || len(deleted) != 1 || !errors.Is(deleted[0].Err, kerr.SecurityDisabled) || deleted[0].ErrMessage != "No Authorizer is configured." {
		t.Fatalf("delete: %v %+v", err, deleted)
	}

	// Each version, byte for byte through the wire layer: one result per
	// creation and per filter, in order.
	rc := tb.raw()
	corr := int32(1)
	for v := int16(1); v <= 3; v++ {
		dr := kmsg.NewPtrDescribeACLsRequest()
		dr.Version = v
		rc.send(dr, corr)
		dresp := kmsg.NewPtrDescribeACLsResponse()
		dresp.Version = v
		rc.recv(dresp)
		if dresp.ErrorCode != kerr.SecurityDisabled.Code || dresp.ErrorMessage == nil ||
			*dresp.ErrorMessage != "No Authorizer is configured on the broker" || len(dresp.Resources) != 0 {
			t.Fatalf("DescribeAcls v%d: %+v", v, dresp)
		}
		corr++

		cr := kmsg.NewPtrCreateACLsRequest()
		cr.Version = v
		cr.Creations = make([]kmsg.CreateACLsRequestCreation, 3)
		rc.send(cr, corr)
		cresp := kmsg.NewPtrCreateACLsResponse()
		cresp.Version = v
		rc.recv(cresp)
		if len(cresp.Results) != 3 {
			t.Fatalf("CreateAcls v%d: %d results for 3 creations", v, len(cresp.Results))
		}
		for _, r := range cresp.Results {
			if r.ErrorCode != kerr.SecurityDisabled.Code {
				t.Fatalf("CreateAcls v%d: %+v", v, r)
			}
		}
		corr++

		del := kmsg.NewPtrDeleteACLsRequest()
		del.Version = v
		del.Filters = make([]kmsg.DeleteACLsRequestFilter, 2)
		rc.send(del, corr)
		delresp := kmsg.NewPtrDeleteACLsResponse()
		delresp.Version = v
		rc.recv(delresp)
		if len(delresp.Results) != 2 || delresp.Results[1].ErrorCode != kerr.SecurityDisabled.Code || len(delresp.Results[1].MatchingACLs) != 0 {
			t.Fatalf("DeleteAcls v%d: %+v", v, delresp)
		}
		corr++
	}
}
