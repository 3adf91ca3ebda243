package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"math"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/peer"
	"github.com/sluice-broker/sluice/internal/quorum"
	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// A cluster node (controller.quorum.voters set) runs, besides the broker:
// a voter of the metadata quorum (internal/quorum over etcd raft), the
// controller (internal/controller, active on the quorum's leader), and the
// peer listener that carries both between nodes (internal/peer). The broker
// registers with the active controller, heartbeats to it, and makes its
// local state — the topic registry, the partition logs it holds and their
// roles in the partition layer — follow the metadata image (publish).

// maxReplicationFactor bounds a topic's replication factor (besides the
// number of live brokers).
const maxReplicationFactor = 16

// quorumDirName is the metadata quorum's directory inside the data
// directory (not a partition directory: no "-N" suffix).
const quorumDirName = log.QuorumDir

// clusterConfig is the cluster part of the broker configuration.
type clusterConfig struct {
	halt              func(error) // Options.Halt (cluster_halt.go)
	nodeID            int32
	voters            map[uint64]string // node id → controller listener host:port
	peerBind          string
	peerListener      string // the controller listener's name
	peerProtocol      string // its security protocol (PLAINTEXT or SSL)
	sessionTimeout    time.Duration
	heartbeatInterval time.Duration
	tick              time.Duration
	rebalanceInterval time.Duration // 0: auto.leader.rebalance.enable=false
	// process.roles (cluster_roles.go): broker and/or controller; an
	// observer is not among the configured voters (a raft learner until
	// promoted); bootstrap is controller.quorum.bootstrap.servers.
	broker, controller, observer bool
	bootstrap                    []string
	// implicit: no quorum config, sluice.one.voter.quorum on: this node is
	// the only voter of its own quorum (cluster_implicit.go); localOnly:
	// and no controller listener configured, so it serves none.
	implicit, localOnly bool
	// fetch holds the replica fetchers' request limits (replica_fetcher.go).
	fetch fetchLimits
}

// fetchLimits are a follower's Fetch settings, Kafka's replica.fetch.*:
// bytes per partition and per answer (the leader still sends the first
// batch of a partition whatever its size, KIP-74), the leader's wait for
// minBytes, and the request timeout (replica.socket.timeout.ms). answerBytes
// bounds the size of an answer the follower reads: what it asks for plus
// one batch, which came in a produce request of at most
// socket.request.max.bytes.
type fetchLimits struct {
	partitionBytes, responseBytes, minBytes, answerBytes int32
	wait, timeout                                        time.Duration
}

// parseClusterConfig returns nil when the broker is a single node (neither
// controller.quorum.voters nor controller.quorum.bootstrap.servers).
func parseClusterConfig(cfg *config.Broker) (*clusterConfig, error) {
	raw := strings.TrimSpace(cfg.Raw["controller.quorum.voters"])
	bootRaw := strings.TrimSpace(cfg.Raw["controller.quorum.bootstrap.servers"])
	implicit := false
	if raw == "" && (bootRaw == "" || bootstrapsSelf(cfg, bootRaw)) {
		// No quorum, or only this node's own controller listener as the
		// bootstrap server (Kafka's stock one-node server.properties): a
		// single node, as before, or the only voter of an implicit
		// one-voter quorum (cluster_implicit.go).
		if !oneVoterQuorum(cfg) {
			return nil, nil
		}
		if err := checkImplicitRoles(cfg); err != nil { // cluster_implicit.go
			return nil, err
		}
		raw, bootRaw, implicit = implicitVoter(cfg), "", true
	}
	cc := &clusterConfig{nodeID: cfg.NodeID, voters: map[uint64]string{}, implicit: implicit}
	if raw != "" {
		for _, v := range strings.Split(raw, ",") {
			v = strings.TrimSpace(v)
			id, addr, ok := strings.Cut(v, "@")
			n, err := strconv.ParseUint(id, 10, 31)
			if !ok || err != nil || n == 0 {
				return nil, fmt.Errorf("sluice: controller.quorum.voters: %q is not id@host:port with an id of at least 1", v)
			}
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return nil, fmt.Errorf("sluice: controller.quorum.voters: %q: %v", v, err)
			}
			if _, dup := cc.voters[n]; dup {
				return nil, fmt.Errorf("sluice: controller.quorum.voters: voter %d listed twice", n)
			}
			cc.voters[n] = addr
		}
	}
	if cfg.NodeID <= 0 {
		return nil, fmt.Errorf("sluice: node.id must be at least 1 in a cluster (got %d)", cfg.NodeID)
	}
	if err := cc.parseRoles(cfg, raw, bootRaw); err != nil { // cluster_roles.go
		return nil, err
	}
	self := cc.voters[uint64(cfg.NodeID)]
	cc.peerBind = self
	cc.peerListener, cc.peerProtocol = "CONTROLLER", security.Plaintext
	ctl, err := security.ControllerListeners(cfg)
	if err != nil {
		return nil, err
	}
	name := ""
	cc.localOnly = implicit && len(ctl) == 0
	if len(ctl) > 0 {
		cc.peerBind, name = ctl[0].Bind, ctl[0].Name
	} else {
		// A node without the listener (a broker-only node's file, as
		// Kafka's): the first name still says how to reach the quorum.
		v, _ := cfg.Value("controller.listener.names")
		first, _, _ := strings.Cut(v, ",")
		name = strings.ToUpper(strings.TrimSpace(first))
	}
	if name != "" {
		cc.peerListener = name
		pmRaw, _ := cfg.Value("listener.security.protocol.map")
		pm, err := config.ParseProtocolMap(pmRaw)
		if err == nil {
			if p, ok := pm[name]; ok {
				cc.peerProtocol = p
			}
		}
	}
	if cc.peerBind == "" {
		if !cc.broker {
			return nil, fmt.Errorf("sluice: a controller-only node that is not among controller.quorum.voters needs a controller listener (listeners=CONTROLLER://host:port, controller.listener.names=CONTROLLER)")
		}
		cc.peerBind = observerBind
	}
	ms := func(name string, def int) time.Duration {
		n, err := strconv.Atoi(strings.TrimSpace(cfg.Raw[name]))
		if err != nil || n <= 0 {
			n = def
		}
		return time.Duration(n) * time.Millisecond
	}
	cc.sessionTimeout = ms("broker.session.timeout.ms", 9000)
	cc.heartbeatInterval = ms("broker.heartbeat.interval.ms", 2000)
	cc.tick = ms("controller.quorum.election.timeout.ms", 1000) / 10
	if !strings.EqualFold(strings.TrimSpace(cfg.Raw["auto.leader.rebalance.enable"]), "false") {
		cc.rebalanceInterval = ms("leader.imbalance.check.interval.seconds", 300) * 1000
	}
	cc.fetch = parseFetchLimits(cfg)
	return cc, nil
}

// parseFetchLimits reads the replica.fetch.* settings (as set, else Kafka's
// defaults from the config table, which also validated them and Kafka's
// relations between them). Values Kafka takes without a check and no
// fetcher can use (a negative wait or size, a timeout of 0 or less) are
// read as the nearest sensible one.
func parseFetchLimits(cfg *config.Broker) fetchLimits {
	f := fetchLimits{
		partitionBytes: int32(max(cfg.Int64("replica.fetch.max.bytes"), 0)),
		responseBytes:  int32(max(cfg.Int64("replica.fetch.response.max.bytes"), 0)),
		minBytes:       int32(max(cfg.Int64("replica.fetch.min.bytes"), 0)),
		wait:           time.Duration(max(cfg.Int64("replica.fetch.wait.max.ms"), 0)) * time.Millisecond,
		timeout:        time.Duration(cfg.Int64("replica.socket.timeout.ms")) * time.Millisecond,
	}
	if f.timeout <= 0 {
		f.timeout = 30 * time.Second // Kafka's default
	}
	batch := max(cfg.Int64("socket.request.max.bytes"), 1)
	f.answerBytes = int32(min(int64(f.responseBytes)+batch+1<<20, math.MaxInt32))
	return f
}

// quorumClusterID is the raft cluster id recorded in the quorum directory:
// derived from the initial voter set, so that every node of one cluster
// computes the same and a directory of another cluster is refused.
func quorumClusterID(voters map[uint64]string) uint64 {
	ids := make([]uint64, 0, len(voters))
	for id := range voters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	h := fnv.New64a()
	for _, id := range ids {
		fmt.Fprintf(h, "%d@%s,", id, voters[id])
	}
	if s := h.Sum64(); s != 0 {
		return s
	}
	return 1
}

// clusterNode is the cluster side of a broker.
type clusterNode struct {
	// bootRecords are committed with a new cluster's id (cluster_peer_scram.go).
	bootRecords []metadata.Record
	b           *Broker
	cfg         *clusterConfig
	logger      *slog.Logger

	store *metadata.Store
	node  *quorum.Node
	ctrl  *controller.Controller
	peers *peer.Client
	srv   *peer.Server
	ln    net.Listener
	sec   peerSecurity // the controller listener's TLS and SASL (cluster_peer_security.go)

	incarnation string
	peerAddr    string                         // where other nodes reach this node's peer listener
	bootAddrs   map[uint64]string              // bootstrap servers by the node id they answered with
	raftCluster uint64                         // the raft cluster id in the quorum directory
	gated       atomic.Bool                    // an observer with an empty log before its join (cluster_roles.go)
	epoch       atomic.Int64                   // broker epoch from the last registration
	fenced      atomic.Bool                    // as the controller last answered
	lease       brokerLease                    // the session with the controller (cluster_lease.go)
	published   atomic.Uint64                  // offset of the image the local state follows
	pubImage    atomic.Pointer[metadata.Image] // that image (what clients are told)
	// caughtUp is the offset of this run's registration: images before it
	// are prefixes of what the local state may already hold (replayed at
	// start) and are never published. After a first registration that
	// kept this broker's leaderships (controller.RegisterResponse), the
	// offset of its unfencing instead: until then, keptAt holds the
	// registration's offset, which its heartbeats say it has.
	caughtUp atomic.Uint64
	keptAt   atomic.Uint64
	// wakePublish nudges the publish loop when caughtUp is set (the image
	// may already be there, with no change to come).
	wakePublish chan struct{}
	pubMu       sync.Mutex
	pubChanged  chan struct{}

	// fetchSeen, when set (tests), sees each replica Fetch and its answer
	// before the answer is appended.
	fetchSeen atomic.Pointer[func(*kmsg.FetchRequest, *kmsg.FetchResponse)]

	closing   atomic.Bool // stop has begun: a failing metadata log no longer halts (cluster_halt.go)
	creating  atomic.Bool // an internal topic is being created
	createMu  sync.Mutex  // an implicit voter's internal topic creations, one at a time (cluster_implicit.go)
	voterTold atomic.Bool // this voter's endpoints are in the metadata (update_raft_voter.go)

	leases txnLeases    // admissions granted to other brokers' transactional appends (cluster_txn.go)
	fetch  fetchers     // replica fetchers by leader (replica_fetcher.go)
	ib     *interBroker // the inter-broker listener's client side (interbroker.go)

	cancel       context.CancelFunc
	hbCancel     context.CancelFunc // the registration and heartbeat loop's (run)
	shutdownOnce sync.Once
	hbDone       chan struct{}
	wg           sync.WaitGroup
}

// startCluster starts the quorum voter, the controller, the peer listener
// and the broker's registration, heartbeats and publishing. Called by
// Server.Start after the logs are open and the services started.
func (b *Broker) startCluster(cc *clusterConfig, fsys vfs.FS) (err error) {
	c := &clusterNode{b: b, cfg: cc, logger: b.logger.With("component", "cluster"), pubChanged: make(chan struct{}),
		wakePublish: make(chan struct{}, 1)}
	var inc [8]byte
	rand.Read(inc[:])
	c.incarnation = hex.EncodeToString(inc[:])
	c.store = metadata.NewStore()
	if b.snapPrefetch != nil {
		c.store.UsePrefetched(b.snapPrefetch) // server.go
		b.snapPrefetch = nil
	}
	c.store.OnSkip = func(off uint64, why string) {
		c.logger.Debug("metadata record skipped", "offset", off, "why", why)
	}
	c.store.OnSkipped = func(n int, first, last uint64, why string) {
		c.logger.Warn("metadata records skipped", "count", n, "first_offset", first, "last_offset", last, "first_why", why)
	}
	dir := filepath.Join(b.dataDir, quorumDirName)
	// A data directory that a single-node broker has used: its topics are
	// imported by the only voter of a new cluster, refused elsewhere (the
	// cluster's metadata would not know them, and so delete them).
	upgrade, err := c.planUpgrade(fsys, dir) // cluster_upgrade.go
	if err != nil {
		return err
	}
	if cc.broker {
		if c.ib, err = newInterBroker(b, []string{cc.peerListener}); err != nil && !cc.implicit {
			return err
		} else if err != nil {
			// A lone voter has no replicas to fetch: its inter-broker
			// settings matter once it grows (cluster_implicit.go).
			c.ib = nil
		}
	}
	bootScram, err := readBootstrapScram(fsys, b.dataDir) // cluster_peer_scram.go
	if err != nil {
		return err
	}
	if c.sec, err = b.newPeerSecurity(cc, c.store, bootScram); err != nil { // cluster_peer_security.go
		return err
	}
	c.bootRecords = bootstrapScramRecords(bootScram)
	if _, statErr := fsys.Stat(dir); statErr != nil && cc.observer {
		// An observer with no log is harmless, unless the quorum counts
		// it as a voter (it was promoted, then lost its disk).
		if err := c.checkObserverAmnesia(); err != nil {
			return err
		}
	} else if statErr != nil {
		// An empty quorum directory: a new cluster, or a node that lost
		// its metadata log. Voting with amnesia could elect a leader that
		// misses committed records, so a node whose peers already hold a
		// log refuses to start (unless told to take that risk).
		if err := c.checkAmnesia(); err != nil {
			return err
		}
	}
	c.peers = c.newPeerClient(maps.Clone(cc.voters))
	c.bootAddrs = map[uint64]string{}
	if c.raftCluster, err = c.raftClusterID(fsys, dir, c.peers); err != nil {
		c.peers.Close()
		return err
	}
	for id, a := range c.bootAddrs {
		c.peers.SetAddr(id, a)
	}
	c.ln, err = net.Listen("tcp", cc.peerBind)
	if err != nil {
		c.peers.Close()
		return fmt.Errorf("sluice: controller listener: %w", err)
	}
	c.peerAddr = c.peerAdvertise()
	if cc.implicit {
		cc.voters[uint64(cc.nodeID)] = c.peerAddr
		c.peers.SetAddr(uint64(cc.nodeID), c.peerAddr)
	}
	c.ln = c.sec.listen(c.ln)
	if cc.localOnly {
		// Nothing needs to reach a lone voter, and nobody should: its
		// port only gave it an address (cluster_implicit.go).
		c.ln.Close()
	}
	var peersIDs []uint64
	if !cc.observer {
		for id := range cc.voters {
			peersIDs = append(peersIDs, id)
		}
		slices.Sort(peersIDs)
	}
	c.node, err = quorum.Start(quorum.Config{
		ID: uint64(cc.nodeID), ClusterID: c.raftCluster, Peers: peersIDs, Observer: cc.observer,
		FS: fsys, Dir: dir, Transport: c.peers, StateMachine: c.store,
		ElectionTick: 10, HeartbeatTick: 1, TickInterval: cc.tick,
		Logger: raftLogger{c.logger},
	})
	if err != nil {
		c.ln.Close()
		c.peers.Close()
		return fmt.Errorf("sluice: metadata quorum: %w", err)
	}
	c.ctrl = controller.New(controller.Config{
		Quorum: c.node, Store: c.store, Logger: c.logger.With("component", "controller"),
		SessionTimeout: cc.sessionTimeout, MaxReplicationFactor: maxReplicationFactor,
		RebalanceInterval: cc.rebalanceInterval, UncleanLeaderElection: uncleanDefault(b.cfg),
		MinInsyncReplicas: minISRDefault(b.cfg), // elr.go
		BootstrapRecords:  c.bootRecords,
	})
	// An observer whose log is empty takes no raft message until its join
	// is acknowledged (cluster_roles.go, gatedReceiver).
	c.gated.Store(cc.observer && c.node.StartedEmpty())
	c.srv = peer.NewServer(gatedReceiver{c}, c.logger)
	c.srv.SetStatus(func(asking uint64) peer.Status {
		st := peer.Status{Node: uint64(cc.nodeID), Term: c.node.Term(), Cluster: c.raftCluster, Incarnation: c.incarnation}
		if s, err := c.node.Status(); err == nil {
			st.Commit = s.HardState.GetCommit()
		}
		_, st.Known = c.store.Image().Broker(int32(asking))
		if m, err := c.node.Membership(); err == nil {
			st.Voter = m.IsVoter(asking)
		}
		return st
	})
	c.srv.ErrorFor = func(err error) *peer.RemoteError {
		var ce *controller.Error
		if errors.As(err, &ce) {
			re := &peer.RemoteError{Code: strconv.Itoa(int(ce.Code)), Message: ce.Error(), Leader: ce.Leader}
			if ce.Leader == uint64(cc.nodeID) {
				re.LeaderAddress = c.peerAddr
			} else if ce.Leader != 0 {
				re.LeaderAddress, _ = c.peers.Addr(ce.Leader)
			}
			return re
		}
		return &peer.RemoteError{Code: strconv.Itoa(int(kerr.UnknownServerError.Code)), Message: err.Error()}
	}
	handle(c.srv, "register", c.ctrl.Register)
	handle(c.srv, "heartbeat", c.heartbeatFromPeer) // cluster_liveness.go
	c.startLiveness()
	handle(c.srv, "create-topic", c.ctrl.CreateTopic)
	handle(c.srv, "delete-topic", c.ctrl.DeleteTopic)
	handle(c.srv, "create-partitions", c.ctrl.CreatePartitions)
	handle(c.srv, "create-topics", c.ctrl.CreateTopics) // cluster_admin_batch.go
	handle(c.srv, "delete-topics", c.ctrl.DeleteTopics)
	handle(c.srv, "create-partitions-batch", c.ctrl.CreatePartitionsBatch)
	handle(c.srv, "elect-leaders", c.ctrl.ElectLeaders)
	handle(c.srv, "topic-configs", c.ctrl.SetTopicConfigs)
	handle(c.srv, "producer-ids", c.ctrl.AllocateProducerIDs)
	c.registerTxnHandlers()
	c.registerSecurityHandlers()     // cluster_security.go
	c.registerBrokerConfigHandlers() // dynamic_configs.go
	c.registerReplicationHandlers()
	handle(c.srv, "describe-quorum", c.describeQuorumLocal)
	handle(c.srv, "write-txn-marker", c.writeMarkerLocal)
	handle(c.srv, "share-partition", c.sharePartitionLocal)
	handle(c.srv, "share-state", c.shareStateLocal) // share_coordinator.go
	handle(c.srv, "dead-letter", c.deadLetterLocal) // share_dead_letters.go
	handle(c.srv, "alter-partition", c.ctrl.AlterPartition)
	handle(c.srv, "elect-leader", c.ctrl.ElectLeader)
	handle(c.srv, "join-quorum", c.joinQuorum)
	c.registerVoterHandlers() // cluster_voters.go
	handle(c.srv, "update-features", c.ctrl.UpdateFeatures)

	if upgrade {
		if err := c.importSingleNode(fsys); err != nil {
			c.node.Stop()
			c.ln.Close()
			c.peers.Close()
			return err
		}
	}
	c.loadHWCheckpoint(fsys)
	// Set before the goroutines below start: they (the publisher's
	// listeners among them) read b.cluster.
	b.cluster = c
	if cc.broker {
		b.replicas.SetLeaseCheck(c.sessionLapsed)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.hwCheckpointLoop(ctx, fsys) }()
	c.wg.Add(3)
	go func() { defer c.wg.Done(); c.srv.Serve(c.ln) }()
	go func() { defer c.wg.Done(); c.ctrl.Run(ctx) }()
	go func() { defer c.wg.Done(); c.addrLoop(ctx) }()
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.joinLoop(ctx) }()
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.importScramFile(ctx, fsys) }() // cluster_scram.go
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.watchQuorum(ctx) }()
	hbCtx, hbCancel := context.WithCancel(ctx)
	c.hbCancel, c.hbDone = hbCancel, make(chan struct{})
	if cc.broker {
		c.wg.Add(3)
		go func() { defer c.wg.Done(); c.publishLoop(ctx) }()
		go func() { defer c.wg.Done(); c.isrLoop(ctx) }()
		go func() { defer c.wg.Done(); defer close(c.hbDone); c.run(hbCtx) }()
	} else {
		close(c.hbDone) // a controller-only node never registers as a broker
	}
	b.onClose(c.stop)
	if cc.implicit {
		if err := c.awaitImplicitReady(implicitReadyTimeout); err != nil { // cluster_implicit.go
			return err
		}
	}
	ctlListener, voters, peerAddr := c.ln.Addr().String(), any(cc.voters), c.peerAddr
	if cc.localOnly {
		ctlListener = "none (a lone voter serves no controller listener)"
		voters, peerAddr = fmt.Sprintf("%d (this node alone)", cc.nodeID), "none"
	}
	c.logger.Info("cluster node started", "node_id", cc.nodeID, "controller_listener", ctlListener,
		"voters", voters, "process_roles", cc.rolesString(), "observer", cc.observer, "peer_address", peerAddr)
	return nil
}

func handle[Req, Resp any](s *peer.Server, method string, fn func(context.Context, Req) (Resp, error)) {
	s.Handle(method, func(ctx context.Context, raw json.RawMessage) (any, error) {
		var req Req
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: err.Error()}
		}
		return fn(ctx, req)
	})
}

// stop leaves the cluster: a last heartbeat asks to be fenced (so that
// leadership moves at once rather than after the session timeout), then the
// loops, the peer listener and the quorum voter stop.
func (c *clusterNode) stop() error {
	c.closing.Store(true)
	c.controlledShutdown()
	c.cancel()
	c.srv.Close()
	c.wg.Wait()
	c.b.purges.wait()
	c.stopFetchers()
	c.peers.Close()

	return c.node.Stop()
}

// controlledShutdown fences this broker (its leaderships move to other
// in-sync replicas at once) and hands the controller's role over; it runs
// once, while the broker still serves.
func (c *clusterNode) controlledShutdown() {
	c.shutdownOnce.Do(func() {
		// No heartbeat may follow the one asking to be fenced (it would
		// unfence this broker again).
		c.hbCancel()
		<-c.hbDone
		if c.quorumStopped() {
			return // halted (cluster_halt.go): nothing to hand over
		}
		if ep := c.epoch.Load(); ep > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			var resp controller.HeartbeatResponse
			err := callController(ctx, c, "heartbeat", c.ctrl.Heartbeat,
				controller.HeartbeatRequest{BrokerID: c.cfg.nodeID, Epoch: ep, MetadataOffset: c.store.Image().Offset, WantFence: true}, &resp)
			cancel()
			if err == nil {
				// Let this node learn that its leaderships moved, so
				// waiting acks=all produces are answered now.
				wctx, wcancel := context.WithTimeout(context.Background(), time.Second)
				_ = c.waitPublished(wctx, c.store.Image().Offset)
				wcancel()
			}
		}
		c.resign()
	})
}

// notReady says why a cluster node is not ready (/readyz), "" when it is:
// registered with the controller, unfenced, its metadata caught up with its
// registration, every partition it leads with its full in-sync set, and it
// in the in-sync set of every partition it follows (cluster_readiness.go).
func (c *clusterNode) notReady() string {
	if !c.cfg.broker {
		if c.node.Leader() == 0 {
			return "no metadata quorum leader known"
		}
		return ""
	}
	switch {
	case c.epoch.Load() == 0:
		return "not registered with the controller yet"
	case c.fenced.Load():
		return "fenced by the controller (not caught up, or shutting down)"
	case c.published.Load() < c.caughtUp.Load() || c.caughtUp.Load() == 0:
		return "metadata not caught up with this broker's registration"
	}
	if n := c.b.replicationCounts().UnderReplicated; n > 0 {
		return fmt.Sprintf("%d partition(s) led here have fewer in-sync replicas than replicas", n)
	}
	return c.followerNotReady() // cluster_readiness.go
}

// checkAmnesia refuses to start a node with an empty quorum directory
// when another voter's metadata shows that this node was a member before
// (it registered, so it had a log, and lost it). A voter that never joined
// (a new cluster, or one started late) starts normally. Best effort: with
// every other voter unreachable nothing can be checked.
func (c *clusterNode) checkAmnesia() error {
	probe := c.newPeerClient(c.cfg.voters)
	defer probe.Close()
	for id, addr := range c.cfg.voters {
		if id == uint64(c.cfg.nodeID) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := probe.PeerStatus(ctx, addr, uint64(c.cfg.nodeID))
		cancel()
		if err == nil && !st.Known && st.Cluster != 0 && st.Commit > 0 && !st.Voter {
			// A running quorum that does not count this node as a voter
			// (its voters changed since it started, or this node was never
			// one of them): bootstrapping would start a quorum of its own.
			return fmt.Errorf("sluice: node %d is in controller.quorum.voters, but the running quorum (asked at voter %d, %s) does not count it as a voter: "+
				"add a node to a running cluster by starting it with controller.quorum.bootstrap.servers instead of controller.quorum.voters, "+
				"then promote it (sluice cluster add-controller; docs/cluster.md)", c.cfg.nodeID, id, addr)
		}
		if err != nil || !st.Known {
			continue // unreachable, or this node never joined (a new cluster, a voter starting late)
		}
		return fmt.Errorf("sluice: %s has no metadata log, but voter %d knows this node as a member (its log is committed up to %d): this node lost its "+
			"metadata quorum log and must not vote with amnesia (etcd raft also stops a voter whose log is behind what it acknowledged). "+
			"Restore its data directory from a backup, or replace it: remove it from the voters (sluice cluster remove-controller), "+
			"start it with controller.quorum.bootstrap.servers instead of controller.quorum.voters, and add it back "+
			"(sluice cluster add-controller; docs/operations.md, lost node)",
			filepath.Join(c.b.dataDir, quorumDirName), id, st.Commit)
	}
	return nil
}

// resign hands the quorum's leadership (and so the controller's role) to
// another voter before a clean shutdown, as Kafka's controller resigns, so
// that clients see a new controller at once rather than after an election
// timeout.
func (c *clusterNode) resign() {
	if c.node.Leader() != uint64(c.cfg.nodeID) {
		return
	}
	im := c.store.Image()
	for _, id := range c.voterIDs() {
		if id == uint64(c.cfg.nodeID) {
			continue
		}
		if _, registered := im.Broker(int32(id)); registered && !im.IsLive(int32(id)) {
			continue // a fenced broker; a controller-only voter is never registered
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := c.node.TransferLeadership(ctx, id)
		cancel()
		if err == nil {
			c.logger.Info("handed the controller's role over before shutting down", "to", c.node.Leader())
			return
		}
	}
}

// callController sends a request to the active controller: the local one
// when this node leads the quorum, else the leader over the peer listener;
// NOT_CONTROLLER and unreachable leaders are retried until ctx ends.
func callController[Req, Resp any](ctx context.Context, c *clusterNode, method string, local func(context.Context, Req) (Resp, error), req Req, resp *Resp) error {
	var last error
	var tries uint
	var hint string // the leader's address a follower told of
	for {
		leader := c.node.Leader()
		var err error
		switch {
		case leader == 0 || !c.peerKnown(leader) && leader != uint64(c.cfg.nodeID):
			err = &controller.Error{Code: kerr.NotController.Code, Msg: "no controller elected yet"}
			if cands := c.controllerCandidates(); len(cands) > 0 {
				// An observer that has not joined yet knows no leader:
				// ask the voters it was configured with; a follower
				// among them answers NOT_CONTROLLER.
				addr := cands[int(tries)%len(cands)]
				if hint != "" {
					addr, hint = hint, ""
				}
				err = c.peers.Call(ctx, addr, method, req, resp)
				hint = c.leaderHint(err)
				err = remoteToControllerError(ctx, err, addr)
			}
			tries++
		case leader == uint64(c.cfg.nodeID):
			*resp, err = local(ctx, req)
		default:
			addr, _ := c.peers.Addr(leader)
			err = c.peers.Call(ctx, addr, method, req, resp)
			if unknownBatchMethod(method, err) { // cluster_admin_batch.go
				return errNoBatchMethod
			}
			err = remoteToControllerError(ctx, err, fmt.Sprintf("%d", leader))
		}
		var ce *controller.Error
		if err == nil || !errors.As(err, &ce) || ce.Code != kerr.NotController.Code {
			return err
		}
		last = err
		select {
		case <-ctx.Done():
			if last != nil {
				return last
			}
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// run registers the broker, then heartbeats and publishes images until ctx
// ends; a STALE_BROKER_EPOCH answer registers it again.
func (c *clusterNode) run(ctx context.Context) {
	for ctx.Err() == nil {
		if c.epoch.Load() == 0 {
			if !c.register(ctx) {
				continue
			}
			// The first heartbeat says the broker has caught up (and
			// gets it unfenced) as soon as it has; a broker that kept
			// its leaderships has, with its registration.
			if c.keptAt.Load() == 0 {
				wctx, cancel := context.WithTimeout(ctx, c.cfg.heartbeatInterval)
				_ = c.waitPublished(wctx, uint64(c.epoch.Load()))
				cancel()
			}
		}
		c.heartbeat(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(c.cfg.heartbeatInterval):
		}
	}
}

func (c *clusterNode) endpoints() []metadata.Endpoint {
	names := make([]string, 0, len(c.b.listeners))
	for n := range c.b.listeners {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]metadata.Endpoint, 0, len(names))
	for _, n := range names {
		l := c.b.listeners[n]
		out = append(out, metadata.Endpoint{Listener: n, Host: l.host, Port: l.port, Protocol: l.protocol})
	}
	return out
}

func (c *clusterNode) register(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sent := time.Now()
	reg := metadata.BrokerRegistration{ID: c.cfg.nodeID, Incarnation: c.incarnation, Endpoints: c.endpoints(),
		Rack: c.b.cfg.Raw["broker.rack"], PeerAddress: c.peerAddr}
	var resp controller.RegisterResponse
	// Nothing is published before the first registration's answer: its
	// controller may leave this broker's sole leaderships to its unfencing.
	first := c.caughtUp.Load() == 0
	err := callController(rctx, c, "register", c.ctrl.Register,
		controller.RegisterRequest{Broker: reg, PreviousBrokerEpoch: c.previousBrokerEpoch(), Local: c.ctrl != nil, // elr.go
			KeepLeaderships: first}, &resp)
	if err != nil {
		if ctx.Err() == nil {
			c.logger.Info("broker registration not accepted yet; retrying", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
		return false
	}
	c.fenced.Store(true)
	c.lease.renewAt(sent, c.cfg.sessionTimeout, resp.Offset)
	c.epoch.Store(resp.Epoch)
	c.b.logs.SetBrokerEpoch(resp.Epoch) // recorded by a clean shutdown
	switch {
	case resp.KeptLeaderships:
		// The registration's image may name this broker, fenced, as
		// the leader of partitions at the leader epochs of its last
		// run: none is published before the unfencing renews them.
		c.keptAt.Store(resp.Offset)
	case c.caughtUp.Load() == 0:
		// (A registration that did not keep them took them away: an
		// earlier one's kept leaderships are gone from this image.)
		c.keptAt.Store(0)
		c.caughtUp.Store(resp.Offset)
		select {
		case c.wakePublish <- struct{}{}:
		default:
		}
	}
	c.logger.Info("broker registered with the controller", "broker_epoch", resp.Epoch, "controller", c.node.Leader())
	return true
}

func (c *clusterNode) heartbeat(ctx context.Context) {
	hctx, cancel := context.WithTimeout(ctx, c.cfg.heartbeatInterval+time.Second)
	defer cancel()
	var resp controller.HeartbeatResponse
	sent := time.Now()
	has := c.published.Load()
	kept := c.keptAt.Load()
	if kept > 0 && c.caughtUp.Load() == 0 {
		has = kept // the shared store's image at the registration (register)
	}
	err := callController(hctx, c, "heartbeat", c.ctrl.Heartbeat,
		controller.HeartbeatRequest{BrokerID: c.cfg.nodeID, Epoch: c.epoch.Load(), MetadataOffset: has}, &resp)
	var ce *controller.Error
	switch {
	case errors.As(err, &ce) && ce.Code == kerr.StaleBrokerEpoch.Code:
		c.logger.Warn("the controller no longer knows this broker's epoch; registering again", "err", err)
		c.epoch.Store(0)
	case err != nil:
		if ctx.Err() == nil {
			c.logger.Debug("heartbeat failed", "err", err)
		}
	default:
		c.lease.renewAt(sent, c.cfg.sessionTimeout, resp.MetadataOffset)
		if c.fenced.Swap(resp.Fenced) != resp.Fenced {
			c.logger.Info("broker fencing changed", "fenced", resp.Fenced)
		}
		if kept > 0 && !resp.Fenced && c.caughtUp.Load() == 0 {
			// Unfenced, with the kept leaderships renewed at
			// resp.MetadataOffset: publish from there.
			c.caughtUp.Store(max(resp.MetadataOffset, kept))
			select {
			case c.wakePublish <- struct{}{}:
			default:
			}
		}
	}
}

// publishLoop makes the local state follow every new image.
func (c *clusterNode) publishLoop(ctx context.Context) {
	for {
		ch := c.store.Changed()
		im := c.store.Image()
		if cu := c.caughtUp.Load(); cu > 0 && im.Offset >= cu && im.Offset > c.published.Load() {
			if c.published.Load() == 0 {
				c.logger.Info("caught up with the cluster's metadata", "cluster_id", im.ClusterID, "metadata_offset", im.Offset)
			}
			c.b.publish(im)
			c.updateFetchers(im)
			c.pubImage.Store(im)
			c.pubMu.Lock()
			c.published.Store(im.Offset)
			close(c.pubChanged)
			c.pubChanged = make(chan struct{})
			c.pubMu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		case <-c.wakePublish:
		}
	}
}

// waitPublished waits until the local state follows the image at offset.
func (c *clusterNode) waitPublished(ctx context.Context, offset uint64) error {
	for {
		c.pubMu.Lock()
		ch := c.pubChanged
		c.pubMu.Unlock()
		if c.published.Load() >= offset {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// raftLogger sends etcd raft's log to slog (debug, warnings and errors).
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)                 {}
func (r raftLogger) Debugf(format string, v ...any) {}
func (r raftLogger) Info(v ...any)                  {}
func (r raftLogger) Infof(format string, v ...any) {
	if strings.Contains(format, "became leader") || strings.Contains(format, "elected leader") {
		r.l.Info("quorum: " + fmt.Sprintf(format, v...))
	}
}
func (r raftLogger) Warning(v ...any) { r.l.Warn("quorum: " + fmt.Sprint(v...)) }
func (r raftLogger) Warningf(format string, v ...any) {
	r.l.Warn("quorum: " + fmt.Sprintf(format, v...))
}
func (r raftLogger) Error(v ...any) { r.l.Error("quorum: " + fmt.Sprint(v...)) }
func (r raftLogger) Errorf(format string, v ...any) {
	r.l.Error("quorum: " + fmt.Sprintf(format, v...))
}
func (r raftLogger) Fatal(v ...any) {
	r.l.Error("quorum: " + fmt.Sprint(v...))
	panic(fmt.Sprint(v...))
}
func (r raftLogger) Fatalf(format string, v ...any) {
	r.l.Error("quorum: " + fmt.Sprintf(format, v...))
	panic(fmt.Sprintf(format, v...))
}
func (r raftLogger) Panic(v ...any)                 { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(format string, v ...any) { panic(fmt.Sprintf(format, v...)) }

// startupClusterID is the cluster id for the start-up log line: a cluster
// node learns it from the metadata quorum later (logged then).
func (b *Broker) startupClusterID() string {
	if b.clusterCfg != nil {
		if id := b.ClusterID(); b.cluster != nil && b.image().ClusterID != "" {
			return id
		}
		return "(from the metadata quorum, once caught up)"
	}
	return b.clusterID
}

// splitHostPort splits host:port with a port in 1-65535.
func splitHostPort(addr string) (string, uint16, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return "", 0, fmt.Errorf("bad port in %q", addr)
	}
	return host, uint16(p), nil
}
