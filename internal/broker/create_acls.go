// CreateAcls (key 30), v1–v3.
//
// Without an authorizer (see describe_acls.go) every creation is answered
// SECURITY_DISABLED (54) with "No Authorizer is configured.", one result per
// creation in request order, as Apache Kafka answers when no authorizer is
// configured. Nothing is stored. v0 was removed in Kafka 4.0.
//
// With an authorizer, the principal needs ALTER on the CLUSTER (else every
// result is CLUSTER_AUTHORIZATION_FAILED and nothing is created). Each
// creation is validated as Kafka does (INVALID_REQUEST with Kafka's
// message: unknown or ANY/MATCH codes, a CLUSTER name other than
// kafka-cluster, an empty name, a principal without a type; Sluice also
// refuses DELEGATION_TOKEN resources and an empty host); the valid ones are
// added in one batch, durably, before the answer. Creating a binding that
// exists already succeeds and changes nothing.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.CreateACLs, (*Broker).handleCreateACLs) }

// noAuthorizerMessage is Kafka's message for CreateAcls/DeleteAcls without
// an authorizer (DescribeAcls words it slightly differently).
const noAuthorizerMessage = "No Authorizer is configured."

func (b *Broker) handleCreateACLs(_ context.Context, r *wire.Request, req *kmsg.CreateACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
	}
	fail := func(i int, code int16, msg string) {
		resp.Results[i].ErrorCode = code
		resp.Results[i].ErrorMessage = kmsg.StringPtr(msg)
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
	var add []authz.Binding
	var added []int
	for i, c := range req.Creations {
		bd := authz.Binding{
			ResourceType: authz.ResourceType(c.ResourceType), ResourceName: c.ResourceName,
			PatternType: authz.PatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
			Operation: authz.Operation(c.Operation), Permission: authz.Permission(c.PermissionType),
		}
		if err := bd.Validate(); err != nil {
			fail(i, kerr.InvalidRequest.Code, err.Error())
			continue
		}
		add = append(add, bd)
		added = append(added, i)
	}
	if err := b.applyACLs(add, nil); err != nil {
		b.logger.Error("CreateAcls: storing ACLs failed", "err", err)
		for _, i := range added {
			fail(i, kerr.UnknownServerError.Code, err.Error())
		}
		return resp, nil
	}
	for _, bd := range add {
		b.logger.Info("ACL created", "acl", bd.String(), "by", r.Conn.Principal())
	}
	return resp, nil
}
