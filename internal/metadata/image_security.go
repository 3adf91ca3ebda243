package metadata

import (
	"cmp"
	"maps"
	"slices"
)

// ACL is one access-control binding as the metadata stores it: Kafka's
// numeric codes (internal/authz gives them meaning).
type ACL struct {
	ResourceType int8   `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  int8   `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    int8   `json:"operation"`
	Permission   int8   `json:"permission"`
}

func compareACLs(x, y ACL) int {
	return cmp.Or(cmp.Compare(x.ResourceType, y.ResourceType), cmp.Compare(x.ResourceName, y.ResourceName),
		cmp.Compare(x.PatternType, y.PatternType), cmp.Compare(x.Principal, y.Principal), cmp.Compare(x.Host, y.Host),
		cmp.Compare(x.Operation, y.Operation), cmp.Compare(x.Permission, y.Permission))
}

// applySecurity applies the client-quota and ACL records; ok is false for
// any other record type.
//
//   - SetClientQuotas replaces the quotas of one entity (QuotaEntity, the
//     key internal/quota gives it) with Quotas; an empty set removes the
//     entity.
//   - AddACLs adds bindings (present ones are kept once); RemoveACLs removes
//     them (absent ones are ignored). Image.ACLs stays sorted.
func (b *builder) applySecurity(r Record) (why string, ok bool) {
	im := b.im
	switch r.Type {
	case SetClientQuotas:
		if r.QuotaEntity == "" {
			return "no quota entity", true
		}
		q := maps.Clone(im.ClientQuotas) // copied per record: quota changes are rare
		if q == nil {
			q = map[string]map[string]float64{}
		}
		if len(r.Quotas) == 0 {
			delete(q, r.QuotaEntity)
		} else {
			q[r.QuotaEntity] = maps.Clone(r.Quotas)
		}
		im.ClientQuotas = q
	case AddACLs, RemoveACLs:
		set := make(map[ACL]bool, len(im.ACLs)+len(r.ACLs))
		for _, a := range im.ACLs {
			set[a] = true
		}
		for _, a := range r.ACLs {
			if r.Type == AddACLs {
				set[a] = true
			} else {
				delete(set, a)
			}
		}
		next := make([]ACL, 0, len(set))
		for a := range set {
			next = append(next, a)
		}
		slices.SortFunc(next, compareACLs)
		im.ACLs = next
	default:
		return b.applyScram(r) // image_scram.go
	}
	return "", true
}
