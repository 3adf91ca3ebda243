package metadata

import "maps"

// applyGroupConfigs applies SetGroupConfigs: the configs of one group
// (Entity, the group id) replaced by Configs; an empty set removes the
// group's entry. The map is copied per record: group config changes are
// rare.
func (b *builder) applyGroupConfigs(r Record) string {
	if r.Entity == "" {
		return "no group id"
	}
	next := maps.Clone(b.im.GroupConfigs)
	if next == nil {
		next = map[string]map[string]string{}
	}
	if len(r.Configs) == 0 {
		delete(next, r.Entity)
	} else {
		next[r.Entity] = maps.Clone(r.Configs)
	}
	b.im.GroupConfigs = next
	return ""
}
