package share

import (
	"sync"
	"time"
)

// Delivery states of a record in a share partition, with the numbers Kafka
// uses for them in its share-group state (Acquired is never persisted).
const (
	StateAvailable    int8 = 0
	StateAcquired     int8 = 1
	StateAcknowledged int8 = 2
	StateArchived     int8 = 4
)

// Acknowledge types of ShareFetch/ShareAcknowledge (KIP-932, KIP-1222).
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4
)

// Batch is one record batch of the partition log, as the acquirer needs it.
type Batch struct {
	First, Last int64
	Control     bool // transaction markers are never delivered
}

// Acquired is a run of consecutive offsets acquired with one delivery count.
type Acquired struct {
	First, Last   int64
	DeliveryCount int16
}

// record is the state of one offset of the in-flight window.
type record struct {
	state    int8
	count    int16 // delivery count
	member   string
	deadline time.Time // acquisition lock expiry
}

// Partition is the state of one share partition (a group's view of one
// topic partition): the share-partition start offset (SPSO), the end of the
// in-flight window (SPEO, the next offset never acquired) and the state of
// every offset in between. Offsets below the start are acknowledged or
// archived; offsets at or past the end have never been delivered.
type Partition struct {
	Key Key

	mu    sync.Mutex
	start int64
	recs  []record // recs[i] is offset start+i; len(recs) == end-start
	cfg   *Config
	// persisted is the encoding of the last snapshot written (writes are
	// skipped when nothing that is persisted changed).
	persisted []byte
	epoch     int32 // snapshot epoch, bumped per write
	created   int64 // create timestamp of the state (ms), set at its first write
	// stateEpoch is the state epoch of the state this copy was read or
	// initialized with, sent with its writes: the share coordinator refuses
	// them (FENCED_STATE_EPOCH) once the state was initialized again with a
	// higher one (AlterShareGroupOffsets).
	stateEpoch int32
}

func newPartition(key Key, start int64, cfg *Config) *Partition {
	return &Partition{Key: key, start: start, cfg: cfg}
}

// Offsets returns the share-partition start and end offsets.
func (p *Partition) Offsets() (start, end int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.start, p.end()
}

func (p *Partition) end() int64 { return p.start + int64(len(p.recs)) }

// NextDeadline returns the earliest acquisition-lock expiry (zero if none).
func (p *Partition) NextDeadline() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var d time.Time
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == StateAcquired && (d.IsZero() || r.deadline.Before(d)) {
			d = r.deadline
		}
	}
	return d
}

// release makes an acquired record deliverable again, or archives it once it
// has been delivered delivery.count.limit times.
func (p *Partition) release(i int) {
	r := &p.recs[i]
	r.member, r.deadline = "", time.Time{}
	if int(r.count) >= p.cfg.DeliveryCountLimit {
		r.state = StateArchived
		p.deadLetter(p.start+int64(i), r.count, false) // dead_letter.go
	} else {
		r.state = StateAvailable
	}
}

// expireLocked releases the records whose acquisition lock has expired.
func (p *Partition) expireLocked(now time.Time) {
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == StateAcquired && !now.Before(r.deadline) {
			p.release(i)
		}
	}
	p.advance()
}

// advance moves the start offset past acknowledged and archived records.
func (p *Partition) advance() {
	n := 0
	for n < len(p.recs) && (p.recs[n].state == StateAcknowledged || p.recs[n].state == StateArchived) {
		n++
	}
	if n > 0 {
		p.recs = append(p.recs[:0:0], p.recs[n:]...)
		p.start += int64(n)
	}
}

// trim drops the offsets below the log start offset (deleted by retention
// or DeleteRecords): they can no longer be delivered.
func (p *Partition) trim(logStart int64) {
	if logStart <= p.start {
		return
	}
	n := logStart - p.start
	if n >= int64(len(p.recs)) {
		p.recs = nil
	} else {
		p.recs = append(p.recs[:0:0], p.recs[n:]...)
	}
	p.start = logStart
}

// NeedsRead reports the offset from which new batches should be read for an
// acquisition (the end of the in-flight window, at least logStart), and
// whether the window still has room for new records.
func (p *Partition) NeedsRead(logStart int64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trim(logStart)
	return p.end()
}

// Acquire locks up to maxRecords records for member: first the available
// records of the in-flight window (released or whose lock expired), then new
// records from batches (read from the log at the window's end, up to the
// high watermark). Offsets with no record (compacted away) and control
// batches are archived as they are passed. It returns the acquired runs in
// offset order.
func (p *Partition) Acquire(member string, maxRecords int, batches []Batch, logStart int64, now time.Time) []Acquired {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trim(logStart)
	p.expireLocked(now)
	if maxRecords <= 0 {
		return nil
	}
	locks := 0
	for i := range p.recs {
		if p.recs[i].state == StateAcquired {
			locks++
		}
	}
	budget := maxRecords
	if room := p.cfg.MaxRecordLocks - locks; room < budget {
		budget = room
	}
	var out []Acquired
	add := func(off int64, count int16) {
		if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].DeliveryCount == count {
			out[n-1].Last = off
			return
		}
		out = append(out, Acquired{First: off, Last: off, DeliveryCount: count})
	}
	deadline := now.Add(p.cfg.RecordLockDuration)
	for i := range p.recs {
		if budget <= 0 {
			break
		}
		r := &p.recs[i]
		if r.state != StateAvailable {
			continue
		}
		r.state, r.member, r.deadline = StateAcquired, member, deadline
		r.count++
		add(p.start+int64(i), r.count)
		budget--
	}
	for _, b := range batches {
		if budget <= 0 {
			break
		}
		end := p.end()
		if b.Last < end {
			continue
		}
		for off := end; off < b.First; off++ { // a gap: nothing to deliver
			p.recs = append(p.recs, record{state: StateArchived})
		}
		first := max(b.First, end)
		for off := first; off <= b.Last && budget > 0; off++ {
			if b.Control {
				p.recs = append(p.recs, record{state: StateArchived})
				continue
			}
			p.recs = append(p.recs, record{state: StateAcquired, count: 1, member: member, deadline: deadline})
			add(off, 1)
			budget--
		}
	}
	p.advance()
	return out
}

// AckBatch is one acknowledgement batch of a request.
type AckBatch struct {
	First, Last int64
	Types       []int8 // one type for the whole range, or one per offset
}

// ErrInvalidRecordState, ErrInvalidRequest are the acknowledgement errors
// (Kafka's INVALID_RECORD_STATE and INVALID_REQUEST).
type AckError struct {
	InvalidRequest bool // else invalid record state
	Msg            string
}

func (e *AckError) Error() string { return e.Msg }

// Acknowledge applies member's acknowledgement batches. It checks them all
// first: every offset must be acquired by member and its lock unexpired (else
// INVALID_RECORD_STATE), batches must be ordered and well formed (else
// INVALID_REQUEST); nothing changes on an error. renew allows type 4.
func (p *Partition) Acknowledge(member string, batches []AckBatch, renew bool, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	prev := int64(-1)
	for _, b := range batches {
		if b.First < 0 || b.Last < b.First || b.First <= prev {
			return &AckError{InvalidRequest: true, Msg: "acknowledgement batches must be ordered, non-overlapping ranges"}
		}
		prev = b.Last
		n := b.Last - b.First + 1
		if len(b.Types) != 1 && int64(len(b.Types)) != n {
			return &AckError{InvalidRequest: true, Msg: "acknowledge types must hold one type or one per offset"}
		}
		for _, t := range b.Types {
			if t < AckGap || t > AckRenew || (t == AckRenew && !renew) {
				return &AckError{InvalidRequest: true, Msg: "invalid acknowledge type"}
			}
			if t == AckRenew && p.cfg.RenewDisabled { // share.renew.acknowledge.enable=false
				return &AckError{Msg: "Renewing acquisition locks is not enabled for the group."}
			}
		}
		for off := b.First; off <= b.Last; off++ {
			i := off - p.start
			if i < 0 || i >= int64(len(p.recs)) {
				return &AckError{Msg: "offset is not in the acquired state"}
			}
			r := &p.recs[i]
			if r.state != StateAcquired || r.member != member {
				return &AckError{Msg: "record is not acquired by this member"}
			}
		}
	}
	deadline := now.Add(p.cfg.RecordLockDuration)
	for _, b := range batches {
		for off := b.First; off <= b.Last; off++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[off-b.First]
			}
			r := &p.recs[off-p.start]
			switch t {
			case AckAccept:
				r.state, r.member, r.deadline = StateAcknowledged, "", time.Time{}
			case AckGap, AckReject:
				r.state, r.member, r.deadline = StateArchived, "", time.Time{}
				if t == AckReject {
					p.deadLetter(off, r.count, true) // dead_letter.go
				}
			case AckRelease:
				p.release(int(off - p.start))
			case AckRenew:
				r.deadline = deadline
			}
		}
	}
	p.advance()
	return nil
}

// ReleaseMember releases every record member holds (its share session
// closed or it left the group).
func (p *Partition) ReleaseMember(member string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.recs {
		if r := &p.recs[i]; r.state == StateAcquired && r.member == member {
			p.release(i)
		}
	}
	p.advance()
}

// Expire releases the records whose lock has expired.
func (p *Partition) Expire(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
}

// StateBatch is a run of offsets with one persisted state and delivery count.
type StateBatch struct {
	First, Last   int64
	State         int8
	DeliveryCount int16
}

// Snapshot is the persisted state of a share partition: Kafka's
// ShareSnapshotValue (start offset and state batches).
type Snapshot struct {
	Key           Key
	SnapshotEpoch int32
	StateEpoch    int32
	LeaderEpoch   int32
	StartOffset   int64
	// DeliveryCompleteCount is the number of acknowledged and archived
	// offsets at or past the start offset (-1: unknown).
	DeliveryCompleteCount int32
	CreateTimestamp       int64 // ms
	WriteTimestamp        int64 // ms
	Batches               []StateBatch
}

// snapshotLocked returns the persisted view: acquired records are written
// as available (a restart releases every lock), and available records never
// delivered are left out.
func (p *Partition) snapshotLocked() Snapshot {
	s := Snapshot{Key: p.Key, StateEpoch: p.stateEpoch, StartOffset: p.start, LeaderEpoch: -1}
	for i := range p.recs {
		r := &p.recs[i]
		st := r.state
		if st == StateAcknowledged || st == StateArchived {
			s.DeliveryCompleteCount++
		}
		if st == StateAcquired {
			st = StateAvailable
		}
		if st == StateAvailable && r.count == 0 {
			continue
		}
		off := p.start + int64(i)
		if n := len(s.Batches); n > 0 {
			last := &s.Batches[n-1]
			if last.Last == off-1 && last.State == st && last.DeliveryCount == r.count {
				last.Last = off
				continue
			}
		}
		s.Batches = append(s.Batches, StateBatch{First: off, Last: off, State: st, DeliveryCount: r.count})
	}
	return s
}

// Snapshot returns the state as it would be persisted.
func (p *Partition) Snapshot() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snapshotLocked()
}

// restore replaces the state with a loaded snapshot.
func (p *Partition) restore(s Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start, p.recs, p.epoch, p.created = s.StartOffset, nil, s.SnapshotEpoch, s.CreateTimestamp
	p.stateEpoch = s.StateEpoch
	for _, b := range s.Batches {
		for off := b.First; off <= b.Last; off++ {
			if off < p.start {
				continue
			}
			for p.end() < off {
				p.recs = append(p.recs, record{state: StateAvailable})
			}
			st := b.State
			if st != StateAcknowledged && st != StateArchived {
				st = StateAvailable
			}
			p.recs = append(p.recs, record{state: st, count: b.DeliveryCount})
		}
	}
	p.advance()
	p.persisted = EncodeSnapshotValue(p.snapshotLocked())
}

// Lag is the number of records of the partition not yet delivered to
// completion: those from the start offset up to hw, less the acknowledged
// and archived ones of the in-flight window.
func (p *Partition) Lag(hw int64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if hw <= p.start {
		return 0
	}
	lag := hw - p.start
	for i := range p.recs {
		if p.start+int64(i) >= hw {
			break
		}
		if st := p.recs[i].state; st == StateAcknowledged || st == StateArchived {
			lag--
		}
	}
	return lag
}
