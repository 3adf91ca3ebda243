package replica

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Follower fetching (KIP-392). A consumer may fetch from any replica (Fetch
// v11+): CheckReplica is the check for such a fetch, and a follower serves
// it up to its own high watermark (the leader's, as the leader last told
// it). The leader picks the replica a consumer should read from among the
// in-sync replicas that hold the fetch offset (ReadReplicaCandidates; the
// rack choice is the broker's).

// CheckReplica is Kafka's check of a consumer fetch that may be served by a
// follower: the epoch rules of CheckLeader, then NOT_LEADER_OR_FOLLOWER
// when this broker is not a replica of the partition.
func (p *Partition) CheckReplica(currentEpoch int32) int16 {
	st := p.st.Load()
	if c := checkEpoch(st.LeaderEpoch, currentEpoch); c != 0 {
		return c
	}
	if roleOf(p.self, st) == None {
		return kerr.NotLeaderForPartition.Code
	}
	return 0
}

// ReplicaView is what a leader knows of one replica when choosing where a
// consumer reads (Kafka's ReplicaView).
type ReplicaView struct {
	ID            int32
	LogEndOffset  int64
	SinceCaughtUp time.Duration // 0 for the leader
}

// ReadReplicaCandidates returns, on the leader, the leader itself (first)
// and every other in-sync replica whose log holds fetchOffset, as Kafka's
// leader considers them for a preferred read replica; nil when this broker
// does not lead.
func (p *Partition) ReadReplicaCandidates(fetchOffset int64, now time.Time) []ReplicaView {
	st := p.st.Load()
	if st.Leader != p.self {
		return nil
	}
	out := []ReplicaView{{ID: p.self, LogEndOffset: p.log.LogEndOffset()}}
	p.lv.mu.Lock()
	defer p.lv.mu.Unlock()
	if p.lv.epoch != st.LeaderEpoch {
		return out
	}
	for id, f := range p.lv.followers {
		if id == p.self || !slices.Contains(st.ISR, id) || f.leo < fetchOffset || f.leo < 0 {
			continue
		}
		since := now.Sub(f.caughtUp)
		if f.caughtUp.IsZero() {
			since = now.Sub(p.lv.since)
		}
		out = append(out, ReplicaView{ID: id, LogEndOffset: f.leo, SinceCaughtUp: since})
	}
	slices.SortFunc(out[1:], func(a, b ReplicaView) int { return int(a.ID - b.ID) })
	return out
}
