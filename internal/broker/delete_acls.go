// DeleteAcls (key 31), v1–v3.
//
// Without an authorizer (see describe_acls.go) every filter is answered
// SECURITY_DISABLED (54) with "No Authorizer is configured." and no matching
// ACLs, one result per filter in request order, as Apache Kafka answers when
// no authorizer is configured. v0 was removed in Kafka 4.0.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DeleteACLs, (*Broker).handleDeleteACLs) }

func (b *Broker) handleDeleteACLs(_ context.Context, _ *wire.Request, req *kmsg.DeleteACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		r := kmsg.NewDeleteACLsResponseResult()
		r.ErrorCode = kerr.SecurityDisabled.Code
		r.ErrorMessage = kmsg.StringPtr(noAuthorizerMessage)
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
