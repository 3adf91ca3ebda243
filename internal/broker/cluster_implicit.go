package broker

// The implicit one-voter quorum: a node started with no quorum config
// (neither controller.quorum.voters nor controller.quorum.bootstrap.servers,
// or only its own controller listener as the bootstrap server) is, by
// default (sluice.one.voter.quorum=true), voter node.id of a quorum of its
// own. Its metadata goes through raft like any cluster node's, and it keeps
// what a single node does:
//
//   - it serves no controller listener unless listeners names one: nothing
//     needs to reach a lone voter (it sends no raft messages, and its own
//     controller requests are local calls), and a listener nobody
//     configured would let anyone on the host speak to the controller past
//     the client listeners' authentication. The address it records is a
//     port of 127.0.0.1 the system chose and it let go, so the raft
//     cluster id is derived from the node id alone, not from an address;
//   - a single node's data directory is imported at the first start by the
//     in-place upgrade (cluster_upgrade.go), always: a new directory too, so
//     that the cluster id stays the one the data directory recorded;
//   - Start returns once the node serves: registered, unfenced, its
//     metadata published, and __consumer_offsets and __transaction_state
//     created and loaded, as a single node has them when it starts;
//   - it needs no inter-broker SASL settings (it has no replicas to fetch)
//     and a failed partition log refuses appends instead of halting the
//     process (the metadata log still halts it, cluster_halt.go).

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/group"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/txn"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// oneVoterQuorumConfig turns the implicit one-voter quorum on.
const oneVoterQuorumConfig = "sluice.one.voter.quorum"

// oneVoterQuorumDefault is the setting when a configuration leaves
// sluice.one.voter.quorum unset (tests may change it for a whole run,
// one_voter_main_test.go).
var oneVoterQuorumDefault = true

// implicitReadyTimeout bounds how long Start waits for the implicit voter to
// serve.
const implicitReadyTimeout = 60 * time.Second

// oneVoterQuorum reports whether a node without quorum config runs as an
// implicit one-voter quorum. A node.id below 1 (which no voter can have)
// keeps the single-node path.
func oneVoterQuorum(cfg *config.Broker) bool {
	if cfg.NodeID < 1 {
		return false
	}
	if v, ok := cfg.Raw[oneVoterQuorumConfig]; ok {
		return strings.EqualFold(strings.TrimSpace(v), "true")
	}
	return oneVoterQuorumDefault
}

// implicitVoterAddr is the address the implicit voter is configured with
// until its controller listener is bound (the port is chosen then).
const implicitVoterAddr = "127.0.0.1:0"

// implicitVoter is the controller.quorum.voters an implicit voter runs with.
func implicitVoter(cfg *config.Broker) string {
	return strconv.Itoa(int(cfg.NodeID)) + "@" + implicitVoterAddr
}

// implicitRaftClusterID is the raft cluster id of an implicit one-voter
// quorum: from the node id alone, so that the same directory restarts
// whatever port its controller listener gets.
func implicitRaftClusterID(nodeID int32) uint64 {
	return quorumClusterID(map[uint64]string{uint64(nodeID): implicitVoterAddr})
}

// awaitImplicitReady waits until the implicit voter serves as a single node
// does when Start returns.
func (c *clusterNode) awaitImplicitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	wait := func(what string, done func() bool) error {
		for !done() {
			if time.Now().After(deadline) {
				return fmt.Errorf("sluice: one-voter metadata quorum: %s after %s", what, timeout)
			}
			time.Sleep(2 * time.Millisecond)
		}
		return nil
	}
	ready := func() bool {
		cu := c.caughtUp.Load()
		if c.epoch.Load() == 0 || c.fenced.Load() || cu == 0 || c.published.Load() < cu {
			return false
		}
		// The controller answers the heartbeat that unfences this broker
		// once the change is committed, maybe before it is published here:
		// wait for the image that shows it live and leading its partitions.
		im := c.pubImage.Load()
		if im == nil || !im.IsLive(c.cfg.nodeID) {
			return false
		}
		for _, t := range im.Topics {
			for _, p := range t.Partitions {
				if p.Leader == metadata.NoLeader && slices.Contains(p.Replicas, c.cfg.nodeID) {
					return false
				}
			}
		}
		return true
	}
	if err := wait("this broker is not registered, unfenced and caught up (a data directory of a cluster of "+
		"several voters needs its controller.quorum.voters)", ready); err != nil {
		return err
	}
	for _, name := range []string{group.OffsetsTopic, txn.TransactionStateTopic} {
		if _, ok := c.store.Image().Topics[name]; ok {
			continue
		}
		if err := c.createInternalTopic(name); err != nil {
			return fmt.Errorf("sluice: one-voter metadata quorum: creating %s: %w", name, err)
		}
	}
	return wait("the internal topics are not published", func() bool {
		im := c.pubImage.Load()
		if im == nil {
			return false
		}
		for _, name := range []string{group.OffsetsTopic, txn.TransactionStateTopic} {
			if _, ok := im.Topics[name]; !ok {
				return false
			}
		}
		return true
	})
}

// ensureInternalTopicNow makes sure an internal topic exists and reports
// whether the published image has it. An implicit voter creates it before
// answering, as a single node does (the request waits for one commit);
// another cluster node starts its creation in the background and the
// client retries (ensureInternalTopic), as with Kafka.
func (c *clusterNode) ensureInternalTopicNow(name string) bool {
	if !c.cfg.implicit {
		c.ensureInternalTopic(name)
		return false
	}
	has := func() bool {
		im := c.pubImage.Load()
		if im == nil {
			return false
		}
		_, ok := im.Topics[name]
		return ok
	}
	c.createMu.Lock()
	defer c.createMu.Unlock()
	if has() {
		return true
	}
	if err := c.createInternalTopic(name); err != nil {
		c.logger.Warn("cannot create internal topic", "topic", name, "err", err)
		return false
	}
	return has()
}

// implicitRaftCluster is the raft cluster id of a node that runs, or ran,
// as an implicit one-voter quorum. An implicit voter takes the id its quorum
// directory records, whatever it is (a directory of a one-voter cluster
// configured with controller.quorum.voters goes on without that list); a
// node configured as the only voter of controller.quorum.voters takes the
// implicit id its directory records (it ran without quorum config before,
// and now has a controller listener others can reach, to grow). ok is false
// for every other node.
func (c *clusterNode) implicitRaftCluster(fsys vfs.FS, dir string) (uint64, bool, error) {
	recorded := uint64(0)
	if data, err := vfs.ReadFile(fsys, filepath.Join(dir, "identity.json")); err == nil {
		var id struct {
			ClusterID uint64 `json:"cluster_id"`
			NodeID    uint64 `json:"node_id"`
		}
		if json.Unmarshal(data, &id) == nil && id.NodeID == uint64(c.cfg.nodeID) {
			recorded = id.ClusterID
		}
	}
	implicit := implicitRaftClusterID(c.cfg.nodeID)
	if c.cfg.implicit {
		if recorded != 0 {
			return recorded, true, nil
		}
		return implicit, true, nil
	}
	_, self := c.cfg.voters[uint64(c.cfg.nodeID)]
	if recorded == implicit && (!self || len(c.cfg.voters) != 1) {
		return 0, false, fmt.Errorf("sluice: %s is the metadata of a node that ran without quorum config (a one-voter quorum of its own); "+
			"it can join a cluster only as the only voter of a new cluster (controller.quorum.voters=%d@host:port), which keeps its data, "+
			"and grow from there (AddRaftVoter; docs/cluster.md); other nodes start on empty data directories", dir, c.cfg.nodeID)
	}
	if recorded == implicit {
		return implicit, true, nil
	}
	return 0, false, nil
}

// checkImplicitRoles refuses a process.roles without the controller role on
// a node with no quorum config: it has no quorum to follow.
func checkImplicitRoles(cfg *config.Broker) error {
	roles := strings.TrimSpace(cfg.Raw["process.roles"])
	if roles == "" {
		return nil
	}
	for _, r := range strings.Split(roles, ",") {
		if strings.TrimSpace(r) == "controller" {
			return nil
		}
	}
	return fmt.Errorf("sluice: process.roles=%s needs controller.quorum.voters or controller.quorum.bootstrap.servers: "+
		"without them a node is the only voter of a quorum of its own, which takes the controller role "+
		"(process.roles=broker,controller), or set sluice.one.voter.quorum=false for the single-node path", roles)
}
