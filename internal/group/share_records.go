package group

import (
	"bytes"
	"errors"
	"maps"
	"sort"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Share-group records (KIP-932: ShareGroupMemberMetadata 10, ShareGroupMetadata
// 11, ShareGroupTargetAssignmentMetadata 12, ShareGroupTargetAssignmentMember 13,
// ShareGroupCurrentMemberAssignment 14, ShareGroupStatePartitionMetadata 15).
// Share-group membership is kept by the share manager (internal/share), which
// encodes and decodes these records; the group coordinator only stores them in
// the group's __consumer_offsets partition, keeps the values the log holds by
// group (replayed at load), writes only what changed and tombstones what is gone,
// so that the share manager can rebuild its groups after a restart or a
// coordinator move (ShareRecords).

// shareTombstoneOrder: members' records before the group's, the group epoch last.
var shareTombstoneOrder = map[int16]int{14: 0, 13: 1, 10: 2, 12: 3, 15: 4, 11: 5}

func isShareKeyType(t int16) bool { return t >= 10 && t <= 15 }

// shareKeyGroup returns the group a share-group record key names.
func shareKeyGroup(key []byte) (string, bool) {
	r := kbin.Reader{Src: key}
	t := r.Int16()
	g := r.String()
	return g, r.Ok() && isShareKeyType(t)
}

func (c *Coordinator) replayShareRecord(key, value []byte) {
	gid, ok := shareKeyGroup(key)
	if !ok {
		c.log.Warn("group: skipping unreadable share-group record key")
		return
	}
	c.setShareRecord(gid, string(key), value)
}

func (c *Coordinator) setShareRecord(gid, key string, value []byte) {
	if value == nil {
		if m := c.shareRecs[gid]; m != nil {
			delete(m, key)
			if len(m) == 0 {
				delete(c.shareRecs, gid)
			}
		}
		return
	}
	if c.shareRecs == nil {
		c.shareRecs = map[string]map[string][]byte{}
	}
	if c.shareRecs[gid] == nil {
		c.shareRecs[gid] = map[string][]byte{}
	}
	c.shareRecs[gid][key] = append([]byte(nil), value...)
}

// ShareRecords returns the share-group records of the groups this
// coordinator serves, by group (key -> value), as the log holds them.
func (c *Coordinator) ShareRecords() map[string]map[string][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]map[string][]byte, len(c.shareRecs))
	for gid, recs := range c.shareRecs {
		if c.notCoordinator(gid) {
			continue
		}
		out[gid] = maps.Clone(recs)
	}
	return out
}

// ErrNotCoordinator: this broker does not serve the group's partition.
var ErrNotCoordinator = errors.New("group: not the coordinator of this group")

// WriteShareRecords makes the log hold exactly want (key -> value) as
// group's share-group records: it writes the records whose value changed and
// tombstones the others, in one batch. want's keys must name group.
func (c *Coordinator) WriteShareRecords(group string, want map[string][]byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.notCoordinator(group) {
		return ErrNotCoordinator
	}
	have := c.shareRecs[group]
	var recs []record
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { // group-level records after the members'
		ti, tj := keyType(keys[i]), keyType(keys[j])
		if (ti == 11) != (tj == 11) {
			return tj == 11
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		if old, ok := have[k]; !ok || !bytes.Equal(old, want[k]) {
			recs = append(recs, record{key: []byte(k), value: want[k]})
		}
	}
	var stale []string
	for k := range have {
		if _, ok := want[k]; !ok {
			stale = append(stale, k)
		}
	}
	sort.Slice(stale, func(i, j int) bool {
		oi, oj := shareTombstoneOrder[keyType(stale[i])], shareTombstoneOrder[keyType(stale[j])]
		if oi != oj {
			return oi < oj
		}
		return stale[i] < stale[j]
	})
	for _, k := range stale {
		recs = append(recs, record{key: []byte(k)})
	}
	if len(recs) == 0 {
		return nil
	}
	if err := c.persist(group, recs...); err != nil {
		return err
	}
	for _, r := range recs {
		c.setShareRecord(group, string(r.key), r.value)
	}
	return nil
}

// ShareRecordsOf returns group's share-group records as the log holds them
// (nil: none, or not this coordinator's group).
func (c *Coordinator) ShareRecordsOf(group string) map[string][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.notCoordinator(group) || len(c.shareRecs[group]) == 0 {
		return nil
	}
	return maps.Clone(c.shareRecs[group])
}

// ShareRecordsIn returns the share-group records of the groups of
// __consumer_offsets partition p, by group.
func (c *Coordinator) ShareRecordsIn(p int32) map[string]map[string][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shareRecordsInLocked(p)
}

func (c *Coordinator) shareRecordsInLocked(p int32) map[string]map[string][]byte {
	out := map[string]map[string][]byte{}
	for gid, recs := range c.shareRecs {
		if PartitionFor(gid, c.cfg.NumPartitions) == p && !c.notCoordinator(gid) {
			out[gid] = maps.Clone(recs)
		}
	}
	return out
}
