package txn

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/batch"
)

// TopicPartition names one partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Storage is where the coordinator keeps its records: one append-only,
// compacted log per __transaction_state partition. The broker implements it
// over its partition logs.
type Storage interface {
	// Append durably appends one v2 record batch (base offset 0) to
	// partition p. An error means nothing was stored.
	Append(p int32, batch []byte) error
	// Replay calls fn with the raw bytes of partition p's batches, from the
	// log start to its end, in order (whole batches each time).
	Replay(p int32, fn func(batches []byte) error) error
}

// Partitions is the coordinator's way to the partitions of transactions.
type Partitions interface {
	// WriteMarker appends the transaction marker m to tp. It returns an
	// error wrapping ErrPartitionGone when tp no longer exists, one
	// wrapping ErrMarkerFenced when the partition knows the producer at a
	// newer epoch; any other error is retried later.
	WriteMarker(tp TopicPartition, m batch.Marker) error
}

// IDSource hands out producer ids never used before (producer.IDs).
type IDSource interface {
	Next() (int64, error)
}

// Marker write outcomes a Partitions implementation reports.
var (
	ErrPartitionGone = errors.New("txn: partition no longer exists")
	ErrMarkerFenced  = errors.New("txn: partition has a newer producer epoch")
)

// Config is the coordinator's configuration (Kafka's transaction.* broker
// settings).
type Config struct {
	// NumPartitions is transaction.state.log.num.partitions (default 50).
	NumPartitions int32
	// MaxTimeoutMs is transaction.max.timeout.ms (default 900000).
	MaxTimeoutMs int32
	// IDExpiration is transactional.id.expiration.ms (default 7 days).
	IDExpiration time.Duration
	// AbortInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms
	// (default 10 s): how often timed-out transactions are aborted and
	// unfinished completions retried.
	AbortInterval time.Duration
	// ExpireInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms (default
	// 1 h).
	ExpireInterval time.Duration
	// NoProduceVerification is transaction.partition.verification.enable
	// set to false: BeginProduce admits everything.
	NoProduceVerification bool
	// OwnLoadedOnly answers NOT_COORDINATOR for a transactional id whose
	// __transaction_state partition is not loaded here (a cluster, where
	// another broker leads it). A single node owns every partition, and
	// creates the topic on first use.
	OwnLoadedOnly bool
}

func (c Config) withDefaults() Config {
	if c.NumPartitions <= 0 {
		c.NumPartitions = 50
	}
	if c.MaxTimeoutMs <= 0 {
		c.MaxTimeoutMs = 900000
	}
	if c.IDExpiration <= 0 {
		c.IDExpiration = 7 * 24 * time.Hour
	}
	if c.AbortInterval <= 0 {
		c.AbortInterval = 10 * time.Second
	}
	if c.ExpireInterval <= 0 {
		c.ExpireInterval = time.Hour
	}
	return c
}

// Options configure a Coordinator.
type Options struct {
	Config     Config
	Storage    Storage    // nil keeps state in memory only
	Partitions Partitions // required to complete transactions
	IDs        IDSource   // required
	// Now defaults to time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// NoBackground disables the periodic sweeps Start arms (tests call
	// AbortTimedOut and ExpireIDs themselves).
	NoBackground bool
	// TransactionVersion returns the finalized transaction.version
	// feature level; from 1 on, __transaction_state values are written
	// in the flexible version 1 (with KIP-890's tagged fields), as Kafka
	// does. Nil means 0.
	TransactionVersion func() int16
}

// snapshot is one transactional id's state as a value: what is persisted
// plus the in-memory-only previous producer id and last epoch.
type snapshot struct {
	producerID     int64
	prevProducerID int64
	producerEpoch  int16
	lastEpoch      int16
	timeoutMs      int32
	state          State
	partitions     map[TopicPartition]struct{} // never mutated once in a snapshot
	startMs        int64
	updateMs       int64
	// tv2 is set when the current transaction runs under transaction
	// version 2 (KIP-890 part 2: started by an implicit add, or ended with
	// EndTxn v5); persisted as ClientTransactionVersion.
	tv2 bool
	// nextProducerID is the producer id a TV2 transaction whose epoch ran
	// out moves to when it completes (-1: none).
	nextProducerID int64
}

// txnMeta is one transactional id. Its fields are guarded by mu.
type txnMeta struct {
	mu sync.Mutex
	id string
	snapshot
	// pending is set while a prepared transition is written to storage.
	pending bool
	// completing is set while one worker writes the markers of a
	// PrepareCommit/PrepareAbort transaction and its completion;
	// completed is closed when that worker is done.
	completing bool
	completed  chan struct{}
	// appending counts transactional appends admitted by BeginProduce and
	// not yet released; idle (on mu) is signalled when it drops to zero.
	appending int
	idle      *sync.Cond
	// removed is set once the id has expired and left the map.
	removed bool
	// settled (on mu) is broadcast when a pending transition is done.
	settled *sync.Cond
}

// Coordinator is the transaction coordinator of one broker. Create it with
// New, call Start before serving (it replays Storage and finishes
// transactions that were being completed), and Close on shutdown.
type Coordinator struct {
	cfg   Config
	store Storage
	parts Partitions
	ids   IDSource
	now   func() time.Time
	log   *slog.Logger
	bg    bool
	tv    func() int16

	mu      sync.Mutex
	txns    map[string]*txnMeta
	byPID   map[int64]*txnMeta // current producer id → its transactional id
	loading bool
	loaded  map[int32]bool // __transaction_state partitions loaded here
	closed  bool
	stop    chan struct{}
	done    chan struct{}
}

// New creates a coordinator; it answers COORDINATOR_LOAD_IN_PROGRESS until
// Start has loaded its state.
func New(opts Options) *Coordinator {
	c := &Coordinator{
		cfg:     opts.Config.withDefaults(),
		store:   opts.Storage,
		parts:   opts.Partitions,
		ids:     opts.IDs,
		now:     opts.Now,
		log:     opts.Logger,
		bg:      !opts.NoBackground,
		tv:      opts.TransactionVersion,
		txns:    make(map[string]*txnMeta),
		byPID:   make(map[int64]*txnMeta),
		loading: true,
		loaded:  make(map[int32]bool),
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return c
}

// Config returns the effective configuration.
func (c *Coordinator) Config() Config { return c.cfg }

// PartitionFor is the __transaction_state partition of transactional id:
// abs(Java String.hashCode(id)) mod n, as Kafka places it.
func PartitionFor(id string, n int32) int32 {
	var h int32
	for _, r := range id {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xd800+(r>>10))
			h = 31*h + int32(0xdc00+(r&0x3ff))
			continue
		}
		h = 31*h + int32(r)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// Start ends the loading state and arms the periodic sweeps. Transaction
// state is loaded one __transaction_state partition at a time, by
// LoadPartition, when this broker becomes that partition's leader.
func (c *Coordinator) Start() error {
	c.mu.Lock()
	c.loading = false
	c.mu.Unlock()
	if c.bg {
		c.stop, c.done = make(chan struct{}), make(chan struct{})
		go c.sweep()
	}
	return nil
}

// LoadPartition loads the transactional ids of one __transaction_state
// partition (this broker now leads it), completes transactions found in
// PrepareCommit or PrepareAbort (writing their markers again) and keeps
// Ongoing ones (their timeout still applies). Loading a loaded partition
// does nothing.
func (c *Coordinator) LoadPartition(p int32) error { return c.loadPartitionThen(p, false) }

// LoadPartitionCompletingInBackground is LoadPartition, except that the
// transactions found in PrepareCommit or PrepareAbort are completed in the
// background, as Kafka's coordinator hands their markers to its marker
// sender: it returns once the state is loaded. A broker that becomes the
// partition's leader while applying a metadata change loads it this way,
// because the markers wait for the in-sync replicas of other partitions,
// which may first need other brokers to apply that same change (each
// waiting on the other stalled both for the markers' timeouts).
func (c *Coordinator) LoadPartitionCompletingInBackground(p int32) error {
	return c.loadPartitionThen(p, true)
}

func (c *Coordinator) loadPartitionThen(p int32, background bool) error {
	c.mu.Lock()
	done := c.loaded[p] || c.closed
	c.mu.Unlock()
	if done {
		return nil
	}
	loaded := make(map[string]snapshot)
	if c.store != nil {
		if err := c.loadPartition(p, loaded); err != nil {
			return fmt.Errorf("txn: loading %s-%d: %w", TransactionStateTopic, p, err)
		}
	}
	var finish []*txnMeta
	c.mu.Lock()
	if c.loaded[p] {
		c.mu.Unlock()
		return nil
	}
	for id, s := range loaded {
		m := &txnMeta{id: id, snapshot: s}
		c.txns[id] = m
		c.byPID[s.producerID] = m
		if s.state == PrepareCommit || s.state == PrepareAbort {
			finish = append(finish, m)
		}
	}
	c.loaded[p] = true
	c.mu.Unlock()
	if len(loaded) > 0 {
		c.log.Info("txn: loaded transaction state", "partition", p, "transactional_ids", len(loaded), "completing", len(finish))
	}
	for _, m := range finish {
		if background {
			go c.complete(m, false) // a failure is retried by AbortTimedOut
			continue
		}
		c.complete(m, false)
	}
	return nil
}

// UnloadPartition forgets the transactional ids of one __transaction_state
// partition (its leadership moved away, or it is gone); their state stays in
// the log for the next coordinator.
func (c *Coordinator) UnloadPartition(p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded[p] {
		return
	}
	delete(c.loaded, p)
	for id := range c.txns {
		if PartitionFor(id, c.cfg.NumPartitions) == p {
			delete(c.txns, id)
		}
	}
	for pid, m := range c.byPID {
		if PartitionFor(m.id, c.cfg.NumPartitions) == p {
			delete(c.byPID, pid)
		}
	}
}

func (c *Coordinator) loadPartition(p int32, into map[string]snapshot) error {
	return c.store.Replay(p, func(buf []byte) error {
		for len(buf) > 0 {
			h, err := batch.ParseHeader(buf)
			if err != nil || h.TotalSize() > len(buf) {
				c.log.Error("txn: skipping unreadable __transaction_state data", "partition", p, "err", err)
				return nil
			}
			b := buf[:h.TotalSize()]
			buf = buf[h.TotalSize():]
			if h.IsControl() {
				continue
			}
			err = batch.ForEachRecord(b, 64<<20, func(r *batch.Record) error {
				id, s, del, ok, err := decodeRecord(r.Key, r.Value)
				if err != nil {
					c.log.Error("txn: skipping unreadable __transaction_state record", "partition", p, "err", err)
					return nil
				}
				if !ok {
					return nil
				}
				if del {
					delete(into, id)
				} else {
					into[id] = s
				}
				return nil
			})
			if err != nil {
				c.log.Error("txn: skipping unreadable __transaction_state batch", "partition", p, "err", err)
			}
		}
		return nil
	})
}

// Close stops the sweeps. Requests afterwards get NOT_COORDINATOR.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	stop, done := c.stop, c.done
	c.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

func (c *Coordinator) sweep() {
	defer close(c.done)
	abort := time.NewTicker(c.cfg.AbortInterval)
	defer abort.Stop()
	expire := time.NewTicker(c.cfg.ExpireInterval)
	defer expire.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-abort.C:
			c.AbortTimedOut()
		case <-expire.C:
			c.ExpireIDs()
		}
	}
}

// lookup returns id's metadata (nil if unknown) or the coordinator-level
// error: COORDINATOR_LOAD_IN_PROGRESS while loading, NOT_COORDINATOR once
// closed or (OwnLoadedOnly) when id's partition is not loaded here.
func (c *Coordinator) lookup(id string) (*txnMeta, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, kerr.NotCoordinator.Code
	case c.loading:
		return nil, kerr.CoordinatorLoadInProgress.Code
	case c.cfg.OwnLoadedOnly && !c.loaded[PartitionFor(id, c.cfg.NumPartitions)]:
		// id's __transaction_state partition is led by another broker:
		// the client looks the coordinator up again.
		return nil, kerr.NotCoordinator.Code
	}
	return c.txns[id], 0
}

// persist writes s as id's record.
func (c *Coordinator) persist(id string, s snapshot) error {
	if c.store == nil {
		return nil
	}
	var version int16
	if c.tv != nil && c.tv() >= 1 {
		version = 1
	}
	return c.write(id, encodeValue(s, version))
}

func (c *Coordinator) write(id string, value []byte) error {
	if c.store == nil {
		return nil
	}
	p := PartitionFor(id, c.cfg.NumPartitions)
	if err := c.store.Append(p, encodeBatch(id, value, c.nowMs())); err != nil {
		c.log.Error("txn: writing __transaction_state", "transactional_id", id, "partition", p, "err", err)
		return err
	}
	return nil
}

func (c *Coordinator) nowMs() int64 { return c.now().UnixMilli() }

// transit writes next for m (whose mu the caller holds, and which is not
// pending) and applies it; mu is released during the write. It returns
// COORDINATOR_NOT_AVAILABLE when the write fails (retriable; nothing
// changed).
func (c *Coordinator) transit(m *txnMeta, next snapshot) int16 {
	if !canTransition(m.state, next.state) {
		c.log.Error("txn: illegal transition", "transactional_id", m.id, "from", m.state, "to", next.state)
		return kerr.UnknownServerError.Code
	}
	m.pending = true
	m.mu.Unlock()
	err := c.persist(m.id, next)
	m.mu.Lock()
	m.pending = false
	if m.settled != nil {
		m.settled.Broadcast()
	}
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	if next.producerID != m.producerID {
		c.mu.Lock() // lock order: a txnMeta's mu, then c.mu (never the reverse)
		if c.byPID[m.producerID] == m {
			delete(c.byPID, m.producerID)
		}
		c.byPID[next.producerID] = m
		c.mu.Unlock()
	}
	m.snapshot = next
	return 0
}

func epochExhausted(e int16) bool { return e >= 32767-1 }
