package broker

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/compact"
	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/fetchsession"
	"github.com/sluice-broker/sluice/internal/group"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/metrics"
	"github.com/sluice-broker/sluice/internal/producer"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/share"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/txn"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// Broker is the state every handler works with. One Broker serves one data
// directory; it is created by Server.Start and lives until Server.Close.
//
// Handlers are methods on *Broker (see doc.go). Fields are set before the
// first request and never reassigned, so handlers read them without locks.
type Broker struct {
	cfg  *config.Broker // static broker configuration (server.properties + defaults)
	logs *log.Manager   // partition logs of the data directory
	// replicas holds the local partitions: role, epoch, in-sync set and
	// high watermark over each log (partitions.go). Handlers reach data
	// through it only.
	replicas   *replica.Manager
	replQuotas replicationQuotas // replication throttles (replication_throttle.go)
	dyn        dynConfigs        // dynamic broker configs (dynamic_configs.go)
	topics     *topics.Registry  // topic names, ids, partition counts, config overrides
	metrics    *metrics.Metrics  // Prometheus collectors
	logger     *slog.Logger      // the broker's logger; add request context with .With
	dataDir    string            // absolute data directory
	// metricsAddr is the metrics listener's bound address ("" if none),
	// which DescribeConfigs reports as sluice.metrics.listen (health.go).
	metricsAddr string

	nodeID    int32
	clusterID string
	host      string // advertised host of the first listener (requests without a listener)
	port      int32  // advertised port of the first listener

	// listeners holds each listener's advertised address and SASL set-up,
	// by listener name (listeners.go); scram holds the SCRAM credentials
	// (alter_user_scram_credentials.go).
	listeners map[string]*listenerState
	scram     *security.ScramStore
	// authStats counts SASL (re-)authentications (sasl_reauth.go).
	authStats *metrics.AuthCounters

	// authz is the authorizer (nil: none configured, everything allowed);
	// audit limits its denial log lines (authorize.go).
	authz *authz.Authorizer
	audit *authz.Auditor
	// quotas holds the client quotas' sensors (client_quotas.go).
	quotas *quotaState

	// adminMu serialises metadata changes (create/delete topics, partitions,
	// config changes) so they are all-or-nothing with respect to each other.
	// Never taken on the produce/fetch path.
	adminMu sync.Mutex

	// closers run on shutdown, in reverse registration order, before the
	// log manager is closed (see onClose).
	closers []func() error

	// groups is the consumer-group coordinator (group_coordinator.go).
	groups *group.Coordinator

	// shares holds share groups and share-partition state (share_groups.go).
	shares *share.Manager
	// shareCoord is the share coordinator (share_coordinator.go).
	shareCoord *share.Coordinator
	// shareStateRequests counts the share-state requests this broker sent
	// to a share coordinator, its own or another broker's (shareStateCall;
	// read by the tests and benchmarks).
	shareStateRequests atomic.Int64

	// txns is the transaction coordinator (txn_coord_start.go).
	txns *txn.Coordinator

	// features holds a single node's finalized feature levels (features.go;
	// a cluster node reads them from the metadata image).
	features *features.Store

	// cleaner compacts the logs of compacted topics (cleaner.go).
	cleaner *compact.Cleaner

	// cluster is the cluster side of a cluster node (cluster_node.go); nil
	// on a single node.
	cluster *clusterNode
	// snapPrefetch: the metadata snapshot decoded while the logs are
	// entered, for startCluster (server.go).
	snapPrefetch *metadata.Prefetched
	clusterCfg   *clusterConfig          // set from the start on a cluster node
	pubCfgs      map[string]publishedCfg // each topic's resolved log config, for publish (cluster_publish.go)
	purges       topicPurges             // deleted topics' data being removed by publish (cluster_purge.go)

	// --- state owned by the data-path files (produce, fetch sessions,
	// producer ids) goes below this line. ---
	fs            vfs.FS              // the partition logs' filesystem (producer snapshots and ids)
	clock         *testClock          // nil unless sluice.test.clock.control (test_clock.go)
	producers     producerStates      // idempotent-producer state per partition (init_producer_id.go)
	producerIDs   *producer.IDs       // producer id allocator (init_producer_id.go)
	fetchSessions *fetchsession.Cache // KIP-227 fetch sessions (fetch.go)
}

// NodeID returns this broker's node id.
func (b *Broker) NodeID() int32 { return b.nodeID }

// ClusterID returns the cluster id: the metadata's on a cluster node (once
// the first controller has recorded one), else the data directory's.
func (b *Broker) ClusterID() string {
	if im := b.image(); im != nil && im.ClusterID != "" {
		return im.ClusterID
	}
	// A cluster node that has not caught up yet still knows the id from the
	// metadata log it replayed at start: a restarted node must never answer
	// with its directory's own id (clients treat a changed id as another
	// cluster).
	if b.cluster != nil && b.cluster.store != nil {
		if im := b.cluster.store.Image(); im != nil && im.ClusterID != "" {
			return im.ClusterID
		}
	}
	return b.clusterID
}

// Logs returns the log manager.
func (b *Broker) Logs() *log.Manager { return b.logs }

// Topics returns the topic registry.
func (b *Broker) Topics() *topics.Registry { return b.topics }

// Config returns the static broker configuration.
func (b *Broker) Config() *config.Broker { return b.cfg }

// onClose registers fn to run at shutdown (after the network stopped, before
// the logs are closed). Start hooks use it to flush their state.
func (b *Broker) onClose(fn func() error) { b.closers = append(b.closers, fn) }

// topicSetting is a topic config whose broker-level synonym has the same
// name (min.insync.replicas, compression.type): the topic's override, else
// the broker's configured value, else "". Cheap enough for the data path.
func (b *Broker) topicSetting(t *topics.Topic, name string) string {
	if v, ok := t.Configs[name]; ok {
		return v
	}
	v, _ := b.conf().Explicit(name)
	return v
}

// topicByID returns the topic with the given id (Fetch v13+, Metadata v10+).
func (b *Broker) topicByID(id [16]byte) (*topics.Topic, bool) {
	return b.topics.ByID(topics.ID(id))
}
