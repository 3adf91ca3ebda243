// AlterClientQuotas (key 49), v0–v1.
//
// Sets and removes client quotas (client_quotas.go stores and enforces
// them). Each entry is answered on its own, in request order, with its
// entity echoed, and validated as Apache Kafka's controller does, with its
// INVALID_REQUEST messages: the entity (empty, repeated or unknown type,
// empty name, ip combined with user/client-id, an ip that is not an
// address), repeated keys, and every value set (a key the entity type does
// not have, "Invalid configuration key ...", a value not above zero, a
// fraction for an integer key). Removing a quota that is not set succeeds.
// validate_only validates and stores nothing. The principal needs
// ALTER_CONFIGS on the cluster.
//
// The valid entries are applied together: on a cluster node by the
// controller, as metadata records (answered once this broker has applied
// them); on a single node in client-quotas.json, durably, before the
// answer.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/quota"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.AlterClientQuotas, (*Broker).handleAlterClientQuotas) }

func (b *Broker) handleAlterClientQuotas(_ context.Context, r *wire.Request, req *kmsg.AlterClientQuotasRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	allowed := b.allowedCluster(r, authz.OpAlterConfigs) // Kafka: ALTER_CONFIGS on the cluster
	ops := map[string][]quota.Op{}
	var order []string
	var valid []int
	for i, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, ent := range e.Entity {
			re.Entity = append(re.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: ent.Type, Name: ent.Name})
		}
		ent, eops, err := alterClientQuotaEntry(e)
		if !allowed {
			err = errorf(kerr.ClusterAuthorizationFailed, clusterAuthMessage)
		}
		if err != nil {
			re.ErrorCode, re.ErrorMessage = err.Code, kmsg.StringPtr(err.Msg)
		} else if !req.ValidateOnly {
			key := ent.Key()
			if _, seen := ops[key]; !seen {
				order = append(order, key)
			}
			ops[key] = append(ops[key], eops...)
			valid = append(valid, i)
		}
		resp.Entries = append(resp.Entries, re)
	}
	if len(valid) == 0 {
		return resp, nil
	}
	var err error
	if b.cluster != nil {
		err = b.cluster.alterClientQuotas(ops, order)
	} else {
		err = b.alterLocalQuotas(ops, order)
	}
	if err != nil {
		be := asBrokerError(err).(*Error)
		if b.cluster == nil {
			be = errorf(kerr.UnknownServerError, "%v", err)
		}
		for _, i := range valid {
			resp.Entries[i].ErrorCode, resp.Entries[i].ErrorMessage = be.Code, kmsg.StringPtr(be.Msg)
		}
		b.logger.Error("AlterClientQuotas failed", "err", err)
		return resp, nil
	}
	for _, key := range order {
		b.logger.Info("client quota changed", "entity", key, "ops", ops[key], "by", r.Conn.Principal())
	}
	return resp, nil
}

// alterClientQuotaEntry validates one entry and returns its entity and ops.
func alterClientQuotaEntry(e kmsg.AlterClientQuotasRequestEntry) (quota.Entity, []quota.Op, *Error) {
	comps := make([]quota.Component, len(e.Entity))
	for i, c := range e.Entity {
		comps[i] = quota.Component{Type: c.Type, Name: c.Name}
	}
	ent, err := quota.ParseEntity(comps)
	if err != nil {
		return ent, nil, errorf(kerr.InvalidRequest, "%s", err.Error())
	}
	keys := make(map[string]bool, len(e.Ops))
	ops := make([]quota.Op, 0, len(e.Ops))
	for _, op := range e.Ops {
		if keys[op.Key] {
			return ent, nil, errorf(kerr.InvalidRequest, "Duplicate quota key %s not updating quota for this entity %s", op.Key, ent)
		}
		keys[op.Key] = true
		if !op.Remove {
			if err := quota.ValidateValue(ent, op.Key, op.Value); err != nil {
				return ent, nil, errorf(kerr.InvalidRequest, "%s", err.Error())
			}
		}
		ops = append(ops, quota.Op{Key: op.Key, Value: op.Value, Remove: op.Remove})
	}
	return ent, ops, nil
}

// alterClientQuotas has the controller record quota changes and waits
// until this broker has applied them.
func (c *clusterNode) alterClientQuotas(ops map[string][]quota.Op, order []string) error {
	req := controller.AlterClientQuotasRequest{}
	for _, key := range order {
		req.Entries = append(req.Entries, controller.QuotaEntry{Entity: key, Ops: ops[key]})
	}
	return decideOffset(c, "client-quotas", c.ctrl.AlterClientQuotas, req)
}
