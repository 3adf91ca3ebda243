package group

import (
	"bytes"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicState is a classic group's state, named as Kafka names them.
type classicState int8

const (
	stateEmpty classicState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

func (s classicState) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	default:
		return "Dead"
	}
}

// group is one group id: a classic group, or a KIP-848 consumer group when consumer is
// set, plus its committed offsets (shared by both kinds).
type group struct {
	id       string
	consumer *consumerGroup

	state        classicState
	stateSince   time.Time
	protocolType string
	protocol     string // selected protocol, "" if none
	generation   int32
	leader       string
	members      map[string]*member
	static       map[string]string // group.instance.id -> member id
	pending      map[string]Timer  // KIP-394 member ids handed out, not yet joined
	pendingSync  map[string]bool   // members that must SyncGroup this generation

	rebalanceTimer   Timer
	syncTimer        Timer
	timerSeq         uint64 // bumps invalidate armed rebalance/sync timers
	initialDelay     bool   // the current rebalance is an initial delayed join
	newMemberAdded   bool
	initialRemaining time.Duration

	offsets map[topicPartition]committedOffset

	// cgRecords holds the encoded value of every KIP-848 consumer-group record the log
	// has for this group, by key (consumer_persist.go); cgDirty says a write failed and
	// the next one must compare everything.
	cgRecords map[string][]byte
	cgDirty   bool
	// streamsLoad collects a streams group's records during a replay
	// (streams_persist.go).
	streamsLoad *streamsReplay
}

type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []kmsg.JoinGroupRequestProtocol
	assignment       []byte

	joinCB      func(*kmsg.JoinGroupResponse)
	joinVersion int16
	syncCB      func(*kmsg.SyncGroupResponse)
	syncVersion int16
	isNew       bool

	sessionTimer Timer
	sessionSeq   uint64
}

func newGroup(id string, now time.Time) *group {
	return &group{
		id:          id,
		state:       stateEmpty,
		stateSince:  now,
		members:     make(map[string]*member),
		static:      make(map[string]string),
		pending:     make(map[string]Timer),
		pendingSync: make(map[string]bool),
		offsets:     make(map[topicPartition]committedOffset),
	}
}

func (g *group) transition(s classicState, now time.Time) {
	g.state = s
	g.stateSince = now
}

func (g *group) stopTimers() {
	g.timerSeq++
	stopTimer(g.rebalanceTimer)
	stopTimer(g.syncTimer)
	g.rebalanceTimer, g.syncTimer = nil, nil
	for _, m := range g.members {
		stopTimer(m.sessionTimer)
	}
	for _, t := range g.pending {
		stopTimer(t)
	}
}

// isEmpty reports whether the group has no members of either kind.
func (g *group) isEmpty() bool {
	if g.consumer != nil {
		return len(g.consumer.members) == 0
	}
	return len(g.members) == 0
}

func (m *member) isStatic() bool { return m.instanceID != nil }

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func (m *member) protocolNames() []string {
	out := make([]string, len(m.protocols))
	for i, p := range m.protocols {
		out[i] = p.Name
	}
	return out
}

func sameProtocols(a, b []kmsg.JoinGroupRequestProtocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Metadata, b[i].Metadata) {
			return false
		}
	}
	return true
}

// supportsProtocols is Kafka's check that a (re)joining member is compatible: an empty
// group takes any non-empty type and protocol list; otherwise the type must match and
// at least one of names must be supported by every current member.
func (g *group) supportsProtocols(protocolType string, names []string) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(names) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, n := range names {
		all := true
		for _, m := range g.members {
			if !hasProtocol(m, n) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func hasProtocol(m *member, name string) bool {
	for _, p := range m.protocols {
		if p.Name == name {
			return true
		}
	}
	return false
}

// selectProtocol picks, among protocols every member supports, the one most members
// prefer (each member votes for its first supported choice). Ties go to the candidate
// the leader (or the lowest member id) lists first.
func (g *group) selectProtocol() string {
	ids := g.sortedMemberIDs()
	if len(ids) == 0 {
		return ""
	}
	first := g.members[ids[0]]
	if l, ok := g.members[g.leader]; ok {
		first = l
	}
	var candidates []string
	for _, name := range first.protocolNames() {
		all := true
		for _, id := range ids {
			if !hasProtocol(g.members[id], name) {
				all = false
				break
			}
		}
		if all {
			candidates = append(candidates, name)
		}
	}
	if len(candidates) == 0 {
		return ""
	}
	votes := make(map[string]int)
	for _, id := range ids {
		for _, name := range g.members[id].protocolNames() {
			if contains(candidates, name) {
				votes[name]++
				break
			}
		}
	}
	best := candidates[0]
	for _, cnd := range candidates[1:] {
		if votes[cnd] > votes[best] {
			best = cnd
		}
	}
	return best
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (g *group) sortedMemberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (g *group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		if m.rebalanceTimeout > d {
			d = m.rebalanceTimeout
		}
	}
	return d
}

func (g *group) awaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.joinCB != nil {
			n++
		}
	}
	return n
}

func (g *group) allJoined() bool {
	return g.awaitingJoin() == len(g.members) && len(g.pending) == 0
}

// currentMembers is the member list a leader receives: every member's metadata for the
// selected protocol, sorted by member id for a stable order.
func (g *group) currentMembers() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.members))
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.InstanceID = m.instanceID
		jm.ProtocolMetadata = m.metadataFor(g.protocol)
		out = append(out, jm)
	}
	return out
}

// metadataRecord is the GroupMetadata record for the group's current state.
func (g *group) metadataRecord() record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = valueVersionGroupMetadata
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.stateSince.UnixMilli()
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.id
		vm.InstanceID = m.instanceID
		vm.ClientID = m.clientID
		vm.ClientHost = m.clientHost
		vm.RebalanceTimeoutMillis = ms(m.rebalanceTimeout)
		vm.SessionTimeoutMillis = ms(m.sessionTimeout)
		vm.Subscription = m.metadataFor(g.protocol)
		vm.Assignment = m.assignment
		v.Members = append(v.Members, vm)
	}
	return record{key: groupMetadataKey(g.id), value: v.AppendTo(nil)}
}

func joinError(version int16, code int16, memberID string) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version = version
	r.ErrorCode = code
	r.Generation = -1
	r.MemberID = memberID
	return r
}

func syncError(version int16, code int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = version
	r.ErrorCode = code
	return r
}
