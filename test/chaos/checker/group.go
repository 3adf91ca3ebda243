package checker

import (
	"fmt"
	"sort"

	"github.com/sluice-broker/sluice/test/chaos/history"
)

// Anomalies of the consumer-group workload.
const (
	// GroupOffsetBackwards: the group's committed offset of a partition
	// below one acknowledged (a commit) or observed (OffsetFetch) before.
	GroupOffsetBackwards = "group-offset-backwards"
	// GroupMissed: a value the final read holds, acknowledged below the
	// group's final committed offset, that no member of the group consumed
	// (at-least-once broken).
	GroupMissed = "group-missed"
)

type groupObs struct {
	offset    int64
	inv, comp int64
	op        int
	what      string
}

// checkGroups: committed offsets of the group never go backwards in real
// time, and every value the final read holds below the group's final
// committed offset was consumed by some member.
func (c *state) checkGroups() {
	obs := map[string][]groupObs{}
	consumed := map[int64]bool{}
	final := map[string]int64{}
	finalOp := -1
	for _, p := range c.ops {
		if !p.done {
			continue
		}
		op := p.comp
		switch op.F {
		case history.FGroupPoll:
			c.res.GroupPolls++
			for _, m := range op.Value {
				for _, r := range m.Records {
					consumed[r[1]] = true
				}
			}
		case history.FCommit:
			c.res.GroupCommits[op.Type]++
			if op.Type != history.OK {
				continue
			}
			for _, m := range op.Value {
				if m.F == history.MCommit && m.Offset != nil {
					obs[m.Key] = append(obs[m.Key], groupObs{*m.Offset, p.inv.Time, op.Time, op.Index, "commit acknowledged"})
				}
			}
		case history.FCommitted, history.FFinalCommitted:
			if op.Type != history.OK {
				continue
			}
			for _, m := range op.Value {
				if m.F == history.MCommit && m.Offset != nil {
					obs[m.Key] = append(obs[m.Key], groupObs{*m.Offset, p.inv.Time, op.Time, op.Index, "OffsetFetch"})
					if op.F == history.FFinalCommitted {
						final[m.Key] = *m.Offset
						finalOp = op.Index
					}
				}
			}
		}
	}
	for _, key := range sortedKeys(obs) {
		os := obs[key]
		// By completion: the highest offset completed so far, against every
		// observation invoked after it completed.
		byComp := append([]groupObs(nil), os...)
		sort.Slice(byComp, func(i, j int) bool { return byComp[i].comp < byComp[j].comp })
		byInv := append([]groupObs(nil), os...)
		sort.Slice(byInv, func(i, j int) bool { return byInv[i].inv < byInv[j].inv })
		best, k := groupObs{offset: -1}, 0
		for _, o := range byInv {
			for k < len(byComp) && byComp[k].comp < o.inv {
				if byComp[k].offset > best.offset {
					best = byComp[k]
				}
				k++
			}
			if best.offset >= 0 && o.offset < best.offset {
				c.once(fmt.Sprintf("gob %s %d", key, o.op), GroupOffsetBackwards, key,
					fmt.Sprintf("committed offset %d (%s) after %d (%s, completed before)", o.offset, o.what, best.offset, best.what), best.op, o.op)
			}
		}
	}
	if finalOp < 0 {
		return
	}
	for _, v := range sortedValues(c.writes) {
		w := c.writes[v]
		if w.status != stCommitted || w.ack == nil || w.txn {
			continue
		}
		f, ok := final[w.key]
		if !ok || *w.ack >= f || consumed[v] {
			continue
		}
		if fr := c.finals[w.key][history.ReadUncommitted]; fr == nil || !fr.values[v] {
			continue // missing from the log itself: lost-write says so
		}
		c.add(GroupMissed, w.key, fmt.Sprintf("value %d acknowledged at offset %d, below the group's final committed offset %d, was never consumed by a member", v, *w.ack, f), w.op, finalOp)
	}
}

func sortedValues(m map[int64]*write) []int64 {
	out := make([]int64, 0, len(m))
	for v := range m {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
