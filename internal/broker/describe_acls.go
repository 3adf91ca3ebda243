// DescribeAcls (key 29), v1–v3.
//
// Without an authorizer (authorizer.class.name unset) Sluice answers as
// Apache Kafka does: SECURITY_DISABLED (54) with the message "No Authorizer
// is configured on the broker", whatever the filter (Kafka does not
// validate the filter either in that case). kafka-acls --list and Kafka UIs
// therefore show "security is disabled" instead of losing the connection.
// v0 was removed in Kafka 4.0 and is not advertised.
//
// With an authorizer, the principal needs DESCRIBE on the CLUSTER
// (CLUSTER_AUTHORIZATION_FAILED otherwise); the bindings the filter matches
// are returned grouped by resource pattern (Kafka's AclBindingFilter
// semantics, see package authz). A filter with an unknown code is
// INVALID_REQUEST.
//
// CreateAcls (create_acls.go) and DeleteAcls (delete_acls.go) answer
// SECURITY_DISABLED per creation and per filter without an authorizer.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DescribeACLs, (*Broker).handleDescribeACLs) }

// clusterAuthMessage is Kafka's message for CLUSTER_AUTHORIZATION_FAILED.
const clusterAuthMessage = "Cluster authorization failed."

func (b *Broker) handleDescribeACLs(_ context.Context, r *wire.Request, req *kmsg.DescribeACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if b.authz == nil {
		resp.ErrorCode = kerr.SecurityDisabled.Code
		resp.ErrorMessage = kmsg.StringPtr("No Authorizer is configured on the broker")
		return resp, nil
	}
	if !b.allowedCluster(r, authz.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(clusterAuthMessage)
		return resp, nil
	}
	f := authz.Filter{
		ResourceType: authz.ResourceType(req.ResourceType), ResourceName: req.ResourceName,
		PatternType: authz.PatternType(req.ResourcePatternType), Principal: req.Principal, Host: req.Host,
		Operation: authz.Operation(req.Operation), Permission: authz.Permission(req.PermissionType),
	}
	if err := f.Validate(); err != nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		return resp, nil
	}
	// Select returns the bindings sorted by resource pattern first, so the
	// bindings of one resource are adjacent.
	for _, bd := range b.authz.Select(f) {
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceName != bd.ResourceName ||
			resp.Resources[n-1].ResourceType != kmsg.ACLResourceType(bd.ResourceType) ||
			resp.Resources[n-1].ResourcePatternType != kmsg.ACLResourcePatternType(bd.PatternType) {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType = kmsg.ACLResourceType(bd.ResourceType)
			res.ResourceName = bd.ResourceName
			res.ResourcePatternType = kmsg.ACLResourcePatternType(bd.PatternType)
			resp.Resources = append(resp.Resources, res)
			n++
		}
		acl := kmsg.NewDescribeACLsResponseResourceACL()
		acl.Principal, acl.Host = bd.Principal, bd.Host
		acl.Operation, acl.PermissionType = kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, acl)
	}
	return resp, nil
}
