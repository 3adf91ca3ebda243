package fetchsession

import "fmt"

// Request is the session-relevant part of a Fetch request.
type Request struct {
	SessionID    int32
	SessionEpoch int32
	UsesTopicIDs bool // version 13 or later
	Partitions   []RequestPartition
	Forgotten    []Key
}

// RequestPartition is one partition listed in a Fetch request.
type RequestPartition struct {
	Key
	PartitionState
}

// Context is the outcome of looking a request up in the cache: either a
// top-level error, or the partitions to read, in order. After reading, the
// handler calls Include for each partition (in the same order) and then
// SessionID for the response.
type Context struct {
	// ErrorCode is a top-level Fetch error (FETCH_SESSION_ID_NOT_FOUND,
	// INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR); when it is
	// set there is nothing to read and the response carries session id 0
	// and no partitions.
	ErrorCode int16
	// Message explains ErrorCode (for the log).
	Message string
	// Incremental is true when the request used an existing session.
	Incremental bool
	// Partitions lists what to read, with the fetch state to use.
	Partitions []RequestPartition

	cache     *Cache
	sess      *session // incremental
	newSess   *session // full fetch that opens a session (epoch 0)
	entries   []*entry // incremental: the session entries behind Partitions
	responded []bool   // incremental: included in the response
	finished  bool
	id        int32
}

// NewContext interprets a Fetch request against the cache (KIP-227):
//   - epoch -1 (final): a sessionless full fetch; a named session is closed;
//   - epoch 0 (initial): a full fetch that opens a new session (any named
//     session is closed first);
//   - epoch > 0: an incremental fetch on session SessionID, which must exist
//     (else FETCH_SESSION_ID_NOT_FOUND) and expect this epoch (else
//     INVALID_FETCH_SESSION_EPOCH); listed partitions are added or updated,
//     forgotten ones removed, and the session's epoch advances.
func (c *Cache) NewContext(r Request) *Context {
	ctx := &Context{cache: c}
	switch {
	case r.SessionEpoch == finalEpoch || r.SessionEpoch == initialEpoch:
		if r.SessionID != invalidSessionID {
			c.remove(r.SessionID)
		}
		ctx.Partitions = r.Partitions
		if r.SessionEpoch == initialEpoch {
			s := &session{usesTopicIDs: r.UsesTopicIDs, epoch: 1, byKey: make(map[Key]*entry, len(r.Partitions))}
			for _, p := range r.Partitions {
				if e, dup := s.byKey[p.Key]; dup {
					e.PartitionState = p.PartitionState
					continue
				}
				e := newEntry(p.Key, p.PartitionState)
				s.byKey[p.Key] = e
				s.order = append(s.order, e)
			}
			ctx.newSess = s
		}
		return ctx
	case r.SessionEpoch < finalEpoch:
		ctx.ErrorCode, ctx.Message = ErrInvalidFetchSessionEpoch, fmt.Sprintf("invalid session epoch %d", r.SessionEpoch)
		return ctx
	}
	s := c.get(r.SessionID)
	if s == nil {
		ctx.ErrorCode, ctx.Message = ErrFetchSessionIDNotFound, fmt.Sprintf("fetch session %d not found", r.SessionID)
		return ctx
	}
	if s.usesTopicIDs != r.UsesTopicIDs { // fixed at creation: no lock needed
		c.remove(s.id)
		ctx.ErrorCode, ctx.Message = ErrFetchSessionTopicIDError, fmt.Sprintf("fetch session %d changed between topic ids and names", s.id)
		return ctx
	}
	// Lock order: Cache.mu before session.mu (eviction); never call into
	// the cache while holding s.mu.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != r.SessionEpoch {
		ctx.ErrorCode, ctx.Message = ErrInvalidFetchSessionEpoch,
			fmt.Sprintf("fetch session %d expected epoch %d, got %d", s.id, s.epoch, r.SessionEpoch)
		return ctx
	}
	s.epoch++
	if s.epoch <= 0 {
		s.epoch = 1 // wrap past MaxInt32 as Kafka's nextEpoch does
	}
	for _, p := range r.Partitions {
		if e := s.byKey[p.Key]; e != nil {
			e.PartitionState = p.PartitionState
			continue
		}
		e := newEntry(p.Key, p.PartitionState)
		s.byKey[p.Key] = e
		s.order = append(s.order, e)
	}
	if len(r.Forgotten) > 0 {
		for _, k := range r.Forgotten {
			delete(s.byKey, k)
		}
		kept := s.order[:0]
		for _, e := range s.order {
			if s.byKey[e.Key] == e {
				kept = append(kept, e)
			}
		}
		clear(s.order[len(kept):])
		s.order = kept
	}
	ctx.Incremental = true
	ctx.sess = s
	ctx.entries = append([]*entry(nil), s.order...)
	ctx.responded = make([]bool, len(ctx.entries))
	ctx.Partitions = make([]RequestPartition, len(ctx.entries))
	for i, e := range ctx.entries {
		ctx.Partitions[i] = RequestPartition{Key: e.Key, PartitionState: e.PartitionState}
	}
	return ctx
}

// Result is what reading one partition produced, as far as the session
// cares.
type Result struct {
	ErrorCode        int16
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	HasRecords       bool
	// PreferredReadReplica: the answer sends the consumer to another
	// replica (KIP-392), always included.
	PreferredReadReplica bool
}

// Include reports whether partition i of Partitions belongs in the response,
// and remembers what was sent. A full fetch includes everything; an
// incremental one only partitions with records, an error, or a changed high
// watermark, last stable offset or log start offset.
func (ctx *Context) Include(i int, r Result) bool {
	if ctx.newSess != nil && i < len(ctx.Partitions) {
		if e := ctx.newSess.byKey[ctx.Partitions[i].Key]; e != nil {
			e.remember(r)
		}
	}
	if !ctx.Incremental {
		return true
	}
	e := ctx.entries[i]
	ctx.sess.mu.Lock()
	defer ctx.sess.mu.Unlock()
	must := r.HasRecords || r.ErrorCode != noError || r.PreferredReadReplica ||
		e.highWatermark != r.HighWatermark ||
		e.lastStableOffset != r.LastStableOffset ||
		e.logStartOffset != r.LogStartOffset
	e.remember(r)
	ctx.responded[i] = must
	return must
}

func (e *entry) remember(r Result) {
	if r.ErrorCode != noError {
		// Errors are not cached: the partition is reported again until
		// it recovers.
		e.highWatermark, e.lastStableOffset, e.logStartOffset = -1, -1, -1
		return
	}
	e.highWatermark, e.lastStableOffset, e.logStartOffset = r.HighWatermark, r.LastStableOffset, r.LogStartOffset
}

// Finish completes the context and returns the session id for the
// response: the new session's id after an initial full fetch (0 when the
// cache had no room), the same id for an incremental fetch, 0 otherwise.
// Partitions that were included in an incremental response move to the end
// of the session's order so the next fetch serves the others first (Kafka's
// fairness rule for response size limits).
func (ctx *Context) Finish() int32 {
	if ctx.ErrorCode != noError {
		return invalidSessionID
	}
	if ctx.finished {
		return ctx.id
	}
	ctx.finished = true
	switch {
	case ctx.newSess != nil:
		ctx.id = ctx.cache.create(ctx.newSess)
		return ctx.id
	case ctx.sess != nil:
		s := ctx.sess
		s.mu.Lock()
		defer s.mu.Unlock()
		sent := make(map[*entry]bool, len(ctx.entries))
		for i, e := range ctx.entries {
			if ctx.responded[i] {
				sent[e] = true
			}
		}
		if len(sent) > 0 {
			order := make([]*entry, 0, len(s.order))
			for _, e := range s.order {
				if !sent[e] {
					order = append(order, e)
				}
			}
			for _, e := range s.order {
				if sent[e] {
					order = append(order, e)
				}
			}
			s.order = order
		}
		ctx.id = s.id
		return s.id
	}
	return invalidSessionID
}
