// DeleteAcls (key 31), v1–v3.
//
// Without an authorizer (see describe_acls.go) every filter is answered
// SECURITY_DISABLED (54) with "No Authorizer is configured." and no matching
// ACLs, one result per filter in request order, as Apache Kafka answers when
// no authorizer is configured. v0 was removed in Kafka 4.0.
//
// With an authorizer, the principal needs ALTER on the CLUSTER (else every
// result is CLUSTER_AUTHORIZATION_FAILED and nothing is deleted). Every
// binding a filter matches (Kafka's AclBindingFilter semantics, MATCH
// included) is deleted; the bindings of all filters go in one durable batch.
// A binding matched by several filters is reported under the first. A
// filter with an unknown code is INVALID_REQUEST and deletes nothing.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DeleteACLs, (*Broker).handleDeleteACLs) }

func (b *Broker) handleDeleteACLs(_ context.Context, r *wire.Request, req *kmsg.DeleteACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	fail := func(i int, code int16, msg string) {
		resp.Results[i].ErrorCode = code
		resp.Results[i].ErrorMessage = kmsg.StringPtr(msg)
		resp.Results[i].MatchingACLs = nil
	}
	if b.authz == nil {
		for i := range resp.Results {
			fail(i, kerr.SecurityDisabled.Code, noAuthorizerMessage)
		}
		return resp, nil
	}
	if !b.allowedCluster(r, authz.OpAlter) {
		for i := range resp.Results {
			fail(i, kerr.ClusterAuthorizationFailed.Code, clusterAuthMessage)
		}
		return resp, nil
	}
	if b.cluster != nil { // the controller matches and removes (cluster_security.go)
		b.deleteACLsCluster(r, req, resp, fail)
		return resp, nil
	}
	var remove []authz.Binding
	var matched []int
	taken := map[authz.Binding]bool{}
	for i, f := range req.Filters {
		af := authz.Filter{
			ResourceType: authz.ResourceType(f.ResourceType), ResourceName: f.ResourceName,
			PatternType: authz.PatternType(f.ResourcePatternType), Principal: f.Principal, Host: f.Host,
			Operation: authz.Operation(f.Operation), Permission: authz.Permission(f.PermissionType),
		}
		if err := af.Validate(); err != nil {
			fail(i, kerr.InvalidRequest.Code, err.Error())
			continue
		}
		for _, bd := range b.authz.Select(af) {
			if taken[bd] {
				continue
			}
			taken[bd] = true
			remove = append(remove, bd)
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(bd.ResourceType), bd.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(bd.PatternType)
			m.Principal, m.Host = bd.Principal, bd.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
		}
		matched = append(matched, i)
	}
	if err := b.applyACLs(nil, remove); err != nil {
		b.logger.Error("DeleteAcls: storing ACLs failed", "err", err)
		for _, i := range matched {
			fail(i, kerr.UnknownServerError.Code, err.Error())
		}
		return resp, nil
	}
	for _, bd := range remove {
		b.logger.Info("ACL deleted", "acl", bd.String(), "by", r.Conn.Principal())
	}
	return resp, nil
}
