package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/history"
)

// ReplicaDivergence: after healing, the replicas of a partition do not hold
// the same log below the final high watermark: a batch that differs (base or
// last offset, leader epoch or CRC) between two nodes' copies, an entry of
// the aborted-transaction index (.txnindex: producer id, first and last
// offset) whose ABORT marker is below the high watermark that differs, or
// a copy that ends below the high watermark though every replica had time
// to get back in sync.
const ReplicaDivergence = "replica-divergence"

// LeaderMove is one partition whose leader was faulted: how long until
// clients' Metadata named a leader again.
type LeaderMove struct {
	Key string
	// After is the time from the fault until a Metadata answer (from a
	// node other than the faulted one, or from it after its heal) named a
	// leader again; -1 when none did.
	After time.Duration
	// Leader is that leader; Moved tells whether it is another node (a
	// failover) rather than the faulted node back.
	Leader int
	Moved  bool
}

// checkReplicas compares every node's copy of each partition (replica-log
// operations, read from the stopped nodes' data directories) below the final
// read's high watermark.
func (c *state) checkReplicas() {
	hwm := map[string]int64{}
	for _, p := range c.ops {
		if p.comp.F == history.FFinalPoll && p.comp.Isolation == history.ReadUncommitted && p.done {
			for k, t := range p.comp.Targets {
				hwm[k] = t
			}
		}
	}
	type copyOf struct {
		node    int
		op      int
		batches [][4]int64
		aborted [][3]int64
	}
	copies := map[string][]copyOf{}
	for _, p := range c.ops {
		if p.comp.F != history.FReplicaLog || !p.done || p.inv.Node == nil {
			continue
		}
		c.res.ReplicaLogs++
		for _, m := range p.comp.Value {
			if m.F == history.MReplica {
				copies[m.Key] = append(copies[m.Key], copyOf{node: *p.inv.Node, op: p.comp.Index, batches: m.Batches, aborted: m.Aborted})
			}
		}
	}
	for _, key := range sortedKeys(copies) {
		cs := copies[key]
		h, ok := hwm[key]
		if !ok {
			continue // no final read of it: incomplete-final-read says so
		}
		c.res.ReplicaKeys++
		sort.Slice(cs, func(i, j int) bool { return cs[i].node < cs[j].node })
		below := func(bs [][4]int64) [][4]int64 {
			var out [][4]int64
			for _, b := range bs {
				if b[0] < h {
					out = append(out, b)
				}
			}
			return out
		}
		// The reference is the copy most nodes hold (then the longest), so
		// that one deviating replica is the one named.
		text := func(cp copyOf) string { return fmt.Sprint(below(cp.batches), abortedBelow(cp.aborted, h)) }
		same := map[string]int{}
		for _, cp := range cs {
			same[text(cp)]++
		}
		r := 0
		for i, cp := range cs {
			ni, nr := same[text(cp)], same[text(cs[r])]
			if ni > nr || ni == nr && len(below(cp.batches)) > len(below(cs[r].batches)) {
				r = i
			}
		}
		ref := below(cs[r].batches)
		for _, cp := range cs {
			bs := below(cp.batches)
			end := int64(0)
			if len(bs) > 0 {
				end = bs[len(bs)-1][1] + 1
			}
			if end < h {
				c.add(ReplicaDivergence, key, fmt.Sprintf("node %d's copy ends at offset %d, below the high watermark %d", cp.node, end, h), cp.op)
				continue
			}
			if cp.node == cs[r].node {
				continue
			}
			for i := 0; i < max(len(bs), len(ref)); i++ {
				var a, b string
				if i < len(ref) {
					a = batchText(ref[i])
				}
				if i < len(bs) {
					b = batchText(bs[i])
				}
				if a != b {
					c.add(ReplicaDivergence, key, fmt.Sprintf("below the high watermark %d, batch %d of node %d is %s, of node %d %s", h, i, cs[r].node, orNone(a), cp.node, orNone(b)), cs[r].op, cp.op)
					break
				}
			}
			refAb, ab := abortedBelow(cs[r].aborted, h), abortedBelow(cp.aborted, h)
			for i := 0; i < max(len(ab), len(refAb)); i++ {
				var a, b string
				if i < len(refAb) {
					a = abortedText(refAb[i])
				}
				if i < len(ab) {
					b = abortedText(ab[i])
				}
				if a != b {
					c.add(ReplicaDivergence, key, fmt.Sprintf("below the high watermark %d, aborted-transaction index entry %d of node %d is %s, of node %d %s", h, i, cs[r].node, orNone(a), cp.node, orNone(b)), cs[r].op, cp.op)
					break
				}
			}
		}
	}
}

// abortedBelow is the index entries whose ABORT marker is below h.
func abortedBelow(es [][3]int64, h int64) [][3]int64 {
	var out [][3]int64
	for _, e := range es {
		if e[2] < h {
			out = append(out, e)
		}
	}
	return out
}

func abortedText(e [3]int64) string {
	return fmt.Sprintf("[producer %d, offsets %d-%d]", e[0], e[1], e[2])
}

func batchText(b [4]int64) string {
	return fmt.Sprintf("[offsets %d-%d, leader epoch %d, crc %08x]", b[0], b[1], b[2], uint32(b[3]))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// leaders measures, for each fault, how long each partition its node led
// (as Metadata named it last before the fault) was without a leader as
// clients saw it: until a Metadata answer, invoked after the fault began,
// from another node (or from the faulted one after its heal) named a leader
// other than the faulted node, or the faulted node again after its heal.
func (c *state) leaders() {
	type obs struct {
		inv, comp int64
		asked     int
		leaders   map[string]int32
	}
	var list []obs
	for _, p := range c.ops {
		if p.comp.F != history.FController || !p.done || p.comp.Type != history.OK || p.comp.Leaders == nil || p.inv.Node == nil {
			continue
		}
		list = append(list, obs{inv: p.inv.Time, comp: p.comp.Time, asked: *p.inv.Node, leaders: p.comp.Leaders})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].comp < list[j].comp })
	for i := range c.res.Faults {
		f := &c.res.Faults[i]
		led := map[string]int32{}
		for _, o := range list {
			if o.comp >= int64(f.Start) {
				break
			}
			for k, l := range o.leaders {
				led[k] = l
			}
		}
		for _, key := range sortedKeys(led) {
			if int(led[key]) != f.Node {
				continue
			}
			m := LeaderMove{Key: key, After: -1, Leader: -1}
			for _, o := range list {
				if o.inv < int64(f.Start) {
					continue
				}
				healed := f.Healed >= 0 && o.inv >= int64(f.Healed)
				if o.asked == f.Node && !healed {
					continue // the faulted node's own stale view
				}
				l, ok := o.leaders[key]
				if !ok || l < 0 || (int(l) == f.Node && !healed) {
					continue
				}
				m.After, m.Leader, m.Moved = time.Duration(o.comp-int64(f.Start)), int(l), int(l) != f.Node
				break
			}
			f.Leaders = append(f.Leaders, m)
		}
	}
}

// LeaderFailover summarises the partitions whose leader was faulted and
// that clients saw served by another node: how many, the median and the
// longest time to it; back counts those that waited for the faulted node to
// return, none those that had no leader again before the end.
func (r Result) LeaderFailover() (moved int, median, longest time.Duration, back, none int) {
	var ds []time.Duration
	for _, f := range r.Faults {
		for _, m := range f.Leaders {
			switch {
			case m.After < 0:
				none++
			case m.Moved:
				ds = append(ds, m.After)
			default:
				back++
			}
		}
	}
	if len(ds) == 0 {
		return 0, 0, 0, back, none
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return len(ds), ds[len(ds)/2], ds[len(ds)-1], back, none
}

// leaderText is one fault's line about its node's partitions.
func leaderText(f Fault) string {
	if len(f.Leaders) == 0 {
		return ""
	}
	var moved, back, none []string
	for _, m := range f.Leaders {
		switch {
		case m.After < 0:
			none = append(none, m.Key)
		case m.Moved:
			moved = append(moved, fmt.Sprintf("%s→%d %.2fs", m.Key, m.Leader, m.After.Seconds()))
		default:
			back = append(back, fmt.Sprintf("%s %.2fs", m.Key, m.After.Seconds()))
		}
	}
	var parts []string
	if len(moved) > 0 {
		parts = append(parts, "new leader "+strings.Join(moved, ", "))
	}
	if len(back) > 0 {
		parts = append(parts, "led by it again after its return "+strings.Join(back, ", "))
	}
	if len(none) > 0 {
		parts = append(parts, "no leader seen again "+strings.Join(none, ", "))
	}
	return fmt.Sprintf("    node %d led %d partition(s): %s\n", f.Node, len(f.Leaders), strings.Join(parts, "; "))
}
