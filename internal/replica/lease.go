package replica

import "sync/atomic"

// leaseCheck holds the function that says whether this broker's session
// with the controller has lapsed (shared by a Manager and its partitions).
type leaseCheck struct {
	lapsed atomic.Pointer[func() bool]
}

// SetLeaseCheck installs lapsed, which reports whether this broker has not
// renewed its session with the controller (a successful heartbeat) for
// the session timeout. Once it has, the controller may have fenced it and
// elected other leaders for its partitions, so a partition with other
// replicas stops acting as leader here: CheckLeader and AppendAsLeader
// answer NOT_LEADER_OR_FOLLOWER until the session is renewed (and the
// metadata says who leads). A partition whose only replica is this broker
// keeps serving: no other leader can be elected for it. nil: no lease
// (a single node).
func (m *Manager) SetLeaseCheck(lapsed func() bool) {
	if lapsed == nil {
		m.lease.lapsed.Store(nil)
		return
	}
	m.lease.lapsed.Store(&lapsed)
}

// leaseLapsed reports whether this broker, leader under st, must not act
// as leader because its session with the controller has lapsed.
func (p *Partition) leaseLapsed(st *State) bool {
	if p.lease == nil || len(st.Replicas) < 2 {
		return false
	}
	f := p.lease.lapsed.Load()
	return f != nil && (*f)()
}
