// AlterClientQuotas (key 49), v0–v1.
//
// Sluice does not enforce client quotas, so it refuses to set one rather
// than store a value that would silently have no effect. Each entry is
// answered on its own, in request order, with its entity echoed:
//
//   - an invalid entity or op list gets Apache Kafka's own INVALID_REQUEST
//     answers (empty entity, repeated entity type, unknown entity type, empty
//     entity name, ip combined with user/client-id, repeated quota key);
//   - an entry that sets any quota gets INVALID_REQUEST (42) with a message
//     saying quotas are not supported. INVALID_REQUEST is what Kafka answers
//     for every quota alteration it cannot apply (unknown key, bad value,
//     unhandled entity type), and no code says "feature not available" for a
//     single entry; the message carries the reason;
//   - an entry that only removes quotas succeeds: there is nothing to remove,
//     and Kafka, too, answers success for removing a quota that is not set.
//
// validate_only gives the same answers. Nothing is stored either way.

package broker

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.AlterClientQuotas, (*Broker).handleAlterClientQuotas) }

func (b *Broker) handleAlterClientQuotas(_ context.Context, r *wire.Request, req *kmsg.AlterClientQuotasRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, ent := range e.Entity {
			re.Entity = append(re.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: ent.Type, Name: ent.Name})
		}
		err, unsupported := alterClientQuotaEntry(e)
		if !b.allowedCluster(r, authz.OpAlterConfigs) { // Kafka: ALTER_CONFIGS on the cluster
			err, unsupported = errorf(kerr.ClusterAuthorizationFailed, clusterAuthMessage), false
		}
		if err != nil {
			re.ErrorCode, re.ErrorMessage = err.Code, kmsg.StringPtr(err.Msg)
		}
		if unsupported {
			b.logger.Info("AlterClientQuotas refused: client quotas are not supported",
				"entity", quotaEntityString(e.Entity), "client_id", r.Header.ClientIDString(), "remote", r.Remote)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp, nil
}

// alterClientQuotaEntry returns the error for one entry (nil for success)
// and whether it was refused because it sets a quota.
func alterClientQuotaEntry(e kmsg.AlterClientQuotasRequestEntry) (*Error, bool) {
	if err := validateQuotaEntity(e.Entity); err != nil {
		return err, false
	}
	keys := make(map[string]bool, len(e.Ops))
	for _, op := range e.Ops {
		if keys[op.Key] {
			return errorf(kerr.InvalidRequest, "Duplicate quota key %s not updating quota for this entity %s", op.Key, quotaEntityString(e.Entity)), false
		}
		keys[op.Key] = true
	}
	for _, op := range e.Ops {
		if !op.Remove {
			return errorf(kerr.InvalidRequest, "Client quotas are not supported by this broker (it enforces none): cannot set %s for %s",
				op.Key, quotaEntityString(e.Entity)), true
		}
	}
	return nil, false
}

// validateQuotaEntity checks an entity as Kafka's controller does.
func validateQuotaEntity(entity []kmsg.AlterClientQuotasRequestEntryEntity) *Error {
	if len(entity) == 0 {
		return errorf(kerr.InvalidRequest, "Invalid empty client quota entity")
	}
	seen := make(map[string]bool, len(entity))
	for _, ent := range entity {
		if seen[ent.Type] {
			return errorf(kerr.InvalidRequest, "Invalid client quota entity, duplicate entity entry %s", ent.Type)
		}
		seen[ent.Type] = true
		switch ent.Type {
		case quotaEntityUser, quotaEntityClientID, quotaEntityIP:
		default:
			return errorf(kerr.InvalidRequest, "Unhandled client quota entity type: %s", ent.Type)
		}
		if ent.Name != nil && *ent.Name == "" {
			return errorf(kerr.InvalidRequest, "Empty %s not supported", ent.Type)
		}
	}
	if seen[quotaEntityIP] && (seen[quotaEntityUser] || seen[quotaEntityClientID]) {
		return errorf(kerr.InvalidRequest, "Invalid quota entity combination, IP entity should not be combined with User or ClientId")
	}
	return nil
}

// quotaEntityString renders an entity for messages and logs
// ("user=alice, client-id=<default>").
func quotaEntityString(entity []kmsg.AlterClientQuotasRequestEntryEntity) string {
	var sb strings.Builder
	for i, ent := range entity {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(ent.Type)
		sb.WriteByte('=')
		if ent.Name == nil {
			sb.WriteString("<default>")
		} else {
			sb.WriteString(*ent.Name)
		}
	}
	return sb.String()
}
