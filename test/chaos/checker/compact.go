package checker

import (
	"fmt"
	"sort"

	"github.com/sluice-broker/sluice/test/chaos/history"
)

// CompactionMismatch: after healing, the latest record of a record key of
// the compacted topic is not the last acknowledged write of that key (older,
// a value nobody wrote, or missing though the last acknowledged write was
// not a tombstone).
const CompactionMismatch = "compaction-mismatch"

type kvWrite struct {
	value  *int64 // nil: a tombstone
	offset *int64 // acknowledged offset
	ok     bool
	op     int
}

func sameValue(a, b *int64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func kvText(v *int64) string {
	if v == nil {
		return "a tombstone"
	}
	return fmt.Sprintf("value %d", *v)
}

// checkCompaction compares the final read of the compacted topic with the
// keyed writes.
func (c *state) checkCompaction() {
	writes := map[string][]kvWrite{}
	var final *pair
	for i, p := range c.ops {
		switch p.comp.F {
		case history.FKVSend:
			if !p.done {
				continue
			}
			c.res.KVWrites[p.comp.Type]++
			for _, m := range p.comp.Value {
				if m.F == history.MKV && p.comp.Type != history.Fail {
					writes[m.Item] = append(writes[m.Item], kvWrite{value: m.Value, offset: m.Offset, ok: p.comp.Type == history.OK && m.Offset != nil, op: p.comp.Index})
				}
			}
		case history.FKVFinal:
			if p.done && p.comp.Type == history.OK {
				final = &c.ops[i]
			}
		}
	}
	if final == nil {
		return
	}
	if final.comp.Incomplete {
		c.add(IncompleteFinalRead, history.FKVFinal, "the final read of the compacted topic: "+final.comp.Error, final.comp.Index)
	}
	latest := map[string]history.Mop{}
	for _, m := range final.comp.Value {
		latest[m.Item] = m
	}
	c.res.KVKeys = len(latest)
	items := make([]string, 0, len(writes))
	for it := range writes {
		items = append(items, it)
	}
	sort.Strings(items)
	for _, it := range items {
		var last *kvWrite
		for i, w := range writes[it] {
			if w.ok && (last == nil || *w.offset > *last.offset) {
				last = &writes[it][i]
			}
		}
		f, read := latest[it]
		switch {
		case !read:
			if last != nil && last.value != nil {
				c.add(CompactionMismatch, it, fmt.Sprintf("no record of key %s after healing, though its last acknowledged write (%s at offset %d) is not a tombstone", it, kvText(last.value), *last.offset), last.op, final.comp.Index)
			}
		case last != nil && *f.Offset < *last.offset:
			c.add(CompactionMismatch, it, fmt.Sprintf("key %s: latest record %s at offset %d, older than its last acknowledged write (%s at offset %d)", it, kvText(f.Value), *f.Offset, kvText(last.value), *last.offset), last.op, final.comp.Index)
		case last != nil && *f.Offset == *last.offset && !sameValue(f.Value, last.value):
			c.add(CompactionMismatch, it, fmt.Sprintf("key %s: offset %d holds %s, acknowledged as %s", it, *f.Offset, kvText(f.Value), kvText(last.value)), last.op, final.comp.Index)
		case last == nil || *f.Offset > *last.offset:
			// Only a write whose outcome is unknown can be newer.
			found := false
			for _, w := range writes[it] {
				found = found || !w.ok && sameValue(w.value, f.Value)
			}
			if !found {
				c.add(CompactionMismatch, it, fmt.Sprintf("key %s: latest record %s at offset %d, which no write of unknown outcome after the last acknowledged one wrote", it, kvText(f.Value), *f.Offset), final.comp.Index)
			}
		}
	}
}

// CompactedReplicaDivergence: after healing, two nodes' copies of a
// partition of the compacted topic disagree on the latest record of a
// record key below the final read's high watermark (offset or value; a
// tombstone and no record at all count as the same: each replica removes
// tombstones on its own once delete.retention.ms has passed).
const CompactedReplicaDivergence = "compacted-replica-divergence"

// checkCompactedReplicas compares the nodes' latest record per record key
// (replica-kv mops of replica-log operations) of each compacted partition.
func (c *state) checkCompactedReplicas() {
	type copyOf struct {
		node, op int
		kv       map[string]string
	}
	copies := map[string][]*copyOf{}
	for _, p := range c.ops {
		if p.comp.F != history.FReplicaLog || !p.done || p.inv.Node == nil {
			continue
		}
		byKey := map[string]*copyOf{}
		for _, m := range p.comp.Value {
			if m.F != history.MReplicaKV {
				continue
			}
			cp := byKey[m.Key]
			if cp == nil {
				cp = &copyOf{node: *p.inv.Node, op: p.comp.Index, kv: map[string]string{}}
				byKey[m.Key] = cp
				copies[m.Key] = append(copies[m.Key], cp)
			}
			if m.Item != "" && m.Value != nil && m.Offset != nil {
				cp.kv[m.Item] = fmt.Sprintf("value %d at offset %d", *m.Value, *m.Offset)
			}
		}
	}
	for _, key := range sortedKeys(copies) {
		cs := copies[key]
		sort.Slice(cs, func(i, j int) bool { return cs[i].node < cs[j].node })
		// The reference is the view most copies hold, so that one
		// deviating replica is the one named.
		text := func(cp *copyOf) string { return fmt.Sprint(cp.kv) }
		same := map[string]int{}
		for _, cp := range cs {
			same[text(cp)]++
		}
		ref := cs[0]
		for _, cp := range cs {
			if same[text(cp)] > same[text(ref)] {
				ref = cp
			}
		}
		for _, cp := range cs {
			if cp == ref || text(cp) == text(ref) {
				continue
			}
			items := map[string]bool{}
			for it := range ref.kv {
				items[it] = true
			}
			for it := range cp.kv {
				items[it] = true
			}
			for _, it := range sortedKeys(items) {
				a, b := ref.kv[it], cp.kv[it]
				if a == b {
					continue
				}
				c.add(CompactedReplicaDivergence, key, fmt.Sprintf("record key %s: node %d's copy holds %s as its latest record, node %d's %s",
					it, ref.node, orTombstone(a), cp.node, orTombstone(b)), ref.op, cp.op)
				break
			}
		}
	}
}

func orTombstone(s string) string {
	if s == "" {
		return "a tombstone or nothing"
	}
	return s
}
