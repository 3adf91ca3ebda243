package checker

import (
	"fmt"
	"sort"

	"github.com/sluice-broker/sluice/test/chaos/history"
)

// Sabotages lists the anomalies Sabotage can plant in a real history.
var Sabotages = []string{LostWrite, Unseen, Duplicate, InconsistentOffset, NonMonotonicSend,
	NonMonotonicPoll, PollSkip, AbortedRead, UncommittedRead, HWMBackwards, MetadataLost, MetadataDiverged,
	ReplicaDivergence, GroupOffsetBackwards, GroupMissed, CompactionMismatch, CompactedReplicaDivergence}

// needs names the operation a workload must have run for an anomaly to be
// planted: a history without transactions (--workloads without txn) has
// nothing to plant an aborted read into, and that is no failure of the
// checker; a history with transactions and none committed is.
var needs = map[string]string{AbortedRead: history.FTxn, UncommittedRead: history.FTxn,
	MetadataLost: history.FCreateTopic, MetadataDiverged: history.FFinalMetadata,
	ReplicaDivergence: history.FReplicaLog, GroupOffsetBackwards: history.FFinalCommitted,
	GroupMissed: history.FFinalCommitted, CompactionMismatch: history.FKVFinal,
	CompactedReplicaDivergence: history.MReplicaKV}

// Sabotage returns a copy of a (clean) history with one anomaly of the given
// type planted in it, as a broken broker would have produced it: a record
// dropped from the final read, a value read twice, an aborted value served to
// read_committed, and so on. It shows that the checker names anomalies in
// real histories, not only in hand-made ones. The error says when the history
// has nothing to plant that anomaly into (for example no aborted transaction).
func Sabotage(ops []history.Op, kind string) ([]history.Op, error) {
	out := make([]history.Op, len(ops))
	copy(out, ops)
	// clone copies an op's mops so that changing them leaves ops alone.
	clone := func(i int) *history.Op {
		op := out[i]
		op.Value = make([]history.Mop, len(ops[i].Value))
		for j, m := range ops[i].Value {
			m.Records = append([][2]int64(nil), m.Records...)
			m.Batches = append([][4]int64(nil), m.Batches...)
			op.Value[j] = m
		}
		if ops[i].Watermarks != nil {
			op.Watermarks = map[string]history.Watermark{}
			for k, w := range ops[i].Watermarks {
				op.Watermarks[k] = w
			}
		}
		out[i] = op
		return &out[i]
	}
	finals := func(iso string) []int {
		var idx []int
		for i, op := range out {
			if op.F == history.FFinalPoll && op.Type == history.OK && (iso == "" || op.Isolation == iso) {
				idx = append(idx, i)
			}
		}
		return idx
	}
	// removeFromFinals drops value v from every final read.
	removeFromFinals := func(v int64) {
		for _, i := range finals("") {
			op := clone(i)
			for j := range op.Value {
				recs := op.Value[j].Records[:0]
				for _, r := range op.Value[j].Records {
					if r[1] != v {
						recs = append(recs, r)
					}
				}
				op.Value[j].Records = recs
			}
		}
	}
	// a final read_uncommitted mop with at least n records (i, j), the first
	// in history order.
	finalMop := func(n int) (int, int, bool) {
		for _, i := range finals(history.ReadUncommitted) {
			for j, m := range out[i].Value {
				if len(m.Records) >= n {
					return i, j, true
				}
			}
		}
		return 0, 0, false
	}
	pollMop := func(n int) (int, int, bool) {
		for i, op := range out {
			if op.F != history.FPoll || op.Type != history.OK {
				continue
			}
			for j, m := range op.Value {
				if len(m.Records) >= n {
					return i, j, true
				}
			}
		}
		return 0, 0, false
	}
	none := fmt.Errorf("the history has nothing to plant %s into", kind)
	switch kind {
	case LostWrite:
		i, j, ok := finalMop(3)
		if !ok {
			return nil, none
		}
		removeFromFinals(out[i].Value[j].Records[1][1])
	case Unseen:
		// The last record of a final read whose value was an acknowledged
		// (non-transactional) send: without it the read ends before the
		// write's offset, which is "unseen". An aborted or unknown value
		// there would be no anomaly at all.
		acked := map[int64]bool{}
		for _, op := range out {
			if op.F != history.FSend || op.Type != history.OK {
				continue
			}
			for _, m := range op.Value {
				if m.Value != nil && m.Offset != nil {
					acked[*m.Value] = true
				}
			}
		}
		planted := false
		for _, i := range finals(history.ReadUncommitted) {
			for _, m := range out[i].Value {
				if n := len(m.Records); n > 0 && acked[m.Records[n-1][1]] {
					removeFromFinals(m.Records[n-1][1])
					planted = true
					break
				}
			}
			if planted {
				break
			}
		}
		if !planted {
			return nil, none
		}
	case Duplicate:
		i, j, ok := finalMop(1)
		if !ok {
			return nil, none
		}
		op := clone(i)
		recs := op.Value[j].Records
		op.Value[j].Records = append(recs, [2]int64{recs[len(recs)-1][0] + 1, recs[0][1]})
	case InconsistentOffset:
		i, j, ok := pollMop(2)
		if !ok {
			return nil, none
		}
		op := clone(i)
		// the second record's offset now holds the first record's value too
		op.Value[j].Records[0][0] = op.Value[j].Records[1][0]
	case NonMonotonicSend:
		type pk struct {
			proc int
			key  string
		}
		first := map[pk]int64{}
		for i, op := range out {
			if op.F != history.FSend || op.Type != history.OK {
				continue
			}
			for j, m := range op.Value {
				if m.Offset == nil {
					continue
				}
				k := pk{op.Process, m.Key}
				if off, ok := first[k]; ok && off < *m.Offset {
					c := clone(i)
					c.Value[j].Offset = history.I64(off)
					return out, nil
				}
				if _, ok := first[k]; !ok {
					first[k] = *m.Offset
				}
			}
		}
		return nil, none
	case NonMonotonicPoll:
		i, j, ok := pollMop(2)
		if !ok {
			return nil, none
		}
		op := clone(i)
		r := op.Value[j].Records
		r[0], r[1] = r[1], r[0]
	case PollSkip:
		i, j, ok := pollMop(3)
		if !ok {
			return nil, none
		}
		op := clone(i)
		r := op.Value[j].Records
		op.Value[j].Records = append(r[:1:1], r[2:]...)
	case AbortedRead:
		// an aborted transaction's value with an offset, served to the final
		// read_committed read
		for _, op := range out {
			if op.F != history.FTxn || op.Type != history.Fail {
				continue
			}
			for _, m := range op.Value {
				if m.Offset == nil {
					continue
				}
				for _, i := range finals(history.ReadCommitted) {
					c := clone(i)
					for j := range c.Value {
						if c.Value[j].Key == m.Key {
							recs := append(c.Value[j].Records, [2]int64{*m.Offset, *m.Value})
							sort.Slice(recs, func(a, b int) bool { return recs[a][0] < recs[b][0] })
							c.Value[j].Records = recs
							return out, nil
						}
					}
				}
			}
		}
		return nil, none
	case UncommittedRead:
		// a committed transaction whose value a read_committed read saw: its
		// commit is now invoked only after the end of the history
		seen := map[int64]bool{}
		for _, op := range out {
			if (op.F == history.FPoll || op.F == history.FFinalPoll) && op.Isolation == history.ReadCommitted {
				for _, m := range op.Value {
					for _, r := range m.Records {
						seen[r[1]] = true
					}
				}
			}
		}
		for i, op := range out {
			if op.F == history.FTxn && op.Type == history.OK && len(op.Value) > 0 && op.Value[0].Value != nil && seen[*op.Value[0].Value] {
				c := clone(i)
				c.CommitTime = history.I64(out[len(out)-1].Time + 1)
				return out, nil
			}
		}
		return nil, none
	case HWMBackwards:
		for i := len(out) - 1; i >= 0; i-- {
			op := out[i]
			if op.F != history.FOffsets || op.Type != history.OK {
				continue
			}
			// a key some earlier observation saw above zero: now it is zero
			for _, k := range sortedKeys(op.Watermarks) {
				w := op.Watermarks[k]
				for j := i - 2; j >= 0; j-- { // i-1 is, at best, this op's invocation
					prev := out[j]
					if prev.F == history.FOffsets && prev.Type == history.OK && prev.Watermarks[k].HWM > 0 {
						c := clone(i)
						c.Watermarks[k] = history.Watermark{HWM: 0, LSO: w.LSO}
						return out, nil
					}
				}
			}
		}
		return nil, none
	case MetadataLost:
		// an acknowledged topic creation missing from every final view
		created := map[string]bool{}
		for _, op := range out {
			if op.F == history.FCreateTopic && op.Type == history.OK {
				for _, m := range op.Value {
					created[m.Key] = true
				}
			}
		}
		var victim string
		for i, op := range out {
			if op.F != history.FFinalMetadata || op.Type != history.OK {
				continue
			}
			for _, m := range op.Value {
				if victim == "" && m.F == history.MTopic && created[m.Key] {
					victim = m.Key
				}
			}
			if victim == "" {
				continue
			}
			c := clone(i)
			kept := c.Value[:0]
			for _, m := range c.Value {
				if m.Key != victim {
					kept = append(kept, m)
				}
			}
			c.Value = kept
		}
		if victim == "" {
			return nil, none
		}
	case MetadataDiverged:
		// the last node's view has one more partition of its first topic
		for i := len(out) - 1; i >= 0; i-- {
			op := out[i]
			if op.F != history.FFinalMetadata || op.Type != history.OK {
				continue
			}
			for j, m := range op.Value {
				if m.F == history.MTopic && m.Value != nil {
					c := clone(i)
					c.Value[j].Value = history.I64(*m.Value + 1)
					return out, nil
				}
			}
		}
		return nil, none
	case ReplicaDivergence:
		// One node's copy of a partition got a different batch below the
		// high watermark (a follower that appended what the leader never
		// had, or missed a truncation): its CRC changed.
		hwm := map[string]int64{}
		for _, i := range finals(history.ReadUncommitted) {
			for k, t := range out[i].Targets {
				hwm[k] = t
			}
		}
		for i, op := range out {
			if op.F != history.FReplicaLog || op.Type == history.Invoke {
				continue
			}
			for j, m := range op.Value {
				if len(m.Batches) > 0 && m.Batches[0][0] < hwm[m.Key] {
					c := clone(i)
					c.Value[j].Batches[0][3] ^= 1
					return out, nil
				}
			}
		}
		return nil, fmt.Errorf("no replica holds a batch below the high watermark")
	case GroupOffsetBackwards:
		// The group's final committed offset of a partition one below an
		// offset acknowledged or observed before (the coordinator lost a
		// commit).
		seen := map[string]map[int64]bool{}
		for i, op := range out {
			if op.Type != history.OK {
				continue
			}
			switch op.F {
			case history.FCommit, history.FCommitted:
				for _, m := range op.Value {
					if m.Offset != nil {
						if seen[m.Key] == nil {
							seen[m.Key] = map[int64]bool{}
						}
						seen[m.Key][*m.Offset] = true
					}
				}
			case history.FFinalCommitted:
				for j, m := range op.Value {
					if m.Offset != nil && *m.Offset > 0 && seen[m.Key][*m.Offset] {
						c := clone(i)
						c.Value[j].Offset = history.I64(*m.Offset - 1)
						return out, nil
					}
				}
			}
		}
		return nil, fmt.Errorf("no final committed offset above 0 that was seen before")
	case GroupMissed:
		// An acknowledged value below the final committed offset that the
		// group consumed is taken out of every member's polls (the
		// coordinator handed out an offset past it).
		final := map[string]int64{}
		for _, op := range out {
			if op.F == history.FFinalCommitted && op.Type == history.OK {
				for _, m := range op.Value {
					if m.Offset != nil {
						final[m.Key] = *m.Offset
					}
				}
			}
		}
		acked := map[int64]bool{}
		for _, op := range out {
			if op.F == history.FSend && op.Type == history.OK {
				for _, m := range op.Value {
					if m.Value != nil && m.Offset != nil && *m.Offset < final[m.Key] {
						acked[*m.Value] = true
					}
				}
			}
		}
		var victim int64 = -1
		for _, op := range out {
			if op.F != history.FGroupPoll || op.Type != history.OK {
				continue
			}
			for _, m := range op.Value {
				for _, r := range m.Records {
					if victim < 0 && acked[r[1]] {
						victim = r[1]
					}
				}
			}
		}
		if victim < 0 {
			return nil, fmt.Errorf("no acknowledged value consumed by the group below its final committed offset")
		}
		for i, op := range out {
			if op.F != history.FGroupPoll || op.Type != history.OK {
				continue
			}
			c := clone(i)
			for j := range c.Value {
				recs := c.Value[j].Records[:0]
				for _, r := range c.Value[j].Records {
					if r[1] != victim {
						recs = append(recs, r)
					}
				}
				c.Value[j].Records = recs
			}
		}
	case CompactionMismatch:
		// The latest record of a key read back holds a value nobody wrote.
		for i, op := range out {
			if op.F == history.FKVFinal && op.Type == history.OK && len(op.Value) > 0 {
				c := clone(i)
				c.Value[0].Value = history.I64(1 << 50)
				return out, nil
			}
		}
		return nil, fmt.Errorf("no key in the final read of the compacted topic")
	case CompactedReplicaDivergence:
		// One node's copy of a compacted partition kept an older value of
		// a record key (its cleaner removed the latest record instead).
		for i, op := range out {
			if op.F != history.FReplicaLog || op.Type == history.Invoke {
				continue
			}
			for j, m := range op.Value {
				if m.F == history.MReplicaKV && m.Item != "" && m.Value != nil {
					c := clone(i)
					c.Value[j].Value = history.I64(*m.Value + 1_000_000_000)
					return out, nil
				}
			}
		}
		return nil, fmt.Errorf("no copy of the compacted topic holds a record")
	default:
		return nil, fmt.Errorf("cannot plant %q (can: %v)", kind, Sabotages)
	}
	return out, nil
}

// SabotageAll plants each anomaly of Sabotages in turn into a copy of a clean
// history and checks that the checker names it; it returns one line per
// anomaly and an error naming those that were not named.
func SabotageAll(ops []history.Op) ([]string, error) {
	if res := Check(ops); len(res.Anomalies) > 0 {
		return nil, fmt.Errorf("the history is not clean to start with (%d anomalies)", len(res.Anomalies))
	}
	ran := map[string]bool{}
	for _, op := range ops {
		ran[op.F] = true
		if op.F == history.FReplicaLog {
			for _, m := range op.Value {
				ran[m.F] = true // replica-kv: copies of the compacted topic compared
			}
		}
	}
	var lines, missed []string
	for _, kind := range Sabotages {
		if f := needs[kind]; f != "" && !ran[f] {
			lines = append(lines, fmt.Sprintf("%s: not planted: no %s operation in this history (the workload did not run)", kind, f))
			continue
		}
		bad, err := Sabotage(ops, kind)
		if err != nil {
			lines = append(lines, fmt.Sprintf("%s: not planted: %v", kind, err))
			missed = append(missed, kind)
			continue
		}
		res := Check(bad)
		if res.Counts[kind] == 0 {
			lines = append(lines, fmt.Sprintf("%s: planted, NOT named (found %v)", kind, res.Counts))
			missed = append(missed, kind)
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: planted and named (%d anomalies in all)", kind, len(res.Anomalies)))
	}
	if len(missed) > 0 {
		return lines, fmt.Errorf("not named: %v", missed)
	}
	return lines, nil
}
