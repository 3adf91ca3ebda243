// CreateAcls (key 30), v1–v3.
//
// Without an authorizer (see describe_acls.go) every creation is answered
// SECURITY_DISABLED (54) with "No Authorizer is configured.", one result per
// creation in request order, as Apache Kafka answers when no authorizer is
// configured. Nothing is stored. v0 was removed in Kafka 4.0.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.CreateACLs, (*Broker).handleCreateACLs) }

// noAuthorizerMessage is Kafka's message for CreateAcls/DeleteAcls without
// an authorizer (DescribeAcls words it slightly differently).
const noAuthorizerMessage = "No Authorizer is configured."

func (b *Broker) handleCreateACLs(_ context.Context, _ *wire.Request, req *kmsg.CreateACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode = kerr.SecurityDisabled.Code
		r.ErrorMessage = kmsg.StringPtr(noAuthorizerMessage)
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
