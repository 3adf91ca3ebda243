package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/metrics"
	"github.com/sluice-broker/sluice/internal/quorum"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/vfs"
	"github.com/sluice-broker/sluice/internal/wire"
)

// Options configure a Server.
type Options struct {
	// Listen is host:port of a single PLAINTEXT listener. "localhost" binds
	// both 127.0.0.1 and ::1 (on the same port); an empty host binds every
	// interface. When Listen and Listeners are empty, the listeners come
	// from Config (listeners, advertised.listeners,
	// listener.security.protocol.map; default PLAINTEXT://localhost:9092).
	Listen string
	// Listeners, when set, are served instead of Listen: each with its
	// security protocol, TLS and SASL set-up read from Config's ssl.* and
	// sasl.* configs (listener.name.<name>. prefixes first).
	Listeners []security.Listener
	// DataDir holds the logs and metadata. Default ./data.
	DataDir string
	// Advertise is the host:port given to clients in Metadata for the
	// first listener (Listen's). Default: the listen address (with the
	// actual port when the port is 0).
	Advertise string
	// MetricsListen is the host:port of the Prometheus /metrics endpoint; ""
	// disables it.
	MetricsListen string
	// MetricsOptional makes a MetricsListen address that cannot be bound a
	// warning instead of a failed start (the command's default address).
	MetricsOptional bool
	// Config is the broker configuration; nil means Kafka's defaults.
	Config *config.Broker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// FS is the filesystem for the partition logs; nil means the OS.
	FS vfs.FS
	// Version is reported in the startup log line.
	Version string
	// ShutdownTimeout bounds how long Close waits for in-flight requests.
	// Default 30s.
	ShutdownTimeout time.Duration
	// Halt is called when a fatal storage error leaves a cluster node
	// unable to go on (its metadata log cannot be written). nil: log it
	// and exit the process with status 1, as Kafka halts, so that its
	// supervisor restarts it (cluster_halt.go).
	Halt func(error)
}

// Server is an embeddable Sluice broker: Start it, point clients at Addr,
// Close it.
type Server struct {
	opts    Options
	broker  *Broker
	wire    *wire.Server
	lns     []net.Listener
	lnsOf   []*wire.Listener // the listener each of lns serves
	metrics *http.Server
	mln     net.Listener
	mux     *http.ServeMux // the metrics listener's (health.go)
	health  health

	lock      *os.File // the data directory's .lock (dirlock.go)
	closeOnce sync.Once
	closeErr  error
	serveWG   sync.WaitGroup
}

// NewServer returns a Server that Start will run with opts.
func NewServer(opts Options) *Server {
	return &Server{opts: opts}
}

// Start opens the data directory, reconciles metadata with the logs, binds
// the listeners and starts serving. On error everything opened is closed.
func (s *Server) Start() (err error) {
	o := &s.opts
	if o.DataDir == "" {
		o.DataDir = "data"
	}
	if o.Config == nil {
		o.Config = config.DefaultBroker()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.FS == nil {
		o.FS = vfs.OS()
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return fmt.Errorf("sluice: data dir: %w", err)
	}

	b := &Broker{
		cfg:     o.Config,
		logger:  o.Logger,
		dataDir: dataDir,
		nodeID:  o.Config.NodeID,
		// The partition layer exists before any log is assigned to it.
		replicas: replica.NewManager(o.Config.NodeID),
		metrics:  metrics.New(nil),
		fs:       o.FS,
		clock:    newTestClock(o.Config), // test_clock.go
	}
	s.broker = b
	if b.clusterCfg, err = parseClusterConfig(o.Config); err != nil {
		return err
	}
	if b.clusterCfg != nil {
		b.clusterCfg.halt = o.Halt
	}
	defer func() {
		if err != nil {
			s.abort()
		}
	}()

	// Security set-up (key stores, JAAS users) and binding come first: a
	// bad certificate or a taken port fails before the data directory is
	// touched. Connections wait in the backlog until the broker is ready.
	if b.clusterCfg == nil || b.clusterCfg.broker { // a controller-only node serves no clients
		if err = s.bindListeners(b); err != nil {
			return err
		}
	}
	if err = s.bindMetrics(b); err != nil { // health.go
		return err
	}
	s.installTestClock(b) // test_clock.go

	if s.lock, err = lockDataDir(dataDir); err != nil {
		return err
	}
	if err = s.installFsyncShadow(b, dataDir); err != nil { // test_fsync.go
		return err
	}
	if b.scram, err = security.OpenScramStore(o.FS, dataDir); err != nil {
		return err
	}
	if err = b.openAuthorizer(); err != nil {
		return err
	}
	if err = b.openQuotas(); err != nil { // client_quotas.go
		return err
	}
	if err = b.openDynamicConfigs(); err != nil { // dynamic_configs.go
		return err
	}
	if b.topics, err = topics.Open(o.FS, dataDir, b.nodeID); err != nil {
		return err
	}
	if b.features, err = features.Open(o.FS, dataDir); err != nil {
		return err
	}
	b.clusterID = b.topics.ClusterID()
	s.health.identify(b.ClusterID, b.nodeID)

	mopts := log.ManagerOptions{
		Logger:                 o.Logger,
		Now:                    b.nowFunc(),
		RetentionCheckInterval: time.Duration(o.Config.LogRetentionCheckIntervalMs) * time.Millisecond,
		// Partitions found on disk open with their topic's config.
		ConfigFor: func(topic string, partition int32) log.Config {
			if t, ok := b.topics.Get(topic); ok {
				if c, err := b.logConfig(t.Configs); err == nil {
					return c
				}
			}
			return log.DefaultConfig()
		},
	}
	installProducerGuards(b, &mopts)
	installCheckpointIntervals(o.Config, &mopts)
	installDeferredLoading(b, &mopts) // deferred_logs.go
	mopts.OnFail = b.logFailed        // cluster_halt.go
	if b.clusterCfg != nil {
		// The metadata snapshot is decoded while the logs are entered
		// (startCluster restores it: about as long as each with 100,000
		// partitions).
		b.snapPrefetch = metadata.Prefetch(func() ([]byte, error) {
			return quorum.PeekSnapshot(o.FS, filepath.Join(dataDir, quorumDirName))
		})
	}
	if b.logs, err = log.OpenManager(o.FS, dataDir, mopts); err != nil {
		return fmt.Errorf("sluice: opening logs in %s: %w", dataDir, err)
	}
	if err = b.reconcile(); err != nil {
		return err
	}
	b.metrics.RegisterPartitions(b.topics.TotalPartitions)
	b.metrics.TopicsExist(b.topicExists) // topic_metrics.go
	b.metrics.RegisterReplication(b.replicationCounts)
	if err = b.startServices(); err != nil {
		return err
	}
	if b.clusterCfg != nil {
		if err = b.startCluster(b.clusterCfg, o.FS); err != nil {
			return err
		}
	}

	limits, err := b.parseConnLimits() // connection_limits.go
	if err != nil {
		return err
	}
	s.wire = wire.NewServer(dispatcher{b}, wire.Config{
		MaxRequestBytes: o.Config.SocketRequestMaxBytes,
		IdleTimeout:     time.Duration(o.Config.ConnectionsMaxIdleMs) * time.Millisecond,
		SendBufferBytes: int(o.Config.SocketSendBufferBytes),
		Logger:          o.Logger,
		Observer:        b.metrics,
		Admit:           limits.admit,
	})
	for i, ln := range s.lns {
		s.serveWG.Add(1)
		go func() {
			defer s.serveWG.Done()
			if err := s.wire.ServeListener(ln, s.lnsOf[i]); err != nil && !errors.Is(err, wire.ErrServerClosed) {
				o.Logger.Error("listener stopped", "addr", ln.Addr().String(), "err", err)
			}
		}()
	}

	s.metricsReady(b) // health.go
	b.startDeferredLoading()

	addrs := make([]string, len(s.lns))
	for i, ln := range s.lns {
		addrs[i] = ln.Addr().String()
		if len(b.listeners) > 1 || s.lnsOf[i].Name != security.Plaintext {
			addrs[i] = s.lnsOf[i].Name + "://" + addrs[i]
		}
	}
	attrs := []any{"version", o.Version, "listen", addrs,
		"advertise", net.JoinHostPort(b.host, strconv.Itoa(int(b.port)))}
	if len(s.lnsOf) > 0 && (len(b.listeners) > 1 || s.lnsOf[0].Name != security.Plaintext) {
		attrs = append(attrs, "advertised_listeners", b.advertisedList())
	}
	if s.mln != nil {
		attrs = append(attrs, "metrics", s.mln.Addr().String())
	}
	o.Logger.Info("sluice started", append(attrs,
		"data_dir", dataDir, "cluster_id", b.startupClusterID(), "node_id", b.nodeID,
		"topics", b.topics.Len())...)
	return nil
}

// Broker returns the running broker (nil before Start).
func (s *Server) Broker() *Broker { return s.broker }

// Addr returns the address of the first Kafka listener (nil on a
// controller-only node, which has none).
func (s *Server) Addr() net.Addr {
	if len(s.lns) == 0 {
		return nil
	}
	return s.lns[0].Addr()
}

// ListenerAddr returns the first bound address of the listener named name
// (any case), or nil.
func (s *Server) ListenerAddr(name string) net.Addr {
	for i, ln := range s.lns {
		if strings.EqualFold(s.lnsOf[i].Name, name) {
			return ln.Addr()
		}
	}
	return nil
}

// MetricsAddr returns the metrics endpoint's address, or nil.
func (s *Server) MetricsAddr() net.Addr {
	if s.mln == nil {
		return nil
	}
	return s.mln.Addr()
}

// Close stops accepting connections, lets in-flight requests finish (up to
// ShutdownTimeout), then flushes and closes the logs, which marks a clean
// shutdown. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
		defer cancel()
		s.health.set(false, "shutting down")
		if s.broker != nil && s.broker.cluster != nil {
			c := s.broker.cluster
			// Controlled shutdown while still serving, as Kafka does:
			// leaderships and the controller's role move first, so
			// requests in flight (acks=all waiting for followers that
			// fetch from here) are answered at once.
			c.controlledShutdown()
		}
		if s.wire != nil {
			if err := s.wire.Shutdown(ctx); err != nil {
				s.opts.Logger.Warn("shutdown: in-flight requests did not finish in time", "err", err)
			}
		}
		s.serveWG.Wait()
		if s.metrics != nil {
			s.metrics.Shutdown(ctx)
		}
		s.closeErr = s.closeBroker()
		s.opts.Logger.Info("sluice stopped", "data_dir", s.broker.dataDir)
	})
	return s.closeErr
}

// abort releases what a failed Start opened.
func (s *Server) abort() {
	for _, ln := range s.lns {
		ln.Close()
	}
	if s.metrics != nil {
		s.metrics.Close()
	} else if s.mln != nil {
		s.mln.Close()
	}
	if s.wire != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s.wire.Shutdown(ctx)
		cancel()
	}
	if s.broker != nil {
		s.closeBroker()
	}
	s.closeOnce.Do(func() {})
}

func (s *Server) closeBroker() error {
	b := s.broker
	var errs []error
	for _, fn := range slices.Backward(b.closers) {
		if err := fn(); err != nil {
			errs = append(errs, err)
		}
	}
	if b.logs != nil {
		if err := b.logs.Close(); err != nil {
			errs = append(errs, fmt.Errorf("sluice: closing logs: %w", err))
		}
	}
	if s.lock != nil {
		s.lock.Close() // releases the data directory
		s.lock = nil
	}
	return errors.Join(errs...)
}

// listen binds addr. "localhost" binds 127.0.0.1 and ::1 on the same port
// (clients such as librdkafka resolve localhost to ::1); a missing IPv6
// stack is tolerated with a warning.
func listen(addr string, logger *slog.Logger) ([]net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("sluice: listen address %q: %w", addr, err)
	}
	if host != "localhost" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("sluice: %w", err) // "listen tcp ADDR: …" names the address
		}
		return []net.Listener{ln}, nil
	}
	v4, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return nil, fmt.Errorf("sluice: %s: %w", addr, err)
	}
	_, actual, _ := net.SplitHostPort(v4.Addr().String())
	v6, err := net.Listen("tcp6", net.JoinHostPort("::1", actual))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) && port != "0" {
			v4.Close()
			return nil, fmt.Errorf("sluice: %s: %w", addr, err)
		}
		logger.Warn("localhost: could not bind ::1, serving IPv4 only", "port", actual, "err", err)
		return []net.Listener{v4}, nil
	}
	return []net.Listener{v4, v6}, nil
}

// advertised works out the host and port given to clients.
func advertised(advertise, listenAddr string, bound net.Addr) (string, int32, error) {
	_, boundPort, _ := net.SplitHostPort(bound.String())
	addr := advertise
	if addr == "" {
		host, port, _ := net.SplitHostPort(listenAddr)
		if port == "0" {
			port = boundPort
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			h, err := os.Hostname()
			if err != nil {
				return "", 0, fmt.Errorf("sluice: no --advertise and no hostname: %w", err)
			}
			host = h
		}
		addr = net.JoinHostPort(host, port)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("sluice: advertised address %q (--advertise or advertised.listeners): %w", addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 || host == "" {
		return "", 0, fmt.Errorf("sluice: advertised address %q (--advertise or advertised.listeners): need host:port with a port in 1-65535", addr)
	}
	return host, int32(p), nil
}

// startServices starts what serves the logs, in this order, once the logs are
// open and reconciled and before the listeners accept: producer state (it
// rebuilds idempotence and transaction state, so it comes before any
// append), the cleaner, fetch sessions, the group coordinator, the
// transaction coordinator (it needs producer ids and the group coordinator
// for transactional offsets), and last the partitions themselves: assigning
// them to the partition layer makes this broker their leader, an event on
// which each coordinator loads its internal partitions.
func (b *Broker) startServices() error {
	steps := []struct {
		name  string
		start func() error
	}{
		{"producer state", b.startProducerState},
		{"log cleaner", b.startCleaner},
		{"fetch sessions", b.startFetchSessions},
		{"group coordinator", b.startGroupCoordinator},
		{"transaction coordinator", b.startTxnCoordinator},
		{"share groups", b.startShareGroups},
		{"partitions", b.assignAll},
	}
	for _, s := range steps {
		if err := s.start(); err != nil {
			return fmt.Errorf("sluice: starting %s: %w", s.name, err)
		}
	}
	return nil
}
