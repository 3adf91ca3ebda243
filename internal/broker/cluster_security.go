package broker

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/wire"
)

// On a cluster node, client quotas and ACLs live in the cluster metadata:
// AlterClientQuotas, CreateAcls and DeleteAcls are validated by the broker
// that receives them, decided by the active controller (metadata records)
// and answered once this broker has published the change. Every broker
// enforces quotas from its image (client_quotas.go) and feeds its
// authorizer with the image's ACLs on every publish. A single node keeps
// both in files of its data directory instead; acls.json is not read on a
// cluster node.

// decideOffset sends a change that answers with an offset (client quotas,
// ACLs) to the active controller and waits until this broker has
// published it.
func decideOffset[Req any](c *clusterNode, method string, local func(context.Context, Req) (controller.OffsetResponse, error), req Req) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	var resp controller.OffsetResponse
	if err := callController(ctx, c, method, local, req, &resp); err != nil {
		return err
	}
	if _, err := c.store.WaitFor(ctx, resp.Offset); err != nil {
		return err
	}
	return c.waitPublished(ctx, resp.Offset)
}

// registerSecurityHandlers serves the controller's quota and ACL methods
// on the peer listener.
func (c *clusterNode) registerSecurityHandlers() {
	handle(c.srv, "client-quotas", c.ctrl.AlterClientQuotas)
	handle(c.srv, "alter-acls", c.ctrl.AlterACLs)
	handle(c.srv, "delete-acls", c.ctrl.DeleteACLs)
	handle(c.srv, "group-configs", c.ctrl.SetGroupConfigs) // cluster_group_configs.go
}

// applyACLs adds and removes bindings: through the controller on a
// cluster node, in the authorizer's file on a single node.
func (b *Broker) applyACLs(add, remove []authz.Binding) error {
	if b.cluster == nil {
		return b.authz.Apply(add, remove)
	}
	if len(add) == 0 && len(remove) == 0 {
		return nil
	}
	req := controller.AlterACLsRequest{Add: toMetadataACLs(add), Remove: toMetadataACLs(remove)}
	if err := decideOffset(b.cluster, "alter-acls", b.cluster.ctrl.AlterACLs, req); err != nil {
		return asBrokerError(err)
	}
	return nil
}

// deleteACLsCluster answers DeleteAcls on a cluster node: the valid
// filters go to the controller, which matches them against the metadata's
// bindings and removes the matches.
func (b *Broker) deleteACLsCluster(r *wire.Request, req *kmsg.DeleteACLsRequest, resp *kmsg.DeleteACLsResponse, fail func(int, int16, string)) {
	var filters []authz.Filter
	var valid []int
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
		filters = append(filters, af)
		valid = append(valid, i)
	}
	if len(filters) == 0 {
		return
	}
	c := b.cluster
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	var cr controller.DeleteACLsResponse
	err := callController(ctx, c, "delete-acls", c.ctrl.DeleteACLs, controller.DeleteACLsRequest{Filters: filters}, &cr)
	if err == nil {
		err = c.waitPublished(ctx, cr.Offset)
	}
	if err != nil {
		be := asBrokerError(err).(*Error)
		b.logger.Error("DeleteAcls failed", "err", err)
		for _, i := range valid {
			fail(i, be.Code, be.Msg)
		}
		return
	}
	for j, i := range valid {
		if j >= len(cr.Matched) {
			break
		}
		for _, a := range cr.Matched[j] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(a.ResourceType), a.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(a.PatternType)
			m.Principal, m.Host = a.Principal, a.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			b.logger.Info("ACL deleted", "acl", controller.BindingOf(a).String(), "by", r.Conn.Principal())
		}
	}
}

// publishACLs gives the authorizer the image's bindings when they changed.
// Runs on the publish goroutine only.
func (b *Broker) publishACLs(im *metadata.Image) {
	if b.authz == nil || b.quotas == nil || slices.Equal(b.quotas.publishedACLs, im.ACLs) && b.quotas.aclsPublished {
		return
	}
	next := make([]authz.Binding, len(im.ACLs))
	for i, a := range im.ACLs {
		next[i] = controller.BindingOf(a)
	}
	if err := b.authz.Replace(next); err != nil { // no store on a cluster node: cannot fail
		b.logger.Error("loading the ACLs of the metadata image failed", "err", err)
		return
	}
	b.quotas.publishedACLs, b.quotas.aclsPublished = im.ACLs, true
}

func toMetadataACLs(bs []authz.Binding) []metadata.ACL {
	if len(bs) == 0 {
		return nil
	}
	out := make([]metadata.ACL, len(bs))
	for i, b := range bs {
		out[i] = metadata.ACL{ResourceType: int8(b.ResourceType), ResourceName: b.ResourceName,
			PatternType: int8(b.PatternType), Principal: b.Principal, Host: b.Host,
			Operation: int8(b.Operation), Permission: int8(b.Permission)}
	}
	return out
}
