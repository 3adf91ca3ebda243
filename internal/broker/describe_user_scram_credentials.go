// DescribeUserScramCredentials (key 50), v0.
//
// Sluice has no SASL/SCRAM and so no credentials. As Apache Kafka answers
// with no credentials stored: a request with no users (null or empty list,
// meaning "all users") gets an empty result list and no error; a named user
// gets RESOURCE_NOT_FOUND (91) "Attempt to describe a user credential that
// does not exist: <user>", and a user named twice in one request gets a
// single result DUPLICATE_RESOURCE (92). Results follow the order in which
// users first appear in the request (Kafka's order is unspecified).

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() {
	register(kmsg.DescribeUserSCRAMCredentials, (*Broker).handleDescribeUserSCRAMCredentials)
}

func (b *Broker) handleDescribeUserSCRAMCredentials(_ context.Context, _ *wire.Request, req *kmsg.DescribeUserSCRAMCredentialsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	count := make(map[string]int, len(req.Users))
	var order []string
	for _, u := range req.Users {
		if count[u.Name] == 0 {
			order = append(order, u.Name)
		}
		count[u.Name]++
	}
	for _, name := range order {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = name
		if count[name] > 1 {
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + name)
		} else {
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + name)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
