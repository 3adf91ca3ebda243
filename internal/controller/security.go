package controller

import (
	"context"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/quota"
)

// QuotaEntry alters the quotas of one entity (its quota.Entity key). The
// broker has validated the entity, keys and values.
type QuotaEntry struct {
	Entity string     `json:"entity"`
	Ops    []quota.Op `json:"ops"`
}

// AlterClientQuotasRequest is Kafka's AlterClientQuotas, validated.
type AlterClientQuotasRequest struct {
	Entries []QuotaEntry `json:"entries"`
}

// OffsetResponse is the offset at which a change was applied.
type OffsetResponse struct {
	Offset uint64 `json:"offset"`
}

// AlterClientQuotas records the entities' new quota sets, all in one batch.
func (c *Controller) AlterClientQuotas(ctx context.Context, req AlterClientQuotasRequest) (OffsetResponse, error) {
	im, err := c.begin()
	if err != nil {
		return OffsetResponse{}, err
	}
	defer c.mu.Unlock()
	next := map[string]map[string]float64{}
	var order []string
	for _, e := range req.Entries {
		cur, seen := next[e.Entity]
		if !seen {
			cur = im.ClientQuotas[e.Entity]
			order = append(order, e.Entity)
		}
		next[e.Entity] = quota.Alter(cur, e.Ops)
	}
	recs := make([]metadata.Record, 0, len(order))
	for _, ent := range order {
		recs = append(recs, metadata.Record{Type: metadata.SetClientQuotas, QuotaEntity: ent, Quotas: next[ent]})
	}
	if len(recs) == 0 {
		return OffsetResponse{Offset: im.Offset}, nil
	}
	off, err := c.commit(ctx, recs...)
	if err != nil {
		return OffsetResponse{}, err
	}
	return OffsetResponse{Offset: off}, nil
}

// AlterACLsRequest adds and removes ACL bindings (validated, and for
// removals matched against the filters, by the broker).
type AlterACLsRequest struct {
	Add    []metadata.ACL `json:"add,omitempty"`
	Remove []metadata.ACL `json:"remove,omitempty"`
}

// AlterACLs records the bindings added and removed, in one batch.
func (c *Controller) AlterACLs(ctx context.Context, req AlterACLsRequest) (OffsetResponse, error) {
	im, err := c.begin()
	if err != nil {
		return OffsetResponse{}, err
	}
	defer c.mu.Unlock()
	var recs []metadata.Record
	if len(req.Add) > 0 {
		recs = append(recs, metadata.Record{Type: metadata.AddACLs, ACLs: req.Add})
	}
	if len(req.Remove) > 0 {
		recs = append(recs, metadata.Record{Type: metadata.RemoveACLs, ACLs: req.Remove})
	}
	if len(recs) == 0 {
		return OffsetResponse{Offset: im.Offset}, nil
	}
	off, err := c.commit(ctx, recs...)
	if err != nil {
		return OffsetResponse{}, err
	}
	return OffsetResponse{Offset: off}, nil
}

// DeleteACLsRequest removes the bindings matching each filter (validated
// by the broker).
type DeleteACLsRequest struct {
	Filters []authz.Filter `json:"filters"`
}

// DeleteACLsResponse lists, per filter, the bindings it removed (a binding
// matched by several filters is listed under the first).
type DeleteACLsResponse struct {
	Offset  uint64           `json:"offset"`
	Matched [][]metadata.ACL `json:"matched"`
}

// DeleteACLs matches the filters against the current bindings and removes
// the matches, in one batch: the controller's image is the authority, so a
// binding created through any node is found however far the receiving
// broker is behind.
func (c *Controller) DeleteACLs(ctx context.Context, req DeleteACLsRequest) (DeleteACLsResponse, error) {
	im, err := c.begin()
	if err != nil {
		return DeleteACLsResponse{}, err
	}
	defer c.mu.Unlock()
	resp := DeleteACLsResponse{Offset: im.Offset, Matched: make([][]metadata.ACL, len(req.Filters))}
	taken := map[metadata.ACL]bool{}
	var remove []metadata.ACL
	for i, f := range req.Filters {
		for _, a := range im.ACLs {
			if taken[a] || !f.Matches(BindingOf(a)) {
				continue
			}
			taken[a] = true
			remove = append(remove, a)
			resp.Matched[i] = append(resp.Matched[i], a)
		}
	}
	if len(remove) == 0 {
		return resp, nil
	}
	if resp.Offset, err = c.commit(ctx, metadata.Record{Type: metadata.RemoveACLs, ACLs: remove}); err != nil {
		return DeleteACLsResponse{}, err
	}
	return resp, nil
}

// BindingOf is a metadata ACL as the authorizer's binding.
func BindingOf(a metadata.ACL) authz.Binding {
	return authz.Binding{ResourceType: authz.ResourceType(a.ResourceType), ResourceName: a.ResourceName,
		PatternType: authz.PatternType(a.PatternType), Principal: a.Principal, Host: a.Host,
		Operation: authz.Operation(a.Operation), Permission: authz.Permission(a.Permission)}
}
