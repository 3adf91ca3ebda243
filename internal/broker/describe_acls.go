// DescribeAcls (key 29), v1–v3.
//
// Sluice has no authorizer, so it answers as Apache Kafka does when
// authorizer.class.name is unset: SECURITY_DISABLED (54) with the message
// "No Authorizer is configured on the broker", whatever the filter (Kafka
// does not validate the filter either in that case). kafka-acls --list and
// Kafka UIs therefore show "security is disabled" instead of losing the
// connection. v0 was removed in Kafka 4.0 and is not advertised.
//
// CreateAcls (create_acls.go) and DeleteAcls (delete_acls.go) answer the
// same error per creation and per filter.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DescribeACLs, (*Broker).handleDescribeACLs) }

func (b *Broker) handleDescribeACLs(_ context.Context, _ *wire.Request, req *kmsg.DescribeACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.ErrorCode = kerr.SecurityDisabled.Code
	resp.ErrorMessage = kmsg.StringPtr("No Authorizer is configured on the broker")
	return resp, nil
}
