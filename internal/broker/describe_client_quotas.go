// DescribeClientQuotas (key 48), v0–v1.
//
// Lists the stored quotas (client_quotas.go) of the entities the filter
// matches, as Apache Kafka does: a component matches an entity that has
// that type with the exact name (MATCH_TYPE_EXACT), the default
// (MATCH_TYPE_DEFAULT) or any name or the default (MATCH_TYPE_SPECIFIED);
// strict filters also exclude entities with a type not in the filter. No
// match is an empty (not null) entry list. The filter is validated as Kafka
// validates it, with the same top-level errors: INVALID_REQUEST for an
// empty or repeated entity type, an unknown match type, a match string that
// contradicts the match type, or an ip component combined with
// user/client-id; UNSUPPORTED_VERSION for an entity type other than user,
// client-id and ip. The principal needs DESCRIBE_CONFIGS on the cluster.

package broker

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/quota"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DescribeClientQuotas, (*Broker).handleDescribeClientQuotas) }

// Kafka's quota entity types.
const (
	quotaEntityUser     = "user"
	quotaEntityClientID = "client-id"
	quotaEntityIP       = "ip"
)

func (b *Broker) handleDescribeClientQuotas(_ context.Context, r *wire.Request, req *kmsg.DescribeClientQuotasRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !b.allowedCluster(r, authz.OpDescribeConfigs) { // Kafka: DESCRIBE_CONFIGS on the cluster
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(clusterAuthMessage)
		return resp, nil
	}
	if err := validateQuotaFilter(req.Components); err != nil {
		resp.ErrorCode = err.Code
		resp.ErrorMessage = kmsg.StringPtr(err.Msg)
		return resp, nil // entries stay null, as in Kafka's error answer
	}
	// entries is nullable: an answer without error must carry an empty list
	// (Kafka's admin client reads its size without a null check).
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	q := b.clientQuotas()
	for _, key := range q.SortedKeys() {
		ent, err := quota.ParseKey(key)
		if err != nil || !quotaFilterMatches(req, ent) {
			continue
		}
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range ent.Components() {
			e.Entity = append(e.Entity, kmsg.DescribeClientQuotasResponseEntryEntity{Type: c.Type, Name: c.Name})
		}
		vals := q[key]
		names := make([]string, 0, len(vals))
		for k := range vals {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			e.Values = append(e.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: k, Value: vals[k]})
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}

// quotaFilterMatches reports whether a (validated) filter matches ent.
func quotaFilterMatches(req *kmsg.DescribeClientQuotasRequest, ent quota.Entity) bool {
	part := func(typ string) quota.Part {
		switch typ {
		case quotaEntityUser:
			return ent.User
		case quotaEntityClientID:
			return ent.ClientID
		}
		return ent.IP
	}
	for _, c := range req.Components {
		p := part(c.EntityType)
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if !p.Set || p.Default || c.Match == nil || p.Name != *c.Match {
				return false
			}
		case kmsg.QuotasMatchTypeDefault:
			if !p.Set || !p.Default {
				return false
			}
		default:
			if !p.Set {
				return false
			}
		}
	}
	if req.Strict {
		n := 0
		for _, t := range []string{quotaEntityUser, quotaEntityClientID, quotaEntityIP} {
			if part(t).Set {
				n++
			}
		}
		if n != len(req.Components) {
			return false
		}
	}
	return true
}

// validateQuotaFilter checks a DescribeClientQuotas filter as Kafka does.
func validateQuotaFilter(components []kmsg.DescribeClientQuotasRequestComponent) *Error {
	seen := make(map[string]bool, len(components))
	for _, c := range components {
		switch {
		case c.EntityType == "":
			return errorf(kerr.InvalidRequest, "Invalid empty entity type.")
		case seen[c.EntityType]:
			return errorf(kerr.InvalidRequest, "Entity type %s cannot appear more than once in the filter.", c.EntityType)
		}
		seen[c.EntityType] = true
		switch c.EntityType {
		case quotaEntityUser, quotaEntityClientID, quotaEntityIP:
		default:
			return errorf(kerr.UnsupportedVersion, "Unsupported entity type %s", c.EntityType)
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return errorf(kerr.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
		case kmsg.QuotasMatchTypeDefault, kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return errorf(kerr.InvalidRequest, "Request specified %s, but also specified a match string.", matchTypeName(c.MatchType))
			}
		default:
			return errorf(kerr.InvalidRequest, "Unknown match type %d", int8(c.MatchType))
		}
	}
	if seen[quotaEntityIP] && (seen[quotaEntityUser] || seen[quotaEntityClientID]) {
		return errorf(kerr.InvalidRequest, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	return nil
}

func matchTypeName(m kmsg.QuotasMatchType) string {
	switch m {
	case kmsg.QuotasMatchTypeDefault:
		return "MATCH_TYPE_DEFAULT"
	case kmsg.QuotasMatchTypeAny:
		return "MATCH_TYPE_SPECIFIED"
	}
	return fmt.Sprintf("match type %d", int8(m))
}
