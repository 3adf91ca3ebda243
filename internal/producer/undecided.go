package producer

// Transactions decided on the leader but not yet for readers: as Kafka's
// ProducerStateManager keeps its unreplicated transactions, a transaction
// whose marker is written stays undecided until the high watermark passes
// the marker, so the last stable offset never moves past a marker the
// in-sync replicas may not hold (a leader change would truncate it, and the
// transaction could then end the other way).

// decidedTxn is a transaction ended by the marker at offset marker, whose
// first batch was at first.
type decidedTxn struct{ first, marker int64 }

// addDecidedLocked remembers a transaction its marker just ended (mu held).
func (s *State) addDecidedLocked(first, marker int64) {
	s.decided = append(s.decided, decidedTxn{first, marker})
	s.nDecided.Store(int64(len(s.decided)))
}

// FirstUndecidedOffset is the first offset of the earliest transaction not
// decided below hw: the earliest ongoing one, or one whose marker is at or
// above hw (not yet on the in-sync replicas); -1 when there is none.
// Transactions whose marker is below hw are forgotten. It takes the state's
// mutex only while such transactions are remembered.
func (s *State) FirstUndecidedOffset(hw int64) int64 {
	if s.nDecided.Load() == 0 {
		return s.firstUnstable.Load()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.firstUnstable.Load()
	keep := s.decided[:0]
	for _, d := range s.decided {
		if d.marker < hw {
			continue
		}
		keep = append(keep, d)
		if first < 0 || d.first < first {
			first = d.first
		}
	}
	clear(s.decided[len(keep):])
	s.decided = keep
	s.nDecided.Store(int64(len(keep)))
	return first
}
