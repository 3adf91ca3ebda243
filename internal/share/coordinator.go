package share

import (
	"encoding/binary"
	"errors"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Coordinator is the share coordinator of one broker: it owns the state of
// the share partitions whose __share_group_state partition this broker
// leads, writes it to that partition (Kafka's ShareSnapshot and ShareUpdate
// records) and answers Initialize/Read/Write/DeleteShareGroupState and
// ReadShareGroupStateSummary for it. The share-partition leaders (Manager)
// are its clients, locally or over the network.
//
// A write becomes a ShareUpdate record holding the state batches sent,
// except every perSnapshot-th write of a share partition (and the first),
// which is a ShareSnapshot holding the whole state
// (share.coordinator.snapshot.update.records.per.snapshot). Replaying the
// partition applies a snapshot, then the updates after it in order.
type Coordinator struct {
	// Append writes one record (key, value; nil value: tombstone) to state
	// partition p and returns once it is durable (replicated).
	Append func(p int32, key, value []byte) error
	// AppendBatch, if set, writes several records to state partition p as
	// one batch and returns once they are durable: InitializeMany uses it
	// (nil: one Append per record).
	AppendBatch func(p int32, keys, values [][]byte) error
	Partitions  func() int32 // partition count of the state topic
	PerSnapshot int          // updates between snapshots (500 when ≤ 0)
	NowMs       func() int64

	mu     sync.Mutex
	led    map[int32]bool
	states map[Key]*coordState
	// writeMu orders appends with the in-memory state they produce.
	writeMu sync.Mutex
}

type coordState struct {
	snap    Snapshot // the merged state (snapshot plus updates)
	updates int      // update records since the last snapshot
}

// LoadPartition replaces what the coordinator holds for state partition p
// with the records replay passes (in log order) and marks p as led.
func (c *Coordinator) LoadPartition(p int32, replay func(apply func(key, value []byte) error) error) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	fresh := map[Key]*coordState{}
	err := replay(func(key, value []byte) error { return applyRecord(fresh, key, value) })
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.led == nil {
		c.led, c.states = map[int32]bool{}, map[Key]*coordState{}
	}
	n := c.partitions()
	for k := range c.states {
		if k.StatePartition(n) == p {
			delete(c.states, k)
		}
	}
	for k, s := range fresh {
		c.states[k] = s
	}
	c.led[p] = true
	return nil
}

// UnloadPartition forgets state partition p (leadership moved away).
func (c *Coordinator) UnloadPartition(p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.led, p)
	n := c.partitions()
	for k := range c.states {
		if k.StatePartition(n) == p {
			delete(c.states, k)
		}
	}
}

// Snapshots returns the state held for state partition p.
func (c *Coordinator) Snapshots(p int32) []Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.partitions()
	var out []Snapshot
	for k, s := range c.states {
		if k.StatePartition(n) == p {
			out = append(out, cloneSnapshot(s.snap))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.CoordinatorKey() < out[j].Key.CoordinatorKey() })
	return out
}

func (c *Coordinator) partitions() int32 {
	if c.Partitions == nil {
		return 1
	}
	return c.Partitions()
}

// Leads reports whether state partition p is loaded (led) here.
func (c *Coordinator) Leads(p int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.led[p]
}

// leads reports whether the coordinator serves k (c.mu held).
func (c *Coordinator) leadsLocked(k Key) bool {
	return c.led[k.StatePartition(c.partitions())]
}

// Read returns the state of k; found is false when it has none. The error
// code is NOT_COORDINATOR when this broker does not serve k.
func (c *Coordinator) Read(k Key) (s Snapshot, found bool, code int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.leadsLocked(k) {
		return s, false, kerr.NotCoordinator.Code
	}
	st := c.states[k]
	if st == nil {
		return s, false, 0
	}
	return cloneSnapshot(st.snap), true, 0
}

// Write records new state for k: the start offset and the state batches
// of s (batches it does not cover keep their state; those below the start
// offset are dropped), with s's state and leader epochs when set (≥ 0). Two
// fences refuse a write, as Kafka's share coordinator does: a leader epoch
// below the one recorded is FENCED_LEADER_EPOCH (the write comes from a
// share-partition leader that has been replaced), and a state epoch below the
// one recorded is FENCED_STATE_EPOCH (the writer loaded state that Initialize
// has since replaced, e.g. AlterShareGroupOffsets: it must read the state
// again). An epoch of -1 (Kafka's "not set") or 0 is not fenced, and a state
// epoch of either keeps the recorded one: Sluice before the state-epoch fence
// sent 0 from every share-partition leader, and during a rolling upgrade those
// leaders' writes must still land. The state that this Sluice creates starts
// at state epoch 1 (Manager.Prepare, ResetStart, the group coordinator's
// initialization), so its writers are fenced.
func (c *Coordinator) Write(k Key, s Snapshot) int16 {
	return c.write(k, s, false)
}

// Initialize sets the state of k to an empty window at start with the
// given state epoch (InitializeShareGroupState). It is not fenced: the state
// epoch it sets (higher than the recorded one, when it replaces state that
// share-partition leaders may hold) fences the writes of the state it
// replaces.
func (c *Coordinator) Initialize(k Key, stateEpoch int32, start int64) int16 {
	return c.write(k, initSnapshot(stateEpoch, start), true)
}

// initSnapshot is the state Initialize sets: an empty window at start. Its
// delivery-complete count is 0 at a known start offset and unknown (-1) at
// -1 (resolved with share.auto.offset.reset when the partition is first
// loaded), as Kafka's ShareGroupOffset.fromRequest sets it.
func initSnapshot(stateEpoch int32, start int64) Snapshot {
	dcc := int32(0)
	if start < 0 {
		dcc = -1
	}
	return Snapshot{StateEpoch: stateEpoch, LeaderEpoch: -1, StartOffset: start, DeliveryCompleteCount: dcc}
}

// InitRequest is one share partition of an InitializeMany.
type InitRequest struct {
	Key         Key
	StateEpoch  int32
	StartOffset int64
}

// initBatchRecords bounds the records InitializeMany writes in one batch.
const initBatchRecords = 500

// InitializeMany initializes several share partitions, each as Initialize
// does (InitializeShareGroupState of many partitions), and returns each
// one's error code. The records of a state partition are written together,
// up to initBatchRecords in a batch (AppendBatch), so that the wait for
// their replication is paid once per batch instead of once per partition.
func (c *Coordinator) InitializeMany(reqs []InitRequest) []int16 {
	codes := make([]int16, len(reqs))
	if c.AppendBatch == nil {
		for i, r := range reqs {
			codes[i] = c.Initialize(r.Key, r.StateEpoch, r.StartOffset)
		}
		return codes
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	now := c.nowMs()
	byPart := map[int32][]initRecord{}
	var order []int32
	c.mu.Lock()
	n := c.partitions()
	pending := map[Key]*coordState{} // a key asked for twice: the second replaces the first
	for i, r := range reqs {
		if !c.leadsLocked(r.Key) {
			codes[i] = kerr.NotCoordinator.Code
			continue
		}
		old := pending[r.Key]
		if old == nil {
			old = c.states[r.Key]
		}
		snap := replacementSnapshot(r.Key, initSnapshot(r.StateEpoch, r.StartOffset), old, now)
		next := &coordState{snap: snap}
		pending[r.Key] = next
		p := r.Key.StatePartition(n)
		if _, ok := byPart[p]; !ok {
			order = append(order, p)
		}
		byPart[p] = append(byPart[p], initRecord{i: i, k: r.Key, next: next, key: EncodeKey(r.Key), value: EncodeSnapshotValue(snap)})
	}
	c.mu.Unlock()
	// The state partitions are written concurrently: each write waits for
	// its partition's in-sync replicas, and one slow partition (a follower
	// still creating it) must not hold up the others behind its timeout.
	var wg sync.WaitGroup
	for _, p := range order {
		wg.Go(func() { c.initializePartition(p, byPart[p], codes) })
	}
	wg.Wait()
	return codes
}

// initRecord is one share partition's record of an InitializeMany.
type initRecord struct {
	i          int // its index in the request
	k          Key
	next       *coordState
	key, value []byte
}

// initializePartition writes InitializeMany's records of state partition p,
// setting their codes; c.writeMu is held.
func (c *Coordinator) initializePartition(p int32, recs []initRecord, codes []int16) {
	var chunk []initRecord
	defer func() {
		// On its own goroutine: a panic of a write fails the records not
		// written yet (the request goroutine's recovery, which closes
		// only the connection, does not reach here).
		if v := recover(); v != nil {
			for _, r := range append(chunk, recs...) {
				codes[r.i] = kerr.UnknownServerError.Code
			}
		}
	}()
	for len(recs) > 0 {
		chunk = recs[:min(len(recs), initBatchRecords)]
		recs = recs[len(chunk):]
		keys, values := make([][]byte, len(chunk)), make([][]byte, len(chunk))
		for j, r := range chunk {
			keys[j], values[j] = r.key, r.value
		}
		if err := c.AppendBatch(p, keys, values); err != nil {
			for _, r := range chunk {
				codes[r.i] = kerr.UnknownServerError.Code
			}
			continue
		}
		c.mu.Lock()
		if c.led[p] {
			for _, r := range chunk {
				c.states[r.k] = r.next
			}
		}
		c.mu.Unlock()
	}
}

// replacementSnapshot is the snapshot of k that replaces old (nil: none) with
// the state s, as Initialize writes it: a new snapshot epoch, old's creation
// time.
func replacementSnapshot(k Key, s Snapshot, old *coordState, now int64) Snapshot {
	s.Key, s.SnapshotEpoch, s.CreateTimestamp, s.WriteTimestamp = k, 0, now, now
	if old != nil {
		s.SnapshotEpoch = old.snap.SnapshotEpoch + 1
		s.CreateTimestamp = old.snap.CreateTimestamp
	}
	return s
}

func (c *Coordinator) write(k Key, s Snapshot, replace bool) int16 {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	if !c.leadsLocked(k) {
		c.mu.Unlock()
		return kerr.NotCoordinator.Code
	}
	p := k.StatePartition(c.partitions())
	old := c.states[k]
	c.mu.Unlock()
	if old != nil && !replace {
		if s.LeaderEpoch >= 0 && old.snap.LeaderEpoch > s.LeaderEpoch {
			// A write from a share-partition leader that has been replaced.
			return kerr.FencedLeaderEpoch.Code
		}
		if s.StateEpoch > 0 && old.snap.StateEpoch > s.StateEpoch {
			// A write of state loaded before Initialize replaced it.
			return kerr.FencedStateEpoch.Code
		}
	}
	now := c.nowMs()
	per := c.PerSnapshot
	if per <= 0 {
		per = 500
	}
	next := &coordState{}
	var key, value []byte
	// A higher state epoch than the recorded one is recorded at once: update
	// records carry none, and the fence must see the epoch its writers hold.
	if old == nil || replace || old.updates+1 >= per || s.StateEpoch > old.snap.StateEpoch {
		merged := s
		if old != nil && !replace {
			merged = mergeState(old.snap, s)
		}
		merged.Key = k
		merged.SnapshotEpoch = 0
		merged.CreateTimestamp = now
		if old != nil {
			merged.SnapshotEpoch = old.snap.SnapshotEpoch + 1
			merged.CreateTimestamp = old.snap.CreateTimestamp
		}
		switch {
		case replace:
		case s.StateEpoch > 0: // not below the recorded one (fenced above)
			merged.StateEpoch = s.StateEpoch
		case old != nil: // not set: the recorded one is kept
			merged.StateEpoch = old.snap.StateEpoch
		default:
			merged.StateEpoch = 0
		}
		merged.WriteTimestamp = now
		next.snap = merged
		key, value = EncodeKey(k), EncodeSnapshotValue(merged)
	} else {
		merged := mergeState(old.snap, s)
		merged.Key = k
		merged.SnapshotEpoch = old.snap.SnapshotEpoch
		// An update record has no state epoch (as Kafka's ShareUpdateValue):
		// the snapshot's is kept, as the replay keeps it.
		merged.StateEpoch = old.snap.StateEpoch
		merged.CreateTimestamp = old.snap.CreateTimestamp
		merged.WriteTimestamp = now
		next.snap, next.updates = merged, old.updates+1
		u := s
		u.SnapshotEpoch = old.snap.SnapshotEpoch
		key, value = encodeUpdateKey(k), encodeUpdateValue(u)
	}
	if err := c.Append(p, key, value); err != nil {
		return kerr.UnknownServerError.Code
	}
	c.mu.Lock()
	if c.led[p] {
		c.states[k] = next
	}
	c.mu.Unlock()
	return 0
}

// Delete writes the tombstones of k and forgets its state.
func (c *Coordinator) Delete(k Key) int16 {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	if !c.leadsLocked(k) {
		c.mu.Unlock()
		return kerr.NotCoordinator.Code
	}
	p := k.StatePartition(c.partitions())
	_, had := c.states[k]
	c.mu.Unlock()
	if had {
		if err := c.Append(p, EncodeKey(k), nil); err != nil {
			return kerr.UnknownServerError.Code
		}
		if err := c.Append(p, encodeUpdateKey(k), nil); err != nil {
			return kerr.UnknownServerError.Code
		}
	}
	c.mu.Lock()
	delete(c.states, k)
	c.mu.Unlock()
	return 0
}

func (c *Coordinator) nowMs() int64 {
	if c.NowMs == nil {
		return 0
	}
	return c.NowMs()
}

// applyRecord applies one state-topic record to states (replay).
func applyRecord(states map[Key]*coordState, key, value []byte) error {
	k, typ, err := decodeAnyKey(key)
	if err != nil || typ > keyTypeUpdate {
		return err
	}
	if value == nil {
		if typ == keyTypeSnapshot {
			delete(states, k)
		}
		return nil
	}
	if typ == keyTypeSnapshot {
		s, err := DecodeSnapshotValue(value)
		if err != nil {
			return err
		}
		s.Key = k
		states[k] = &coordState{snap: s}
		return nil
	}
	u, err := decodeUpdateValue(value)
	if err != nil {
		return err
	}
	st := states[k]
	if st == nil || u.SnapshotEpoch != st.snap.SnapshotEpoch {
		return nil // an update of a snapshot that was replaced or deleted
	}
	merged := mergeState(st.snap, u)
	merged.Key, merged.SnapshotEpoch, merged.StateEpoch = k, st.snap.SnapshotEpoch, st.snap.StateEpoch
	merged.CreateTimestamp, merged.WriteTimestamp = st.snap.CreateTimestamp, st.snap.WriteTimestamp
	st.snap, st.updates = merged, st.updates+1
	return nil
}

// mergeState applies update u to snapshot s: u's start offset, leader
// epoch and delivery-complete count, and u's batches over s's (s's parts
// not covered by u are kept), all clipped to the start offset. The state
// epoch is s's (the callers set it).
func mergeState(s, u Snapshot) Snapshot {
	out := s
	out.StartOffset = u.StartOffset
	if u.LeaderEpoch >= 0 {
		out.LeaderEpoch = u.LeaderEpoch
	}
	out.DeliveryCompleteCount = u.DeliveryCompleteCount
	var bs []StateBatch
	for _, b := range s.Batches {
		bs = append(bs, subtract(b, u.Batches)...)
	}
	bs = append(bs, u.Batches...)
	sort.Slice(bs, func(i, j int) bool { return bs[i].First < bs[j].First })
	out.Batches = nil
	for _, b := range bs {
		if b.Last < out.StartOffset {
			continue
		}
		if b.First < out.StartOffset {
			b.First = out.StartOffset
		}
		out.Batches = append(out.Batches, b)
	}
	return out
}

// subtract returns the parts of b that no batch of cover overlaps.
func subtract(b StateBatch, cover []StateBatch) []StateBatch {
	parts := []StateBatch{b}
	for _, c := range cover {
		var next []StateBatch
		for _, p := range parts {
			if c.Last < p.First || c.First > p.Last {
				next = append(next, p)
				continue
			}
			if p.First < c.First {
				q := p
				q.Last = c.First - 1
				next = append(next, q)
			}
			if p.Last > c.Last {
				q := p
				q.First = c.Last + 1
				next = append(next, q)
			}
		}
		parts = next
	}
	return parts
}

func cloneSnapshot(s Snapshot) Snapshot {
	s.Batches = append([]StateBatch(nil), s.Batches...)
	return s
}

// --- ShareUpdate records ------------------------------------------------------

// keyTypeUpdate is the record key type of a share-partition update.
const keyTypeUpdate = 1

// decodeAnyKey decodes a snapshot or update key (same fields) and its type.
func decodeAnyKey(b []byte) (Key, int16, error) {
	if len(b) < 2 {
		return Key{}, 0, errShortRecord
	}
	typ := int16(binary.BigEndian.Uint16(b))
	if typ != keyTypeSnapshot && typ != keyTypeUpdate {
		return Key{}, typ, nil
	}
	c := append([]byte{0, 0}, b[2:]...)
	k, _, err := DecodeKey(c)
	return k, typ, err
}

func encodeUpdateKey(k Key) []byte {
	b := EncodeKey(k)
	binary.BigEndian.PutUint16(b, keyTypeUpdate)
	return b
}

// encodeUpdateValue encodes a ShareUpdateValue version 0: int16 version |
// int32 snapshot epoch | int32 leader epoch | int64 start offset | compact
// array of state batches | tags (tag 0: int32 delivery complete count).
func encodeUpdateValue(s Snapshot) []byte {
	b := make([]byte, 0, 2+4+4+8+1+len(s.Batches)*20+8)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(s.SnapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(s.StartOffset))
	b = appendBatches(b, s.Batches)
	if s.DeliveryCompleteCount < 0 {
		return append(b, 0)
	}
	b = append(b, 1, 0, 4)
	return binary.BigEndian.AppendUint32(b, uint32(s.DeliveryCompleteCount))
}

func appendBatches(b []byte, bs []StateBatch) []byte {
	b = binary.AppendUvarint(b, uint64(len(bs))+1)
	for _, sb := range bs {
		b = binary.BigEndian.AppendUint64(b, uint64(sb.First))
		b = binary.BigEndian.AppendUint64(b, uint64(sb.Last))
		b = append(b, byte(sb.State))
		b = binary.BigEndian.AppendUint16(b, uint16(sb.DeliveryCount))
		b = append(b, 0)
	}
	return b
}

func decodeUpdateValue(b []byte) (Snapshot, error) {
	s := Snapshot{DeliveryCompleteCount: -1}
	if len(b) < 2+4+4+8 {
		return s, errShortRecord
	}
	if v := binary.BigEndian.Uint16(b); v != 0 {
		return s, errors.New("share: unknown update record version")
	}
	s.SnapshotEpoch = int32(binary.BigEndian.Uint32(b[2:]))
	s.LeaderEpoch = int32(binary.BigEndian.Uint32(b[6:]))
	s.StartOffset = int64(binary.BigEndian.Uint64(b[10:]))
	rest, bs, err := decodeBatches(b[18:])
	if err != nil {
		return s, err
	}
	s.Batches = bs
	rest, err = skipTags(rest, func(tag uint64, data []byte) {
		if tag == 0 && len(data) == 4 {
			s.DeliveryCompleteCount = int32(binary.BigEndian.Uint32(data))
		}
	})
	if err != nil {
		return s, err
	}
	if len(rest) != 0 {
		return s, errShortRecord
	}
	return s, nil
}

func decodeBatches(b []byte) ([]byte, []StateBatch, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n == 0 || n-1 > uint64(len(b)/20) {
		return nil, nil, errShortRecord
	}
	b = b[k:]
	bs := make([]StateBatch, n-1)
	for i := range bs {
		if len(b) < 19 {
			return nil, nil, errShortRecord
		}
		bs[i] = StateBatch{
			First:         int64(binary.BigEndian.Uint64(b)),
			Last:          int64(binary.BigEndian.Uint64(b[8:])),
			State:         int8(b[16]),
			DeliveryCount: int16(binary.BigEndian.Uint16(b[17:])),
		}
		var err error
		if b, err = skipTags(b[19:], nil); err != nil {
			return nil, nil, err
		}
	}
	return b, bs, nil
}
