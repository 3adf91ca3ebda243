package controller

import (
	"context"

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
