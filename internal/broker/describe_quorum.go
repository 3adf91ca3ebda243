// DescribeQuorum (key 55), v0–v2: the metadata quorum's state, as
// kafka-metadata-quorum describe --status / --replication print it.
//
// On a cluster node the answer comes from the quorum's leader (etcd raft):
// leader id, leader epoch (raft's term), high watermark (raft's commit
// index), and for each voter its log end offset (the leader's match index
// for it). Raft keeps no fetch times: a voter the leader heard from within
// the election timeout gets the time of the answer as its last fetch and
// last caught-up time when it has every entry, -1 otherwise. A broker that
// is not the leader asks the leader over the peer listener, as Kafka's
// brokers forward DescribeQuorum to the controller. The topic must be
// __cluster_metadata partition 0 (else UNKNOWN_TOPIC_OR_PARTITION, as
// Kafka). v2's Nodes give each voter's endpoints as it told them
// (UpdateRaftVoter, update_raft_voter.go), else its peer address under the
// name CONTROLLER. On a single node the broker answers as a one-voter quorum
// that it leads. It needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED).
package broker

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DescribeQuorum, (*Broker).handleDescribeQuorum) }

// metadataTopic is the name Kafka gives the metadata log.
const metadataTopic = "__cluster_metadata"

// quorumState is the leader's view of the quorum.
type quorumState struct {
	Leader uint64       `json:"leader"`
	Term   uint64       `json:"term"`
	Commit uint64       `json:"commit"`
	Voters []voterState `json:"voters"`
	// Observers are raft's learners: nodes that follow the metadata log
	// without voting (broker-only nodes, controllers not yet promoted).
	Observers []voterState `json:"observers,omitempty"`
}

type voterState struct {
	ID        uint64 `json:"id"`
	Match     uint64 `json:"match"`
	Active    bool   `json:"active"`
	CaughtUp  bool   `json:"caught_up"`
	LastIndex uint64 `json:"-"`
}

// describeQuorumLocal is the leader's answer (NOT_CONTROLLER elsewhere).
func (c *clusterNode) describeQuorumLocal(_ context.Context, _ struct{}) (quorumState, error) {
	st, err := c.node.Status()
	if err != nil || st.RaftState != raft.StateLeader {
		return quorumState{}, &controller.Error{Code: kerr.NotController.Code, Msg: "not the quorum leader", Leader: c.node.Leader()}
	}
	qs := quorumState{Leader: st.ID, Term: st.HardState.GetTerm(), Commit: st.HardState.GetCommit()}
	last := st.Progress[st.ID].Match
	ids := make([]uint64, 0, len(st.Progress))
	for id := range st.Progress {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		pr := st.Progress[id]
		vs := voterState{ID: id, Match: pr.Match, Active: pr.RecentActive || id == st.ID,
			CaughtUp: pr.Match >= last && pr.State != tracker.StateSnapshot}
		if pr.IsLearner {
			qs.Observers = append(qs.Observers, vs)
		} else {
			qs.Voters = append(qs.Voters, vs)
		}
	}
	return qs, nil
}

func (b *Broker) handleDescribeQuorum(ctx context.Context, r *wire.Request, req *kmsg.DescribeQuorumRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if !b.allowedCluster(r, authz.OpDescribe) { // Kafka: DESCRIBE on the cluster
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("Cluster authorization failed.")
		return resp, nil
	}
	now := time.Now().UnixMilli()
	var qs quorumState
	var qerr error
	if c := b.cluster; c != nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		qerr = callController(cctx, c, "describe-quorum", c.describeQuorumLocal, struct{}{}, &qs)
		cancel()
	} else {
		self := uint64(b.self())
		qs = quorumState{Leader: self, Term: 0, Commit: 0, Voters: []voterState{{ID: self, Active: true, CaughtUp: true}}}
	}
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeQuorumResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case t.Topic != metadataTopic || p.Partition != 0:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case qerr != nil:
				rp.ErrorCode = errorCode(asBrokerError(qerr))
				rp.ErrorMessage = kmsg.StringPtr(qerr.Error())
			default:
				rp.LeaderID = int32(qs.Leader)
				rp.LeaderEpoch = int32(qs.Term)
				rp.HighWatermark = int64(qs.Commit)
				replica := func(v voterState) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
					vs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
					vs.ReplicaID = int32(v.ID)
					vs.LogEndOffset = int64(v.Match)
					vs.LastFetchTimestamp, vs.LastCaughtUpTimestamp = -1, -1
					if v.Active {
						vs.LastFetchTimestamp = now
						if v.CaughtUp {
							vs.LastCaughtUpTimestamp = now
						}
					}
					return vs
				}
				for _, v := range qs.Voters {
					rp.CurrentVoters = append(rp.CurrentVoters, replica(v))
				}
				rp.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
				for _, v := range qs.Observers {
					rp.Observers = append(rp.Observers, replica(v))
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version >= 2 && qerr == nil {
		for _, v := range qs.Voters {
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = int32(v.ID)
			if c := b.cluster; c != nil {
				if q, ok := c.store.Image().QuorumNode(int32(v.ID)); ok && len(q.Listeners) > 0 {
					// The endpoints the voter told (UpdateRaftVoter).
					for _, ql := range q.Listeners {
						l := kmsg.NewDescribeQuorumResponseNodeListener()
						l.Name, l.Host, l.Port = ql.Name, ql.Host, ql.Port
						n.Listeners = append(n.Listeners, l)
					}
					resp.Nodes = append(resp.Nodes, n)
					continue
				}
				addr, ok := c.peers.Addr(v.ID)
				if v.ID == uint64(c.cfg.nodeID) {
					addr, ok = c.peerAddr, true
				}
				if ok {
					if host, port, err := splitHostPort(addr); err == nil {
						l := kmsg.NewDescribeQuorumResponseNodeListener()
						l.Name, l.Host, l.Port = "CONTROLLER", host, port
						n.Listeners = append(n.Listeners, l)
					}
				}
			}
			resp.Nodes = append(resp.Nodes, n)
		}
	}
	return resp, nil
}
