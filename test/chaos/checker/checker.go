// Package checker reads a history (package history) and names every anomaly
// in it the way Jepsen's Kafka workload names them, and measures
// availability. It knows nothing about how the history was made: the unit
// tests feed it hand-made histories, the fault checker feeds it real ones.
//
// Terms. A key is one partition ("topic/partition"). Every value is written
// once in the whole run. A write is committed when the broker acknowledged
// it (a send mop with an offset, or an ok send) or its transaction committed
// (an ok txn); aborted when its transaction's abort was acknowledged (a fail
// txn); failed when a send certainly did not happen (a fail send); unknown
// otherwise ("maybe written"). The version order of a key is every offset
// known to hold a value: those read, and those acknowledged.
//
// Anomalies:
//
//   - lost-write: a committed write (or a value some read saw) is missing from
//     a read that went past its offset: a final read, or every read when
//     later offsets of the key were read.
//   - unseen: a committed write missing from the final read, which ended
//     before its offset (acknowledged, never visible).
//   - duplicate: one value read at two or more offsets.
//   - inconsistent-offset: two values at one offset, a value acknowledged at
//     one offset and read at another, or read from a key it was not written to.
//   - phantom-read: a read value that no operation ever wrote.
//   - nonmonotonic-send: one producer process got an offset for a key that is
//     not above the offset it got before for that key.
//   - nonmonotonic-poll: one consumer process read an offset of a key not above
//     the one it read before.
//   - poll-skip: one consumer process read offsets o1 then o2 of a key and the
//     version order (for its isolation level) has an offset between them; a
//     consumer starts at the log start, so its first read skips if the version
//     order has offsets below it.
//   - aborted-read (G1a): a read_committed read saw a value of an aborted
//     transaction or of a failed send.
//   - uncommitted-read: a read_committed read saw a transactional value before
//     its transaction's commit was even invoked (or of a transaction whose
//     commit never was).
//   - hwm-backwards, lso-backwards: a high watermark or last stable offset
//     lower than one observed earlier: in real time across ListOffsets
//     observations (one completed before the other began), and in order
//     within one consumer's fetches.
//   - incomplete-final-read: the final read did not reach the end of a key (or
//     there was none), so nothing can be said about what it missed.
//   - node-not-recovered: a node did not serve requests again after a fault
//     was healed, within the nemesis's deadline.
//   - metadata-lost: a topic whose creation was acknowledged is missing from
//     a node's final metadata, or a topic config change that was
//     acknowledged is not what a node holds after healing (and no later
//     change of unknown outcome explains it), or an ACL binding whose
//     creation was acknowledged is missing from a node's final view (and
//     no deletion of it was tried), or one whose deletion was acknowledged
//     is still there.
//   - metadata-diverged: the nodes' final metadata differ (topics, partition
//     counts, configs, ACL bindings, cluster id), though every node was
//     back and they had time to converge.
package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/history"
)

// Anomaly type names.
const (
	LostWrite           = "lost-write"
	Unseen              = "unseen"
	Duplicate           = "duplicate"
	InconsistentOffset  = "inconsistent-offset"
	PhantomRead         = "phantom-read"
	NonMonotonicSend    = "nonmonotonic-send"
	NonMonotonicPoll    = "nonmonotonic-poll"
	PollSkip            = "poll-skip"
	AbortedRead         = "aborted-read"
	UncommittedRead     = "uncommitted-read"
	HWMBackwards        = "hwm-backwards"
	LSOBackwards        = "lso-backwards"
	IncompleteFinalRead = "incomplete-final-read"
	NodeNotRecovered    = "node-not-recovered"
	MetadataLost        = "metadata-lost"
	MetadataDiverged    = "metadata-diverged"
)

// AllTypes lists every anomaly type, in the order summaries print them.
var AllTypes = []string{LostWrite, Unseen, Duplicate, InconsistentOffset, PhantomRead,
	NonMonotonicSend, NonMonotonicPoll, PollSkip, AbortedRead, UncommittedRead,
	HWMBackwards, LSOBackwards, IncompleteFinalRead, NodeNotRecovered, MetadataLost, MetadataDiverged, ReplicaDivergence,
	GroupOffsetBackwards, GroupMissed, CompactionMismatch, CompactedReplicaDivergence}

// Anomaly is one finding.
type Anomaly struct {
	Type   string
	Key    string
	Ops    []int // indexes of the operations involved
	Detail string
}

func (a Anomaly) String() string {
	return fmt.Sprintf("%s %s: %s (ops %v)", a.Type, a.Key, a.Detail, a.Ops)
}

// Fault is one injected fault and what availability looked like around it.
type Fault struct {
	F         string
	Node      int
	Start     time.Duration // when the fault was invoked
	HealStart time.Duration // when the healing operation (restart, SIGCONT) began
	Healed    time.Duration // when the healing operation completed (-1: never)
	FirstOK   time.Duration // first successful write completed after Healed (-1: none)
	Recovered bool
	// Role is "controller" when the node was the active controller as the
	// fault began. NewController is then when (since the run's start) a
	// Metadata answer first named a controller again: another node, asked
	// of a node other than the faulted one, or the same node once healed
	// (-1: never); NewControllerID is that controller.
	Role            string
	NewController   time.Duration
	NewControllerID int
	// Leaders: the partitions the node led as the fault began (Metadata's
	// leaders), and when clients saw each led again.
	Leaders []LeaderMove
}

// Result is the outcome of a check.
type Result struct {
	Operations int            // client operations invoked
	Faults     []Fault        // in order
	FaultCount map[string]int // per fault type
	Anomalies  []Anomaly
	Counts     map[string]int // per anomaly type

	Committed, Aborted, Failed, Unknown int // writes by status
	Txns                                map[string]int
	Polls, FinalKeys                    int

	// Longest window within the workload with no successful write.
	LongestNoWrite           time.Duration
	NoWriteFrom, NoWriteTill time.Duration
	// The same, counting only time when no fault was active (after a heal
	// completed and before the next fault): unavailability no fault explains.
	LongestNoWriteNoFault                  time.Duration
	NoWriteNoFaultFrom, NoWriteNoFaultTill time.Duration

	// The metadata workload: creations and config changes by outcome (ok,
	// fail, info), and how many nodes' final views there are.
	Creates, Alters map[string]int
	// ACL bindings created and deleted, by outcome.
	AclCreates, AclDeletes map[string]int
	FinalViews             int
	ViewsAgree             bool

	// Replication: nodes whose data directories were compared, and keys
	// compared below their final high watermark.
	ReplicaLogs, ReplicaKeys int
	// The consumer-group workload: polls, and commits by outcome.
	GroupPolls   int
	GroupCommits map[string]int
	// The compaction workload: keyed writes by outcome; record keys in the
	// final read.
	KVWrites map[string]int
	KVKeys   int
}

type status int

const (
	stUnknown status = iota
	stCommitted
	stAborted
	stFailed
)

type write struct {
	key        string
	value      int64
	txn        bool
	status     status
	ack        *int64 // offset the broker acknowledged
	op         int    // completion op index
	commitTime *int64
}

type read struct {
	op        int
	proc      int
	final     bool
	iso       string
	inv, comp int64
	key       string
	records   [][2]int64
}

type pair struct {
	inv, comp history.Op
	done      bool
}

// Check analyses a history.
func Check(ops []history.Op) Result {
	c := &state{
		writes:   map[int64]*write{},
		offVals:  map[string]map[int64]map[int64][]int{},
		valOffs:  map[int64]map[int64][]int{},
		valKeys:  map[int64]map[string]bool{},
		seenBy:   map[int64]map[string]bool{},
		finals:   map[string]map[string]*finalRead{},
		reported: map[string]bool{},
		res: Result{FaultCount: map[string]int{}, Counts: map[string]int{}, Txns: map[string]int{},
			Creates: map[string]int{}, Alters: map[string]int{}, AclCreates: map[string]int{}, AclDeletes: map[string]int{}, GroupCommits: map[string]int{}, KVWrites: map[string]int{}},
		finalKeys:  map[string]bool{},
		writesKeys: map[string]bool{},
	}
	c.pairs(ops)
	c.collect()
	c.checkReads()
	c.checkWrites()
	c.checkSends()
	c.checkPolls()
	c.checkWatermarks()
	c.checkFinal()
	c.checkMetadata()
	c.checkReplicas()
	c.checkGroups()
	c.checkCompaction()
	c.checkCompactedReplicas()
	c.availability()
	c.controllers()
	c.leaders()
	for _, a := range c.res.Anomalies {
		c.res.Counts[a.Type]++
	}
	return c.res
}

type finalRead struct {
	values     map[int64]bool
	max        int64
	incomplete bool
	op         int
}

type state struct {
	ops        []pair
	writes     map[int64]*write
	reads      []read
	offVals    map[string]map[int64]map[int64][]int // key -> offset -> value -> ops
	valOffs    map[int64]map[int64][]int            // value -> read offset -> ops
	valKeys    map[int64]map[string]bool            // value -> keys read from
	seenBy     map[int64]map[string]bool            // value -> isolation levels that read it
	finals     map[string]map[string]*finalRead     // key -> isolation -> final read
	finalKeys  map[string]bool
	writesKeys map[string]bool
	reported   map[string]bool
	res        Result
	workStart  int64
	workEnd    int64
	stopAt     int64 // when the workloads were told to stop (-1: not recorded)
}

func (c *state) add(typ, key, detail string, ops ...int) {
	c.res.Anomalies = append(c.res.Anomalies, Anomaly{Type: typ, Key: key, Ops: ops, Detail: detail})
}

// once reports an anomaly only the first time id is seen.
func (c *state) once(id, typ, key, detail string, ops ...int) {
	if c.reported[id] {
		return
	}
	c.reported[id] = true
	c.add(typ, key, detail, ops...)
}

// pairs matches each invocation with its process's next completion.
func (c *state) pairs(ops []history.Op) {
	pending := map[int]int{} // process -> index into c.ops
	c.workStart, c.workEnd, c.stopAt = -1, -1, -1
	for _, op := range ops {
		if op.F == history.FStopWorkloads && op.Type == history.Invoke && c.stopAt < 0 {
			c.stopAt = op.Time
		}
		if op.Type == history.Invoke {
			if op.Process != history.NemesisProcess {
				c.res.Operations++
				if c.workStart < 0 {
					c.workStart = op.Time
				}
				if op.F == history.FFinalPoll && c.workEnd < 0 {
					c.workEnd = op.Time
				}
			}
			pending[op.Process] = len(c.ops)
			c.ops = append(c.ops, pair{inv: op})
			continue
		}
		i, ok := pending[op.Process]
		if !ok {
			continue // a completion without an invocation: ignore
		}
		delete(pending, op.Process)
		c.ops[i].comp, c.ops[i].done = op, true
	}
	if c.workEnd < 0 {
		for _, p := range c.ops {
			if p.done && p.comp.Time > c.workEnd {
				c.workEnd = p.comp.Time
			}
		}
	}
	// Operations never completed are indeterminate.
	for i := range c.ops {
		if !c.ops[i].done {
			c.ops[i].comp = c.ops[i].inv
			c.ops[i].comp.Type = history.Info
			c.ops[i].comp.Value = nil
			c.ops[i].comp.Time = c.workEnd
		}
	}
}

func mops(p pair) []history.Mop {
	if len(p.comp.Value) > 0 {
		return p.comp.Value
	}
	return p.inv.Value
}

func (c *state) collect() {
	for _, p := range c.ops {
		op := p.comp
		switch op.F {
		case history.FSend, history.FTxn:
			txn := op.F == history.FTxn
			if txn {
				c.res.Txns[op.Type]++
			}
			for _, m := range mops(p) {
				if m.F != history.FSend || m.Value == nil {
					continue
				}
				w := &write{key: m.Key, value: *m.Value, txn: txn, op: op.Index, ack: m.Offset, commitTime: op.CommitTime}
				switch {
				case op.Type == history.OK:
					w.status = stCommitted
				case txn && op.Type == history.Fail:
					w.status = stAborted
				case op.Type == history.Fail:
					w.status = stFailed
				case !txn && m.Offset != nil:
					w.status = stCommitted // acknowledged within an op that errored later
				}
				if !p.done {
					w.ack = nil
				}
				c.writes[w.value] = w
				c.writesKeys[w.key] = true
				if w.ack != nil {
					c.offVal(w.key, *w.ack, w.value, op.Index)
				}
				switch w.status {
				case stCommitted:
					c.res.Committed++
				case stAborted:
					c.res.Aborted++
				case stFailed:
					c.res.Failed++
				default:
					c.res.Unknown++
				}
			}
		case history.FPoll, history.FFinalPoll:
			if op.Type != history.OK && op.Type != history.Info {
				continue
			}
			final := op.F == history.FFinalPoll
			if final {
				for k := range op.Targets {
					c.finalKeys[k] = true
					if c.finals[k] == nil {
						c.finals[k] = map[string]*finalRead{}
					}
					c.finals[k][op.Isolation] = &finalRead{values: map[int64]bool{}, max: -1, incomplete: op.Incomplete || !p.done, op: op.Index}
				}
			} else {
				c.res.Polls++
			}
			for _, m := range op.Value {
				if m.F != history.FPoll {
					continue
				}
				r := read{op: op.Index, proc: op.Process, final: final, iso: op.Isolation, inv: p.inv.Time, comp: op.Time, key: m.Key, records: m.Records}
				c.reads = append(c.reads, r)
				for _, rec := range m.Records {
					off, v := rec[0], rec[1]
					c.offVal(m.Key, off, v, op.Index)
					if c.valOffs[v] == nil {
						c.valOffs[v] = map[int64][]int{}
						c.valKeys[v] = map[string]bool{}
						c.seenBy[v] = map[string]bool{}
					}
					c.valOffs[v][off] = append(c.valOffs[v][off], op.Index)
					c.valKeys[v][m.Key] = true
					c.seenBy[v][r.iso] = true
					if final {
						if f := c.finals[m.Key][op.Isolation]; f != nil {
							f.values[v] = true
							if off > f.max {
								f.max = off
							}
						}
					}
				}
			}
		}
	}
	c.res.FinalKeys = len(c.finalKeys)
}

func (c *state) offVal(key string, off, v int64, op int) {
	m := c.offVals[key]
	if m == nil {
		m = map[int64]map[int64][]int{}
		c.offVals[key] = m
	}
	if m[off] == nil {
		m[off] = map[int64][]int{}
	}
	m[off][v] = append(m[off][v], op)
}

// checkReads: phantoms, wrong keys, duplicates, two values at one offset,
// acknowledged offset differing from the read one, G1a and uncommitted reads.
func (c *state) checkReads() {
	for _, r := range c.reads {
		for _, rec := range r.records {
			off, v := rec[0], rec[1]
			w := c.writes[v]
			if w == nil {
				c.once(fmt.Sprintf("phantom %d", v), PhantomRead, r.key,
					fmt.Sprintf("value %d read at offset %d was never written", v, off), r.op)
				continue
			}
			if w.key != r.key {
				c.once(fmt.Sprintf("key %d %s", v, r.key), InconsistentOffset, r.key,
					fmt.Sprintf("value %d written to %s was read from %s at offset %d", v, w.key, r.key, off), w.op, r.op)
			}
			if r.iso != history.ReadCommitted {
				continue
			}
			switch {
			case w.status == stAborted:
				c.once(fmt.Sprintf("g1a %d %d", v, r.op), AbortedRead, r.key,
					fmt.Sprintf("read_committed read saw value %d (offset %d) of an aborted transaction", v, off), w.op, r.op)
			case w.status == stFailed:
				c.once(fmt.Sprintf("g1a %d %d", v, r.op), AbortedRead, r.key,
					fmt.Sprintf("read_committed read saw value %d (offset %d) of a failed send", v, off), w.op, r.op)
			case w.txn && w.commitTime == nil && w.status != stCommitted:
				c.once(fmt.Sprintf("uncommitted %d %d", v, r.op), UncommittedRead, r.key,
					fmt.Sprintf("read_committed read saw value %d (offset %d) of a transaction whose commit was never invoked", v, off), w.op, r.op)
			case w.txn && w.commitTime != nil && r.comp < *w.commitTime:
				c.once(fmt.Sprintf("uncommitted %d %d", v, r.op), UncommittedRead, r.key,
					fmt.Sprintf("read_committed read saw value %d (offset %d) at %v, before its transaction's commit was invoked at %v",
						v, off, time.Duration(r.comp), time.Duration(*w.commitTime)), w.op, r.op)
			}
		}
	}
	for _, key := range sortedKeys(c.offVals) {
		offs := c.offVals[key]
		for _, off := range sortedOffsets(offs) {
			vals := offs[off]
			if len(vals) > 1 {
				var vs []string
				var ops []int
				for _, v := range sortedOffsets(vals) {
					vs = append(vs, fmt.Sprint(v))
					ops = append(ops, vals[v]...)
				}
				c.add(InconsistentOffset, key, fmt.Sprintf("offset %d holds values %s", off, strings.Join(vs, ", ")), uniq(ops)...)
			}
		}
	}
	for _, v := range sortedOffsets(c.valOffs) {
		offs := c.valOffs[v]
		if len(offs) > 1 {
			var os []string
			var ops []int
			for _, o := range sortedOffsets(offs) {
				os = append(os, fmt.Sprint(o))
				ops = append(ops, offs[o]...)
			}
			key := ""
			if w := c.writes[v]; w != nil {
				key = w.key
			}
			c.add(Duplicate, key, fmt.Sprintf("value %d read at offsets %s", v, strings.Join(os, ", ")), uniq(ops)...)
		}
		if w := c.writes[v]; w != nil && w.ack != nil && len(offs) > 0 {
			if _, ok := offs[*w.ack]; !ok {
				var ops []int
				var os []string
				for _, o := range sortedOffsets(offs) {
					os = append(os, fmt.Sprint(o))
					ops = append(ops, offs[o]...)
				}
				c.add(InconsistentOffset, w.key, fmt.Sprintf("value %d acknowledged at offset %d but read at %s", v, *w.ack, strings.Join(os, ", ")),
					uniq(append([]int{w.op}, ops...))...)
			}
		}
	}
}

// offsetOf is the lowest offset a value is known at, or -1.
func (c *state) offsetOf(w *write) int64 {
	if w.ack != nil {
		return *w.ack
	}
	best := int64(-1)
	for o := range c.valOffs[w.value] {
		if best < 0 || o < best {
			best = o
		}
	}
	return best
}

// checkWrites: lost and unseen writes.
func (c *state) checkWrites() {
	maxRead := map[string]int64{} // key -> highest offset any read saw
	for _, r := range c.reads {
		for _, rec := range r.records {
			if m, ok := maxRead[r.key]; !ok || rec[0] > m {
				maxRead[r.key] = rec[0]
			}
		}
	}
	values := make([]int64, 0, len(c.writes))
	for v := range c.writes {
		values = append(values, v)
	}
	sort.Slice(values, func(i, j int) bool { return values[i] < values[j] })
	for _, v := range values {
		w := c.writes[v]
		seen := c.seenBy[v]
		// Must the value be in a read_uncommitted final read? In a read_committed one?
		mustRU := w.status == stCommitted || len(seen) > 0
		// (An aborted value an rc read saw is an aborted read, not a value
		// the rc final read owes us.)
		mustRC := w.status == stCommitted ||
			(w.status == stUnknown && (seen[history.ReadCommitted] || (!w.txn && len(seen) > 0)))
		if !mustRU {
			continue
		}
		off := c.offsetOf(w)
		why := "acknowledged"
		if w.status != stCommitted {
			why = "read earlier"
		}
		if w.txn && w.status == stCommitted {
			why = "committed"
		}
		if len(seen) == 0 && off >= 0 && maxRead[w.key] > off {
			c.once(fmt.Sprintf("lost %d", v), LostWrite, w.key,
				fmt.Sprintf("value %d %s at offset %d was never read, though offsets up to %d of the key were", v, why, off, maxRead[w.key]), w.op)
			continue
		}
		for _, iso := range []string{history.ReadUncommitted, history.ReadCommitted} {
			if iso == history.ReadCommitted && !mustRC {
				continue
			}
			f := c.finals[w.key][iso]
			if f == nil || f.incomplete || f.values[v] {
				continue
			}
			if off >= 0 && f.max > off {
				c.once(fmt.Sprintf("lost %d", v), LostWrite, w.key,
					fmt.Sprintf("value %d %s at offset %d is missing from the final %s read, which read up to offset %d", v, why, off, iso, f.max), w.op, f.op)
			} else {
				where := "its offset is unknown"
				if off >= 0 {
					where = fmt.Sprintf("offset %d", off)
				}
				c.once(fmt.Sprintf("lost %d", v), Unseen, w.key,
					fmt.Sprintf("value %d %s (%s) is not in the final %s read, which ended at offset %d", v, why, where, iso, f.max), w.op, f.op)
			}
		}
	}
}

// checkSends: offsets one producer process got for a key must rise.
func (c *state) checkSends() {
	type pk struct {
		proc int
		key  string
	}
	last := map[pk][2]int64{} // offset, op
	for _, p := range c.ops {
		if p.comp.F != history.FSend && p.comp.F != history.FTxn || !p.done {
			continue
		}
		for _, m := range mops(p) {
			if m.F != history.FSend || m.Offset == nil {
				continue
			}
			k := pk{p.comp.Process, m.Key}
			if prev, ok := last[k]; ok && *m.Offset <= prev[0] {
				c.add(NonMonotonicSend, m.Key, fmt.Sprintf("process %d got offset %d after offset %d", k.proc, *m.Offset, prev[0]),
					int(prev[1]), p.comp.Index)
			}
			last[k] = [2]int64{*m.Offset, int64(p.comp.Index)}
		}
	}
}

// versionOrders returns, per key, the sorted offsets known to hold a value
// visible at each isolation level.
func (c *state) versionOrders() map[string]map[string][]int64 {
	sets := map[string]map[string]map[int64]bool{}
	put := func(key, iso string, off int64) {
		if sets[key] == nil {
			sets[key] = map[string]map[int64]bool{history.ReadUncommitted: {}, history.ReadCommitted: {}}
		}
		sets[key][iso][off] = true
	}
	for _, r := range c.reads {
		for _, rec := range r.records {
			put(r.key, history.ReadUncommitted, rec[0])
			w := c.writes[rec[1]]
			if r.iso == history.ReadCommitted || (w != nil && !w.txn) {
				put(r.key, history.ReadCommitted, rec[0])
			}
		}
	}
	for _, w := range c.writes {
		if w.ack == nil {
			continue
		}
		put(w.key, history.ReadUncommitted, *w.ack)
		if w.status == stCommitted {
			put(w.key, history.ReadCommitted, *w.ack)
		}
	}
	out := map[string]map[string][]int64{}
	for key, isos := range sets {
		out[key] = map[string][]int64{}
		for iso, offs := range isos {
			l := make([]int64, 0, len(offs))
			for o := range offs {
				l = append(l, o)
			}
			sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
			out[key][iso] = l
		}
	}
	return out
}

// checkPolls: each consumer process reads each key in rising offsets, and
// skips nothing the version order holds.
func (c *state) checkPolls() {
	orders := c.versionOrders()
	type pk struct {
		proc int
		key  string
	}
	type last struct {
		off int64
		op  int
	}
	prev := map[pk]last{}
	for _, r := range c.reads {
		iso := r.iso
		if iso != history.ReadCommitted {
			iso = history.ReadUncommitted
		}
		order := orders[r.key][iso]
		k := pk{r.proc, r.key}
		for _, rec := range r.records {
			off := rec[0]
			p, ok := prev[k]
			if !ok {
				p = last{off: -1, op: -1}
			}
			if off <= p.off {
				c.add(NonMonotonicPoll, r.key, fmt.Sprintf("process %d read offset %d after offset %d", r.proc, off, p.off), uniq([]int{p.op, r.op})...)
			} else {
				// Any known offset strictly between p.off and off?
				i := sort.Search(len(order), func(i int) bool { return order[i] > p.off })
				if i < len(order) && order[i] < off {
					n := sort.Search(len(order), func(i int) bool { return order[i] >= off }) - i
					from := "the log start"
					if p.off >= 0 {
						from = fmt.Sprintf("offset %d", p.off)
					}
					ops := []int{r.op}
					if p.op >= 0 {
						ops = []int{p.op, r.op}
					}
					c.add(PollSkip, r.key, fmt.Sprintf("process %d (%s) went from %s to offset %d, skipping %d known offset(s) starting at %d",
						r.proc, iso, from, off, n, order[i]), uniq(ops)...)
				}
			}
			prev[k] = last{off: off, op: r.op}
		}
	}
}

type obs struct {
	inv, comp, val int64
	op             int
}

// checkWatermarks: high watermarks and last stable offsets never go back.
func (c *state) checkWatermarks() {
	global := map[string]map[string][]obs{} // kind -> key -> observations
	type pk struct {
		proc int
		key  string
		kind string
	}
	perProc := map[pk]obs{}
	kinds := map[string]string{"hwm": HWMBackwards, "lso": LSOBackwards}
	for _, p := range c.ops {
		op := p.comp
		if op.Type != history.OK || len(op.Watermarks) == 0 {
			continue
		}
		for _, key := range sortedKeys(op.Watermarks) {
			wm := op.Watermarks[key]
			for _, kv := range []struct {
				kind string
				val  int64
			}{{"hwm", wm.HWM}, {"lso", wm.LSO}} {
				if kv.val < 0 {
					continue
				}
				o := obs{inv: p.inv.Time, comp: op.Time, val: kv.val, op: op.Index}
				if op.F == history.FOffsets {
					if global[kv.kind] == nil {
						global[kv.kind] = map[string][]obs{}
					}
					global[kv.kind][key] = append(global[kv.kind][key], o)
					continue
				}
				// A consumer's fetches: in order within the process.
				k := pk{op.Process, key, kv.kind}
				if prev, ok := perProc[k]; ok && o.val < prev.val {
					c.add(kinds[kv.kind], key, fmt.Sprintf("%s went from %d to %d within process %d's fetches", kv.kind, prev.val, o.val, op.Process), prev.op, o.op)
				}
				perProc[k] = o
			}
		}
	}
	for _, kind := range []string{"hwm", "lso"} {
		for _, key := range sortedKeys(global[kind]) {
			list := global[kind][key]
			byComp := append([]obs(nil), list...)
			sort.Slice(byComp, func(i, j int) bool { return byComp[i].comp < byComp[j].comp })
			// prefix maximum of values by completion time
			maxIdx := make([]int, len(byComp))
			for i := range byComp {
				maxIdx[i] = i
				if i > 0 && byComp[maxIdx[i-1]].val >= byComp[i].val {
					maxIdx[i] = maxIdx[i-1]
				}
			}
			for _, b := range list {
				n := sort.Search(len(byComp), func(i int) bool { return byComp[i].comp >= b.inv })
				if n == 0 {
					continue
				}
				a := byComp[maxIdx[n-1]]
				if a.val > b.val {
					c.add(kinds[kind], key, fmt.Sprintf("%s was %d (observed by %v) and later %d (observation began %v)",
						kind, a.val, time.Duration(a.comp), b.val, time.Duration(b.inv)), a.op, b.op)
				}
			}
		}
	}
}

// checkFinal: the final read must exist and be complete; nemesis recoveries.
func (c *state) checkFinal() {
	for _, key := range sortedKeys(c.writesKeys) {
		if !c.finalKeys[key] {
			c.add(IncompleteFinalRead, key, "no final read of this key", nil...)
		}
	}
	for _, key := range sortedKeys(c.finals) {
		for _, iso := range sortedKeys(c.finals[key]) {
			if f := c.finals[key][iso]; f.incomplete {
				c.add(IncompleteFinalRead, key, fmt.Sprintf("the final %s read did not reach the end of the key", iso), f.op)
			}
		}
	}
	// Nemesis faults and heals.
	var open []int // indexes into res.Faults not yet healed
	for _, p := range c.ops {
		if p.inv.Process != history.NemesisProcess || p.inv.F == history.FStopWorkloads {
			continue
		}
		node := -1
		if p.inv.Node != nil {
			node = *p.inv.Node
		}
		if history.IsFault(p.inv.F) {
			c.res.FaultCount[p.inv.F]++
			c.res.Faults = append(c.res.Faults, Fault{F: p.inv.F, Node: node, Start: time.Duration(p.inv.Time), Healed: -1, FirstOK: -1,
				Role: p.inv.Role, NewController: -1, NewControllerID: -1})
			open = append(open, len(c.res.Faults)-1)
			continue
		}
		// A heal: closes the open faults of that node.
		if p.comp.Error != "" {
			c.add(NodeNotRecovered, "", fmt.Sprintf("%s of node %d: %s", p.inv.F, node, p.comp.Error), p.comp.Index)
		}
		rest := open[:0]
		for _, i := range open {
			if c.res.Faults[i].Node == node || node < 0 {
				c.res.Faults[i].HealStart = time.Duration(p.inv.Time)
				c.res.Faults[i].Healed = time.Duration(p.comp.Time)
				c.res.Faults[i].Recovered = p.comp.Error == ""
			} else {
				rest = append(rest, i)
			}
		}
		open = rest
	}
}

// availability: the longest window with no successful write, and the first
// successful write after each fault healed.
func (c *state) availability() {
	var oks []int64
	for _, p := range c.ops {
		op := p.comp
		if !p.done || (op.F != history.FSend && op.F != history.FTxn) {
			continue
		}
		ok := op.Type == history.OK
		if !ok && op.F == history.FSend {
			for _, m := range op.Value {
				if m.Offset != nil {
					ok = true
				}
			}
		}
		if ok {
			oks = append(oks, op.Time)
		}
	}
	sort.Slice(oks, func(i, j int) bool { return oks[i] < oks[j] })
	if c.workStart >= 0 {
		prev := c.workStart
		end := c.workEnd
		if c.stopAt >= 0 && c.stopAt < end {
			end = c.stopAt // writes blocked while the workloads wind down say nothing
		}
		// fault intervals, by start: from injection to the completed heal
		var faults [][2]int64
		for _, f := range c.res.Faults {
			healed := int64(f.Healed)
			if f.Healed < 0 {
				healed = end
			}
			faults = append(faults, [2]int64{int64(f.Start), healed})
		}
		sort.Slice(faults, func(i, j int) bool { return faults[i][0] < faults[j][0] })
		for _, t := range append(append([]int64(nil), oks...), end) {
			if t > end {
				t = end
			}
			if d := time.Duration(t - prev); d > c.res.LongestNoWrite {
				c.res.LongestNoWrite, c.res.NoWriteFrom, c.res.NoWriteTill = d, time.Duration(prev), time.Duration(t)
			}
			if time.Duration(t-prev) > c.res.LongestNoWriteNoFault {
				c.noFaultPart(prev, t, faults)
			}
			if t > prev {
				prev = t
			}
		}
	}
	for i := range c.res.Faults {
		f := &c.res.Faults[i]
		if f.Healed < 0 {
			continue
		}
		j := sort.Search(len(oks), func(j int) bool { return oks[j] >= int64(f.Healed) })
		if j < len(oks) {
			f.FirstOK = time.Duration(oks[j])
		}
	}
}

// noFaultPart records the longest part of the window [a, b] without a write
// that no fault interval covers, if it is the longest so far.
func (c *state) noFaultPart(a, b int64, faults [][2]int64) {
	take := func(from, till int64) {
		if d := time.Duration(till - from); d > c.res.LongestNoWriteNoFault {
			c.res.LongestNoWriteNoFault, c.res.NoWriteNoFaultFrom, c.res.NoWriteNoFaultTill = d, time.Duration(from), time.Duration(till)
		}
	}
	cur := a
	for _, f := range faults {
		if f[1] <= cur || f[0] >= b {
			continue
		}
		if f[0] > cur {
			take(cur, f[0])
		}
		cur = max(cur, f[1])
	}
	if cur < b {
		take(cur, b)
	}
}

func uniq(ops []int) []int {
	seen := map[int]bool{}
	out := ops[:0:0]
	for _, o := range ops {
		if o >= 0 && !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	sort.Ints(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedOffsets[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Summary is the human-readable report; its last line is
// "N operations, F faults, A anomalies".
func (r Result) Summary(maxPerType int) string {
	var b strings.Builder
	nf := 0
	var fs []string
	for _, f := range sortedKeys(r.FaultCount) {
		fs = append(fs, fmt.Sprintf("%s %d", f, r.FaultCount[f]))
		nf += r.FaultCount[f]
	}
	if len(fs) == 0 {
		fs = []string{"none"}
	}
	fmt.Fprintf(&b, "faults: %s\n", strings.Join(fs, ", "))
	fmt.Fprintf(&b, "writes: %d committed/acknowledged, %d aborted, %d failed, %d unknown (maybe written)\n",
		r.Committed, r.Aborted, r.Failed, r.Unknown)
	if len(r.Txns) > 0 {
		fmt.Fprintf(&b, "transactions: %d committed, %d aborted, %d unknown\n", r.Txns[history.OK], r.Txns[history.Fail], r.Txns[history.Info])
	}
	fmt.Fprintf(&b, "reads: %d polls; final read of %d keys\n", r.Polls, r.FinalKeys)
	fmt.Fprintf(&b, "availability: longest window without a successful write %.1fs (%.1fs to %.1fs)\n",
		r.LongestNoWrite.Seconds(), r.NoWriteFrom.Seconds(), r.NoWriteTill.Seconds())
	if len(r.Faults) > 0 {
		fmt.Fprintf(&b, "availability: longest window without a successful write while no fault was active %.1fs (%.1fs to %.1fs)\n",
			r.LongestNoWriteNoFault.Seconds(), r.NoWriteNoFaultFrom.Seconds(), r.NoWriteNoFaultTill.Seconds())
	}
	for _, f := range r.Faults {
		who := fmt.Sprintf("node %d", f.Node)
		if f.Node < 0 {
			who = "(no node)"
		}
		switch {
		case f.Healed < 0:
			fmt.Fprintf(&b, "  %s %s at %.1fs: never healed\n", f.F, who, f.Start.Seconds())
		case f.FirstOK < 0:
			fmt.Fprintf(&b, "  %s %s at %.1fs: healed at %.1fs, no successful write after\n", f.F, who, f.Start.Seconds(), f.Healed.Seconds())
		default:
			fmt.Fprintf(&b, "  %s %s at %.1fs for %.1fs; serving %.2fs after the heal began, first write %.2fs later (%.1fs after the fault)\n",
				f.F, who, f.Start.Seconds(), (f.HealStart - f.Start).Seconds(), (f.Healed - f.HealStart).Seconds(),
				(f.FirstOK - f.Healed).Seconds(), (f.FirstOK - f.Start).Seconds())
		}
		if f.Role == history.RoleController {
			if f.NewController < 0 {
				fmt.Fprintf(&b, "    node %d was the controller: no Metadata answer named a controller again\n", f.Node)
			} else {
				fmt.Fprintf(&b, "    node %d was the controller: clients saw controller %d %.2fs after the fault began\n",
					f.Node, f.NewControllerID, (f.NewController - f.Start).Seconds())
			}
		}
		b.WriteString(leaderText(f))
	}
	if moved, median, longest, back, none := r.LeaderFailover(); moved+back+none > 0 {
		fmt.Fprintf(&b, "partition leaders: %d partition(s) of a faulted leader got a new leader, seen by clients after %.2fs median, %.2fs at most; %d led by the same node again after its return; %d without a leader seen again\n",
			moved, median.Seconds(), longest.Seconds(), back, none)
	}
	if d, ok := r.ControllerFailover(); ok {
		fmt.Fprintf(&b, "controller faults: longest time to a controller seen by clients %.2fs\n", d.Seconds())
	}
	if n := r.Creates[history.OK] + r.Creates[history.Fail] + r.Creates[history.Info]; n > 0 || r.FinalViews > 0 {
		agree := "agree"
		if !r.ViewsAgree {
			agree = "differ"
		}
		fmt.Fprintf(&b, "metadata: %d topic creations (%d ok, %d failed, %d unknown), %d config changes (%d ok, %d failed, %d unknown); the final views of %d node(s) %s\n",
			n, r.Creates[history.OK], r.Creates[history.Fail], r.Creates[history.Info],
			r.Alters[history.OK]+r.Alters[history.Fail]+r.Alters[history.Info], r.Alters[history.OK], r.Alters[history.Fail], r.Alters[history.Info],
			r.FinalViews, agree)
	}
	if n := r.AclCreates[history.OK] + r.AclCreates[history.Fail] + r.AclCreates[history.Info]; n > 0 {
		fmt.Fprintf(&b, "acls: %d binding creations (%d ok, %d failed, %d unknown), %d deletions (%d ok, %d failed, %d unknown)\n",
			n, r.AclCreates[history.OK], r.AclCreates[history.Fail], r.AclCreates[history.Info],
			r.AclDeletes[history.OK]+r.AclDeletes[history.Fail]+r.AclDeletes[history.Info], r.AclDeletes[history.OK], r.AclDeletes[history.Fail], r.AclDeletes[history.Info])
	}
	if r.GroupPolls > 0 {
		fmt.Fprintf(&b, "consumer group: %d polls, %d commits acknowledged, %d unknown (a member died committing, or an error)\n",
			r.GroupPolls, r.GroupCommits[history.OK], r.GroupCommits[history.Info])
	}
	if n := r.KVWrites[history.OK] + r.KVWrites[history.Info]; n > 0 {
		fmt.Fprintf(&b, "compaction: %d keyed writes (%d acknowledged, %d unknown); latest records of %d keys read back after healing\n",
			n, r.KVWrites[history.OK], r.KVWrites[history.Info], r.KVKeys)
	}
	if r.ReplicaLogs > 0 {
		fmt.Fprintf(&b, "replicas: the data directories of %d node(s) compared below the final high watermark of %d partition(s)\n", r.ReplicaLogs, r.ReplicaKeys)
	}
	if len(r.Anomalies) == 0 {
		b.WriteString("anomalies: none\n")
	} else {
		var as []string
		for _, t := range AllTypes {
			if r.Counts[t] > 0 {
				as = append(as, fmt.Sprintf("%s %d", t, r.Counts[t]))
			}
		}
		fmt.Fprintf(&b, "anomalies: %s\n", strings.Join(as, ", "))
		shown := map[string]int{}
		for _, a := range r.Anomalies {
			if shown[a.Type] < maxPerType {
				shown[a.Type]++
				fmt.Fprintf(&b, "  %s\n", a)
			}
		}
	}
	fmt.Fprintf(&b, "%d operations, %d faults, %d anomalies\n", r.Operations, nf, len(r.Anomalies))
	return b.String()
}

// FaultTotal is the number of faults injected.
func (r Result) FaultTotal() int {
	n := 0
	for _, c := range r.FaultCount {
		n += c
	}
	return n
}
