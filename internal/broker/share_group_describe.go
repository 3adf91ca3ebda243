// ShareGroupDescribe (key 77), v1: share groups with their members, subscriptions and
// assignments. A group that does not exist (or is not a share group) is
// GROUP_ID_NOT_FOUND. With an authorizer: DESCRIBE on each group
// (GROUP_AUTHORIZATION_FAILED), and the authorized operations when asked.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ShareGroupDescribe, (*Broker).handleShareGroupDescribe) }

func (b *Broker) handleShareGroupDescribe(_ context.Context, r *wire.Request, req *kmsg.ShareGroupDescribeRequest) (kmsg.Response, error) {
	if b.authz == nil {
		return b.shares.Describe(req), nil
	}
	sub := *req
	sub.GroupIDs = nil
	var denied []string
	for _, g := range req.GroupIDs {
		if b.groupDenied(r, authz.OpDescribe, g) {
			denied = append(denied, g)
		} else {
			sub.GroupIDs = append(sub.GroupIDs, g)
		}
	}
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	if len(sub.GroupIDs) > 0 {
		resp = b.shares.Describe(&sub)
	}
	for i := range resp.Groups {
		if req.IncludeAuthorizedOperations {
			resp.Groups[i].AuthorizedOperations = b.authorizedOps(r, authz.ResourceGroup, resp.Groups[i].GroupID)
		}
	}
	for _, g := range denied {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		rg.ErrorMessage = kmsg.StringPtr("Group authorization failed.")
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
