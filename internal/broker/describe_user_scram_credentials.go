// DescribeUserScramCredentials (key 50), v0.
//
// Reports the SCRAM credentials stored with AlterUserScramCredentials: per
// user, the mechanisms (1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512) and their
// iterations, never salts or keys. As Apache Kafka: a request with no users
// (null or empty list) describes every user that has a credential; a named
// user without any gets RESOURCE_NOT_FOUND (91) "Attempt to describe a user
// credential that does not exist: <user>", and a user named twice in one
// request gets a single result DUPLICATE_RESOURCE (92). Results follow the
// order in which users first appear in the request (all users: sorted by
// name; Kafka's order is unspecified).

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() {
	register(kmsg.DescribeUserSCRAMCredentials, (*Broker).handleDescribeUserSCRAMCredentials)
}

func (b *Broker) handleDescribeUserSCRAMCredentials(_ context.Context, r *wire.Request, req *kmsg.DescribeUserSCRAMCredentialsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !b.allowedCluster(r, authz.OpDescribe) { // Kafka: DESCRIBE on the cluster
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(clusterAuthMessage)
		return resp, nil
	}
	count := make(map[string]int, len(req.Users))
	var order []string
	for _, u := range req.Users {
		if count[u.Name] == 0 {
			order = append(order, u.Name)
		}
		count[u.Name]++
	}
	if len(req.Users) == 0 {
		order = b.scram.Users()
	}
	for _, name := range order {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = name
		infos, ok := b.scram.Describe(name)
		switch {
		case count[name] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + name)
		case !ok:
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + name)
		default:
			for _, in := range infos {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = in.Mechanism.Type, int32(in.Iterations)
				r.CredentialInfos = append(r.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
