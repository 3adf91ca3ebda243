package broker

// Process roles and quorum membership of a cluster node.
//
// process.roles says what a node does: broker (serves clients, holds
// partitions, registers with the controller), controller (may vote in the
// metadata quorum and be the active controller), or both (combined mode,
// the default for a cluster node). A node listed in controller.quorum.voters
// is a voter from the start and needs the controller role. Any other node is
// an observer of the quorum: an etcd raft learner, outside raft's
// configuration until the active controller adds it (join-quorum below);
// then the quorum leader replicates the metadata log to it (from a snapshot
// when compacted), and it never votes. A broker-only node stays one; a node
// with the controller role can be promoted to a voter (AddRaftVoter,
// cluster_voters.go).
//
// Where an observer listens for raft's messages (the quorum leader pushes
// them): the controller listener when listeners names one; otherwise a
// broker-only node binds a port chosen by the system (observerBind). Every
// node's peer address is written into the metadata (a quorum-node record,
// joinLoop) so that every member, and any future leader, can reach it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/peer"
	"github.com/sluice-broker/sluice/internal/quorum"
	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// parseRoles reads process.roles and controller.quorum.bootstrap.servers
// and checks them against the voters.
func (cc *clusterConfig) parseRoles(cfg *config.Broker, votersRaw, bootRaw string) error {
	roles := map[string]bool{}
	for _, r := range strings.Split(cfg.Raw["process.roles"], ",") {
		if r = strings.TrimSpace(r); r != "" {
			roles[r] = true
		}
	}
	if len(roles) == 0 {
		roles["broker"], roles["controller"] = true, true
	}
	cc.broker, cc.controller = roles["broker"], roles["controller"]
	for _, b := range strings.Split(bootRaw, ",") {
		if b = strings.TrimSpace(b); b == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(b); err != nil {
			return fmt.Errorf("sluice: controller.quorum.bootstrap.servers: %q: %v", b, err)
		}
		cc.bootstrap = append(cc.bootstrap, b)
	}
	_, voter := cc.voters[uint64(cc.nodeID)]
	switch {
	case voter && !cc.controller:
		return fmt.Errorf("sluice: node.id %d is in controller.quorum.voters (%s) but process.roles=%s has no controller role",
			cc.nodeID, votersRaw, cfg.Raw["process.roles"])
	case !voter && len(cc.voters) == 0 && len(cc.bootstrap) == 0:
		return errors.New("sluice: a cluster node needs controller.quorum.voters or controller.quorum.bootstrap.servers")
	}
	cc.observer = !voter
	return nil
}

// rolesString is process.roles as Kafka writes it.
func (cc *clusterConfig) rolesString() string {
	switch {
	case cc.broker && cc.controller:
		return "broker,controller"
	case cc.broker:
		return "broker"
	}
	return "controller"
}

// observerBind is where an observer's peer listener binds when no
// controller listener is configured: a port the system chooses, on every
// interface (as a Kafka listener with an empty host).
const observerBind = ":0"

// peerAdvertise is the address other nodes reach this node's peer
// listener at: its own voter address, else the bound address with a
// wildcard host replaced by the advertised host of its first listener.
func (c *clusterNode) peerAdvertise() string {
	if a, ok := c.cfg.voters[uint64(c.cfg.nodeID)]; ok && !c.cfg.implicit {
		return a
	}
	host, port, _ := net.SplitHostPort(c.cfg.peerBind)
	if ba, ok := c.ln.Addr().(*net.TCPAddr); ok {
		port = strconv.Itoa(ba.Port)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = c.b.host
		if host == "" {
			if h, err := os.Hostname(); err == nil {
				host = h
			}
		}
	}
	return net.JoinHostPort(host, port)
}

// raftClusterID is the raft cluster id this node must use: derived from
// the configured voters, else recorded in its quorum directory, else
// learnt from a bootstrap server (which also tells their node ids).
func (c *clusterNode) raftClusterID(fsys vfs.FS, dir string, probe *peer.Client) (uint64, error) {
	if id, ok, err := c.implicitRaftCluster(fsys, dir); err != nil || ok { // cluster_implicit.go
		return id, err
	}
	if len(c.cfg.voters) > 0 {
		return quorumClusterID(c.cfg.voters), nil
	}
	if data, err := vfs.ReadFile(fsys, filepath.Join(dir, "identity.json")); err == nil {
		var id struct {
			ClusterID uint64 `json:"cluster_id"`
		}
		if json.Unmarshal(data, &id) == nil && id.ClusterID != 0 {
			c.learnBootstrap(probe, 2*time.Second)
			return id.ClusterID, nil
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if id := c.learnBootstrap(probe, 2*time.Second); id != 0 {
			return id, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("sluice: no controller among controller.quorum.bootstrap.servers (%s) answered in 60 s", strings.Join(c.cfg.bootstrap, ","))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// learnBootstrap asks every bootstrap server who it is, adds the answers to
// the peer address book and returns the raft cluster id they report (0
// when none answered).
func (c *clusterNode) learnBootstrap(probe *peer.Client, timeout time.Duration) uint64 {
	var cluster uint64
	for _, addr := range c.cfg.bootstrap {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		st, err := probe.PeerStatus(ctx, addr, uint64(c.cfg.nodeID))
		cancel()
		if err != nil || st.Node == 0 {
			continue
		}
		if st.Node != uint64(c.cfg.nodeID) {
			c.bootAddrs[st.Node] = addr
		}
		if st.Cluster != 0 {
			cluster = st.Cluster
		}
	}
	return cluster
}

// joinLoop runs on every node until the active controller has recorded its
// peer address in the metadata (so that every member, observers included,
// can reach every other) and, for an observer, added it to raft's
// configuration as a learner (again after a restart, so that a new address
// is recorded).
func (c *clusterNode) joinLoop(ctx context.Context) {
	req := joinQuorumRequest{ID: c.cfg.nodeID, Address: c.peerAddr, Controller: c.cfg.controller, Fresh: c.gated.Load()}
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var resp struct{}
		err := callController(rctx, c, "join-quorum", c.joinQuorum, req, &resp)
		cancel()
		if err == nil {
			c.gated.Store(false)
			if c.cfg.observer {
				c.logger.Info("joined the metadata quorum as an observer", "peer_address", c.peerAddr)
			}
			c.voterUpdateLoop(ctx) // update_raft_voter.go
			return
		}
		if ctx.Err() == nil {
			level := slog.LevelInfo
			if !c.cfg.observer {
				level = slog.LevelDebug // a voter only records its address; nothing waits for it
			}
			c.logger.Log(ctx, level, "joining the metadata quorum; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

type joinQuorumRequest struct {
	ID         int32  `json:"id"`
	Address    string `json:"address"`
	Controller bool   `json:"controller"`
	// Fresh: the node started with an empty raft log.
	Fresh bool `json:"fresh,omitempty"`
}

// joinQuorum (on the quorum leader) records an observer's address and adds
// it to raft's configuration as a learner unless it is a member already.
func (c *clusterNode) joinQuorum(ctx context.Context, req joinQuorumRequest) (struct{}, error) {
	if req.ID <= 0 {
		return struct{}{}, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: "node id must be at least 1"}
	}
	if _, _, err := net.SplitHostPort(req.Address); err != nil {
		return struct{}{}, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf("bad peer address %q: %v", req.Address, err)}
	}
	if l := c.node.Leader(); l != uint64(c.cfg.nodeID) {
		return struct{}{}, &controller.Error{Code: kerr.NotController.Code, Msg: "not the quorum leader", Leader: l}
	}
	c.peers.SetAddr(uint64(req.ID), req.Address)
	if q, ok := c.store.Image().QuorumNode(req.ID); !ok || q.Address != req.Address || q.Controller != req.Controller {
		rec := metadata.Record{Type: metadata.SetQuorumNode, BrokerID: req.ID, Address: req.Address, Controller: req.Controller}
		if err := c.node.Propose(ctx, metadata.Batch{Records: []metadata.Record{rec}}.Encode()); err != nil {
			return struct{}{}, quorumError(err)
		}
	}
	m, err := c.node.Membership()
	if err != nil {
		return struct{}{}, quorumError(err)
	}
	switch {
	case m.IsVoter(uint64(req.ID)) && req.Fresh:
		return struct{}{}, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf(
			"node %d is a voter but has lost its metadata log; remove it from the voters first (RemoveRaftVoter)", req.ID)}
	case m.IsLearner(uint64(req.ID)) && req.Fresh:
		// An observer that lost its log: the leader must forget how far
		// that log reached before replicating to it again.
		if err := c.resetMember(ctx, uint64(req.ID)); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, nil
	case m.IsVoter(uint64(req.ID)) || m.IsLearner(uint64(req.ID)):
		return struct{}{}, nil
	}
	if err := c.node.ProposeConfChange(ctx, confChange(raftpb.ConfChangeType_ConfChangeAddLearnerNode, uint64(req.ID))); err != nil {
		return struct{}{}, quorumError(err)
	}
	c.logger.Info("added an observer to the metadata quorum", "node_id", req.ID, "peer_address", req.Address)
	return struct{}{}, nil
}

// quorumError maps a quorum error to a controller error.
func quorumError(err error) error {
	var nl *quorum.NotLeaderError
	switch {
	case errors.As(err, &nl):
		return &controller.Error{Code: kerr.NotController.Code, Msg: err.Error(), Leader: nl.Leader}
	case errors.Is(err, quorum.ErrConfChangePending):
		return &controller.Error{Code: kerr.RequestTimedOut.Code, Msg: err.Error()}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &controller.Error{Code: kerr.RequestTimedOut.Code, Msg: "the change was not committed in time: " + err.Error()}
	}
	return err
}

// confChange is one change of raft's configuration.
func confChange(t raftpb.ConfChangeType, ids ...uint64) *raftpb.ConfChangeV2 {
	cc := &raftpb.ConfChangeV2{}
	for _, id := range ids {
		s := &raftpb.ConfChangeSingle{}
		s.Type = &t
		s.NodeId = &id
		cc.Changes = append(cc.Changes, s)
	}
	return cc
}

// addrLoop keeps the peer address book in step with the metadata: every
// quorum member's and broker's peer address.
func (c *clusterNode) addrLoop(ctx context.Context) {
	for {
		ch := c.store.Changed()
		im := c.store.Image()
		for id, q := range im.QuorumNodes {
			if id != c.cfg.nodeID {
				c.peers.SetAddr(uint64(id), q.Address)
			}
		}
		for id, b := range im.Brokers {
			if _, known := im.QuorumNodes[id]; !known && id != c.cfg.nodeID && b.PeerAddress != "" {
				c.peers.SetAddr(uint64(id), b.PeerAddress)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// controllerCandidates are the peer addresses to try when no quorum leader
// is known (an observer before it joined): the configured voters and the
// bootstrap servers.
func (c *clusterNode) controllerCandidates() []string {
	var out []string
	for id, a := range c.cfg.voters {
		if id != uint64(c.cfg.nodeID) {
			out = append(out, a)
		}
	}
	out = append(out, c.cfg.bootstrap...)
	slices.Sort(out)
	return slices.Compact(out)
}

// voterIDs returns the quorum's voters as raft knows them (the configured
// voters if the node cannot say).
func (c *clusterNode) voterIDs() []uint64 {
	if m, err := c.node.Membership(); err == nil && len(m.Voters) > 0 {
		return m.Voters
	}
	ids := make([]uint64, 0, len(c.cfg.voters))
	for id := range c.cfg.voters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// peerKnown reports whether node id's peer address is known.
func (c *clusterNode) peerKnown(id uint64) bool {
	_, ok := c.peers.Addr(id)
	return ok
}

// remoteToControllerError turns a peer call's error into a controller
// error: the other side's answer, or NOT_CONTROLLER when unreachable.
func remoteToControllerError(ctx context.Context, err error, who string) error {
	var re *peer.RemoteError
	if errors.As(err, &re) {
		code, _ := strconv.Atoi(re.Code)
		if code == 0 {
			code = int(kerr.UnknownServerError.Code)
			if re.Code == "unknown-method" {
				code = int(kerr.NotController.Code)
			}
		}
		return &controller.Error{Code: int16(code), Msg: re.Message, Leader: re.Leader}
	}
	if err != nil && ctx.Err() == nil {
		return &controller.Error{Code: kerr.NotController.Code, Msg: fmt.Sprintf("controller %s unreachable: %v", who, err)}
	}
	return err
}

// checkObserverAmnesia refuses to start a node that has no metadata log
// but that the quorum counts as a voter (promoted before, then its disk was
// lost): voting with amnesia could elect a leader missing committed
// entries.
func (c *clusterNode) checkObserverAmnesia() error {
	probe := c.newPeerClient(nil)
	defer probe.Close()
	for _, addr := range c.controllerCandidates() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := probe.PeerStatus(ctx, addr, uint64(c.cfg.nodeID))
		cancel()
		if err == nil && st.Voter {
			return fmt.Errorf("sluice: node %d has no metadata log, but the quorum (asked at %s) counts it as a voter: it lost its log and must not vote "+
				"with amnesia. Remove it from the voters first (RemoveRaftVoter, kafka-metadata-quorum remove-controller or sluice cluster remove-controller), "+
				"then start it again and add it back", c.cfg.nodeID, addr)
		}
	}
	return nil
}

// leaderHint returns the leader's peer address from a NOT_CONTROLLER
// answer ("" if none), and adds it to the address book: a node outside the
// configuration must be able to answer the leader's raft messages.
func (c *clusterNode) leaderHint(err error) string {
	var re *peer.RemoteError
	if errors.As(err, &re) && re.Code == strconv.Itoa(int(kerr.NotController.Code)) && re.LeaderAddress != "" && re.Leader != 0 {
		if re.Leader != uint64(c.cfg.nodeID) {
			c.peers.SetAddr(re.Leader, re.LeaderAddress)
		}
		return re.LeaderAddress
	}
	return ""
}

// gatedReceiver steps raft messages into the quorum node, except while the
// node is gated: an observer that started with an empty raft log takes no
// raft message until the leader has acknowledged its join (and so reset
// what it knew of this node's log).
type gatedReceiver struct{ c *clusterNode }

func (g gatedReceiver) Step(ctx context.Context, m *raftpb.Message) error {
	if g.c.gated.Load() {
		return nil // raft retries once the join is through
	}
	return g.c.node.Step(ctx, m)
}

// bootstrapsSelf reports whether every server in
// controller.quorum.bootstrap.servers is this node's own controller
// listener (as in Kafka's stock single-node server.properties, which a
// single Sluice node runs as it always has).
func bootstrapsSelf(cfg *config.Broker, bootRaw string) bool {
	ctl, err := security.ControllerListeners(cfg)
	if err != nil || len(ctl) == 0 {
		return false
	}
	bindHost, bindPort, err := net.SplitHostPort(ctl[0].Bind)
	if err != nil {
		return false
	}
	self := map[string]bool{"": true, "localhost": true, "127.0.0.1": true, "::1": true, "0.0.0.0": true, "::": true, bindHost: true}
	if h, err := os.Hostname(); err == nil {
		self[h] = true
	}
	found := false
	for _, b := range strings.Split(bootRaw, ",") {
		if b = strings.TrimSpace(b); b == "" {
			continue
		}
		host, port, err := net.SplitHostPort(b)
		if err != nil || port != bindPort || !self[host] {
			return false
		}
		found = true
	}
	return found
}
