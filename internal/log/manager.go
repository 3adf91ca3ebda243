package log

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-broker/sluice/internal/tpindex"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// QuorumDir is the metadata quorum's directory inside a data directory
// (internal/broker): not a partition directory, and not reported as a
// stray one when the logs are loaded.
const QuorumDir = "quorum"

// BootstrapDir holds what `sluice format` prepared for a new cluster
// (internal/broker/cluster_peer_scram.go); it is not a partition.
const BootstrapDir = "bootstrap"

// ManagerOptions configure a Manager. Zero values pick the defaults.
type ManagerOptions struct {
	// Logger receives errors and recovery notes; default slog.Default().
	Logger *slog.Logger
	// Now is the clock (segment.ms, retention.ms, flush.ms, LogAppendTime);
	// default time.Now. Tests pass a fake one.
	Now func() time.Time
	// HousekeepingInterval is how often the background goroutine rolls,
	// applies retention, flushes, deletes files and writes checkpoints.
	// 0 means 1s; negative means no goroutine (call RunHousekeeping).
	HousekeepingInterval time.Duration
	// RetentionCheckInterval is log.retention.check.interval.ms: how often
	// the background goroutine applies retention (deletes segments past
	// retention.ms / retention.bytes or below the log start offset); it
	// runs on the first housekeeping tick after each interval, the first
	// time after min(interval, 30s). 0 means Kafka's 5 minutes.
	RetentionCheckInterval time.Duration
	// RecoveryPointCheckpointInterval and LogStartCheckpointInterval are
	// log.flush.offset.checkpoint.interval.ms and
	// log.flush.start.offset.checkpoint.interval.ms: housekeeping writes
	// the recovery-point (log-start) checkpoint at most that often, and
	// only when some log's value moved (checkpoint_interval.go). 0 means
	// on every housekeeping pass. Close, suffix truncations and
	// TruncatePrefix still write at once.
	RecoveryPointCheckpointInterval time.Duration
	LogStartCheckpointInterval      time.Duration
	// ConfigFor gives the config of a partition found on disk at start;
	// default DefaultConfig. The broker re-applies configs with Open.
	ConfigFor func(topic string, partition int32) Config
	// ProducerGuard, if set, makes a guard for every log opened or created.
	ProducerGuard func(topic string, partition int32) ProducerGuard
	// MaxOpenFiles bounds the descriptors the segment files hold (a
	// vfs.FileCache: files are opened on use and idle ones closed); 0
	// sizes it from the process's descriptor limit
	// (vfs.DefaultFileCacheCapacity), negative turns the cache off (every
	// segment file stays open, as before).
	MaxOpenFiles int
	// OnLoad, if set, is called when a log found at start (its loading is
	// deferred: deferred.go) has been read, before any other caller may use
	// it; the broker rebuilds the partition's producer state there. Logs
	// created later do not get it.
	OnLoad func(LoadView) error
	// OnFail, if set, is called (on its own goroutine) once when a log
	// fails: an I/O error after which it refuses appends until restart.
	OnFail func(dir string, err error)
}

// Manager owns one data directory: every <topic>-<partition> directory in
// it, the data-dir-level checkpoint files (recovery-point-offset-checkpoint,
// log-start-offset-checkpoint) and the clean-shutdown marker
// (.kafka_cleanshutdown), and the background housekeeping.
type Manager struct {
	fs     vfs.FS
	dir    string
	opts   ManagerOptions
	logger *slog.Logger

	files *vfs.FileCache // segment file descriptors; nil: files stay open

	noReserve atomic.Bool // the filesystem cannot reserve blocks (reserve.go)

	closingCh chan struct{} // closed when Close starts (deferred.go); (mu)

	// ckGen counts changes of any log's recovery point or log start
	// offset; writeCheckpoints skips its work while it has not moved.
	ckGen     atomic.Int64
	lastCkGen int64 // (ckMu) ckGen at the last write

	mu      sync.Mutex
	logs    tpindex.Index[Log] // (mu)
	deletes []pendingDelete
	closed  bool

	ckMu        sync.Mutex // serialises checkpoint writes
	lastCkRP    *Offsets
	lastCkStart *Offsets
	// rpCheckedAt and startCheckedAt: when housekeeping last compared (and
	// if changed wrote) each checkpoint (checkpoint_interval.go).
	rpCheckedAt, startCheckedAt time.Time

	// prevEpoch and brokerEpoch: the broker epoch the clean-shutdown
	// marker held at start, and the one Close writes (shutdown_epoch.go).
	prevEpoch   int64
	brokerEpoch atomic.Int64

	hkMu     sync.Mutex   // one housekeeping pass at a time
	hkPasses atomic.Int64 // housekeeping passes run (tests wait on it)
	stop     chan struct{}
	done     chan struct{}
}

type pendingDelete struct {
	deadlineMs int64
	files      []vfs.File
	paths      []string
}

// OpenManager opens dataDir, loading (and, after a crash, recovering) every
// partition directory in it, and starts the housekeeping goroutine.
func OpenManager(fsys vfs.FS, dataDir string, opts ManagerOptions) (*Manager, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.HousekeepingInterval == 0 {
		opts.HousekeepingInterval = time.Second
	}
	if opts.RetentionCheckInterval <= 0 {
		opts.RetentionCheckInterval = 5 * time.Minute
	}
	if opts.ConfigFor == nil {
		opts.ConfigFor = func(string, int32) Config { return DefaultConfig() }
	}
	m := &Manager{fs: fsys, dir: dataDir, opts: opts, logger: opts.Logger, logs: tpindex.New[Log](), prevEpoch: -1}
	m.brokerEpoch.Store(-1)
	switch {
	case opts.MaxOpenFiles == 0:
		m.files = vfs.NewFileCache(vfs.DefaultFileCacheCapacity())
	case opts.MaxOpenFiles > 0:
		m.files = vfs.NewFileCache(opts.MaxOpenFiles)
	}
	if err := fsys.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	markerPath := filepath.Join(dataDir, cleanShutdownFile)
	_, err := fsys.Stat(markerPath)
	hasMarker := err == nil
	clean := hasMarker // unless a file it relies on is unreadable
	loadStart := time.Now()
	rps, err := readPartitionOffsets(fsys, filepath.Join(dataDir, recoveryPointFile))
	if err != nil {
		m.logger.Warn("recovery-point checkpoint unreadable; recovering every segment", "err", err)
		rps, clean = nil, false
	}
	// The partitions a clean shutdown left unrecovered since an unclean
	// start (unrecovered.go).
	var pending *Offsets
	if clean {
		if pending, err = readUnrecovered(fsys, dataDir); err != nil {
			m.logger.Warn("list of the partitions to recover unreadable; recovering every partition", "err", err)
			clean = false
		}
	}
	starts, err := readPartitionOffsets(fsys, filepath.Join(dataDir, logStartFile))
	if err != nil {
		m.logger.Warn("log-start-offset checkpoint unreadable", "err", err)
		starts = nil
	}
	ents, err := fsys.ReadDir(dataDir)
	if err != nil {
		return nil, err
	}
	unclean := 0
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		if strings.HasSuffix(name, "-delete") {
			if err := removeDir(fsys, filepath.Join(dataDir, name)); err != nil {
				m.logger.Warn("cannot remove deleted partition dir", "dir", name, "err", err)
			}
			continue
		}
		if name == QuorumDir || name == BootstrapDir {
			continue
		}
		tp, ok := parsePartitionDir(name)
		if !ok {
			m.logger.Warn("ignoring directory that is not <topic>-<partition>", "dir", name)
			continue
		}
		rp, checkpointed := rps.Get(tp.Topic, tp.Partition)
		// Never checkpointed: every segment is validated.
		p := loadParams{clean: clean && checkpointed, recoveryPoint: rp, logStart: -1}
		if v, ok := starts.Get(tp.Topic, tp.Partition); ok {
			p.logStart = v
		}
		if rp, ok := pending.Get(tp.Topic, tp.Partition); ok {
			p.clean, p.recoveryPoint = false, rp
		}
		l, err := m.newLog(tp, opts.ConfigFor(tp.Topic, tp.Partition))
		if err != nil {
			m.closeLogs()
			return nil, err
		}
		// Read (after an unclean shutdown: recovered) on first use or by
		// the background loader (deferred.go).
		l.deferLoad(p)
		m.logs.Set(tp.Topic, tp.Partition, l)
		if !p.clean {
			unclean++
		}
	}
	if unclean > 0 {
		// Kafka logs its recovery too: say what the start left to do.
		m.logger.Info("unclean shutdown: each partition is recovered (the segments after its recovery point re-validated) before its first use, the others in the background",
			"partitions", unclean, "left_unrecovered_by_the_last_shutdown", pending.Len(), "elapsed", time.Since(loadStart).Round(time.Millisecond))
	}
	// From here on a crash is unclean again: the marker goes, also when
	// the start is unclean for want of a file it relies on (left, it
	// would make the start after a crash of this run clean). Its epoch
	// is reported only when the start is clean.
	if clean {
		m.prevEpoch = readMarkerEpoch(fsys, markerPath)
	}
	if hasMarker {
		if err := fsys.Remove(markerPath); err != nil && !os.IsNotExist(err) {
			m.closeLogs()
			return nil, err
		}
		if err := fsys.SyncDir(dataDir); err != nil {
			m.closeLogs()
			return nil, err
		}
	}
	// Only once the marker is gone for good: without it the list is
	// never read.
	if err := removeUnrecovered(fsys, dataDir); err != nil {
		m.closeLogs()
		return nil, err
	}
	// The checkpoints are written again only where the logs entered
	// differ from what was read (a partition directory without an entry, an
	// entry without a directory, an unreadable file): rewriting 100,000
	// unchanged entries is a good part of a restart.
	m.lastCkRP, m.lastCkStart = rps, starts
	m.ckGen.Add(1) // compare them now
	if err := m.writeCheckpointsWhen(false, false); err != nil {
		m.closeLogs()
		return nil, err
	}
	if opts.HousekeepingInterval > 0 {
		m.stop, m.done = make(chan struct{}), make(chan struct{})
		go m.housekeepingLoop(opts.HousekeepingInterval)
	}
	return m, nil
}

// closeWorkers is how many logs Close closes at once.
const closeWorkers = 16

func (m *Manager) now() time.Time { return m.opts.Now() }

// FileCacheStats describes the descriptor cache of the segment files (zero
// when MaxOpenFiles turned it off).
func (m *Manager) FileCacheStats() vfs.FileCacheStats {
	if m.files == nil {
		return vfs.FileCacheStats{}
	}
	return m.files.Stats()
}

// Dir is the data directory.
func (m *Manager) Dir() string { return m.dir }

func (m *Manager) newLog(tp TopicPartition, cfg Config) (*Log, error) {
	l := &Log{
		m:         m,
		fs:        m.fs,
		dir:       filepath.Join(m.dir, partitionDirName(tp)),
		topic:     tp.Topic,
		partition: tp.Partition,
		guard:     noopGuard{},
	}
	l.hwFollowsEnd.Store(true)
	if err := l.SetConfig(cfg); err != nil {
		return nil, err
	}
	if m.opts.ProducerGuard != nil {
		if g := m.opts.ProducerGuard(tp.Topic, tp.Partition); g != nil {
			l.SetProducerGuard(g)
		}
	}
	return l, nil
}

func partitionDirName(tp TopicPartition) string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

func parsePartitionDir(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || ValidateTopicName(name[:i]) != nil {
		return TopicPartition{}, false
	}
	return TopicPartition{name[:i], int32(p)}, true
}

// ValidateTopicName applies Kafka's rules: 1..249 characters of
// [a-zA-Z0-9._-], not "." or "..".
func ValidateTopicName(t string) error {
	if t == "" || t == "." || t == ".." || len(t) > 249 {
		return fmt.Errorf("log: illegal topic name %q", t)
	}
	for _, c := range []byte(t) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("log: illegal character %q in topic name %q", c, t)
		}
	}
	return nil
}

// ErrExists is returned by Create for a partition that already exists.
var ErrExists = errors.New("log: partition already exists")

// Create makes a new, empty partition log.
func (m *Manager) Create(topic string, partition int32, cfg Config) (*Log, error) {
	return m.open(topic, partition, cfg, true)
}

// Open returns the partition's log, creating it if it does not exist; an
// existing log gets cfg applied.
func (m *Manager) Open(topic string, partition int32, cfg Config) (*Log, error) {
	return m.open(topic, partition, cfg, false)
}

func (m *Manager) open(topic string, partition int32, cfg Config, mustCreate bool) (*Log, error) {
	if err := ValidateTopicName(topic); err != nil {
		return nil, err
	}
	if partition < 0 {
		return nil, fmt.Errorf("log: negative partition %d", partition)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tp := TopicPartition{topic, partition}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if l := m.logs.Get(tp.Topic, tp.Partition); l != nil {
		if mustCreate {
			return nil, fmt.Errorf("%w: %s", ErrExists, partitionDirName(tp))
		}
		if err := l.SetConfig(cfg); err != nil {
			return nil, err
		}
		return l, nil
	}
	l, err := m.newLog(tp, cfg)
	if err != nil {
		return nil, err
	}
	if err := l.load(loadParams{clean: false, recoveryPoint: 0, logStart: -1}); err != nil {
		return nil, err
	}
	if err := m.fs.SyncDir(m.dir); err != nil {
		l.closeFiles()
		return nil, err
	}
	m.logs.Set(tp.Topic, tp.Partition, l)
	return l, nil
}

// Get returns the open log of a partition, or nil.
func (m *Manager) Get(topic string, partition int32) *Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.logs.Get(topic, partition)
}

// Partitions lists the partitions that exist, sorted.
func (m *Manager) Partitions() []TopicPartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]TopicPartition, 0, m.logs.Len())
	m.logs.Sorted(func(topic string, partition int32, _ *Log) {
		out = append(out, TopicPartition{topic, partition})
	})
	return out
}

// Delete removes a partition and its data: the directory is renamed to
// <topic>-<partition>.<id>-delete (as Kafka does), then removed. Readers
// holding file ranges of it keep reading the unlinked files, which are
// closed after file.delete.delay.ms (or at Close). It is Detach followed by
// the purge it returns.
func (m *Manager) Delete(topic string, partition int32) error {
	purge, err := m.Detach(topic, partition)
	if err != nil {
		return err
	}
	return purge()
}

// Detach takes a partition out of the manager (its log is closed to readers
// and writers) and renames its directory to a "-delete" name, so that the
// partition's name is free again at once: a new partition of that name can
// be created before the old one's files are gone. The returned purge
// removes the renamed directory, schedules the open files for closing after
// file.delete.delay.ms and writes the checkpoints; it is the slow part (file
// removal and fsyncs), which callers run without holding their own locks. A
// crash before purge finishes leaves a "-delete" directory that the next
// OpenManager removes.
func (m *Manager) Detach(topic string, partition int32) (purge func() error, err error) {
	tp := TopicPartition{topic, partition}
	m.mu.Lock()
	l := m.logs.Remove(tp.Topic, tp.Partition)
	m.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("log: no partition %s", partitionDirName(tp))
	}
	l.abandonLoad() // a log never loaded stays unloaded: its directory goes
	m.ckGen.Add(1)  // the checkpoints lose it
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.notify()
	var id [8]byte
	_, _ = rand.Read(id[:])
	gone := filepath.Join(m.dir, partitionDirName(tp)+"."+hex.EncodeToString(id[:])+"-delete")
	if err := m.fs.Rename(l.dir, gone); err != nil {
		return nil, storageErr("delete partition", err)
	}
	return func() error { return m.purge(l, gone) }, nil
}

// purge finishes Detach: l's directory was renamed to gone.
func (m *Manager) purge(l *Log, gone string) error {
	if err := m.fs.SyncDir(m.dir); err != nil {
		return storageErr("delete partition", err)
	}
	if err := removeDir(m.fs, gone); err != nil {
		l.closeFiles()
		return storageErr("delete partition", err)
	}
	// The data is gone from the directory; fetch responses already holding
	// ranges of it read the unlinked files until file.delete.delay.ms.
	var files []vfs.File
	for _, s := range l.segments() {
		for _, f := range s.files() {
			if f != nil {
				files = append(files, f)
			}
		}
	}
	m.scheduleDelete(l.config().FileDeleteDelayMs, files, nil)
	return m.writeCheckpoints(true)
}

// removeDir removes a flat directory and its files.
func removeDir(fsys vfs.FS, dir string) error {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			if err := removeDir(fsys, p); err != nil {
				return err
			}
			continue
		}
		if err := fsys.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return fsys.Remove(dir)
}

// Close stops housekeeping, flushes every log, writes the checkpoints and
// leaves the clean-shutdown marker, so the next OpenManager skips recovery.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	if m.closingCh != nil {
		close(m.closingCh)
	}
	m.mu.Unlock()
	if m.stop != nil {
		close(m.stop)
		<-m.done
	}
	m.hkMu.Lock()
	defer m.hkMu.Unlock()
	// Closing a log that took writes costs fsyncs (its segment and
	// indexes): close closeWorkers logs at a time, as the disk serves
	// concurrent syncs about as fast as one.
	var (
		firstErr    error
		errMu       sync.Mutex
		wg          sync.WaitGroup
		work        = make(chan *Log)
		unrecovered = NewOffsets() // (errMu)
	)
	for w := 0; w < closeWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range work {
				if l.abandonLoad() {
					// Never loaded: nothing to flush or close. One left
					// unrecovered since an unclean start is recovered at
					// the next start (unrecovered.go).
					if l.offsetsUnknown {
						errMu.Lock()
						unrecovered.Set(l.topic, l.partition, l.recoveryPoint.Load())
						errMu.Unlock()
					}
					continue
				}
				if err := l.close(); err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
				}
			}
		}()
	}
	for _, l := range m.allLogs() {
		work <- l
	}
	close(work)
	wg.Wait()
	m.runDeletes(true)
	if err := m.writeCheckpoints(true); err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr == nil {
		firstErr = m.writeUnrecovered(unrecovered) // before the marker
	}
	if firstErr == nil {
		firstErr = vfs.WriteFileAtomic(m.fs, filepath.Join(m.dir, cleanShutdownFile), m.markerContent(), 0o644)
	}
	m.closeLogs()
	return firstErr
}

func (m *Manager) allLogs() []*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Log, 0, m.logs.Len())
	m.logs.Each(func(l *Log) { out = append(out, l) })
	return out
}

func (m *Manager) closeLogs() {
	for _, l := range m.allLogs() {
		l.closeFiles()
	}
}

// writeCheckpoints writes the recovery-point and log-start-offset files if
// anything changed since the last write (or always with force).
func (m *Manager) writeCheckpoints(force bool) error { return m.writeCheckpointsWhen(force, false) }

// writeCheckpointsWhen is writeCheckpoints; with periodic (housekeeping), a
// checkpoint is compared and written only once its interval has passed
// (checkpoint_interval.go).
func (m *Manager) writeCheckpointsWhen(force, periodic bool) error {
	m.ckMu.Lock()
	defer m.ckMu.Unlock()
	gen := m.ckGen.Load()
	if !force && gen == m.lastCkGen && m.lastCkRP != nil {
		return nil // nothing moved: do not walk every log (many partitions, every second)
	}
	now := m.now()
	rpDue := force || !periodic || m.lastCkRP == nil || m.due(m.rpCheckedAt, m.opts.RecoveryPointCheckpointInterval, now)
	startDue := force || !periodic || m.lastCkStart == nil || m.due(m.startCheckedAt, m.opts.LogStartCheckpointInterval, now)
	if !rpDue && !startDue {
		return nil // moved, but written again only once its interval has passed
	}
	logs := m.allLogs()
	if !force && m.unchangedSinceCheckpoint(logs, rpDue, startDue) {
		// Compared without building the maps (100,000 entries each).
		if rpDue {
			m.rpCheckedAt = now
		}
		if startDue {
			m.startCheckedAt = now
		}
		if rpDue && startDue {
			m.lastCkGen = gen
		}
		return nil
	}
	rps, starts := NewOffsets(), NewOffsets()
	for _, l := range logs {
		if rpDue {
			rps.Set(l.topic, l.partition, l.recoveryPoint.Load())
		}
		if startDue {
			starts.Set(l.topic, l.partition, l.logStart.Load())
		}
	}
	var err error
	if rpDue {
		if force || !rps.Equal(m.lastCkRP) {
			if err = writePartitionOffsets(m.fs, filepath.Join(m.dir, recoveryPointFile), rps); err == nil {
				m.lastCkRP = rps
			}
		}
		if err == nil {
			m.rpCheckedAt = now
		}
	}
	if startDue {
		var err2 error
		if force || !starts.Equal(m.lastCkStart) {
			if err2 = writePartitionOffsets(m.fs, filepath.Join(m.dir, logStartFile), starts); err2 == nil {
				m.lastCkStart = starts
			}
		}
		if err2 == nil {
			m.startCheckedAt = now
		} else if err == nil {
			err = err2
		}
	}
	if err != nil {
		return storageErr("checkpoint", err)
	}
	if rpDue && startDue {
		m.lastCkGen = gen // else the other checkpoint is still to compare
	}
	return nil
}

// checkpointChanged notes that the log's recovery point or log start offset
// moved (writeCheckpoints).
func (l *Log) checkpointChanged() { l.m.ckGen.Add(1) }

// unchangedSinceCheckpoint reports whether the due checkpoints last
// written hold what logs have now. Caller holds ckMu.
func (m *Manager) unchangedSinceCheckpoint(logs []*Log, rpDue, startDue bool) bool {
	if rpDue && (m.lastCkRP == nil || m.lastCkRP.Len() != len(logs)) ||
		startDue && (m.lastCkStart == nil || m.lastCkStart.Len() != len(logs)) {
		return false
	}
	for _, l := range logs {
		if rpDue {
			if v, ok := m.lastCkRP.Get(l.topic, l.partition); !ok || v != l.recoveryPoint.Load() {
				return false
			}
		}
		if startDue {
			if v, ok := m.lastCkStart.Get(l.topic, l.partition); !ok || v != l.logStart.Load() {
				return false
			}
		}
	}
	return true
}

// scheduleDelete keeps files open (readable by in-flight fetches) until
// file.delete.delay.ms has passed, then closes and removes them.
func (m *Manager) scheduleDelete(delayMs int64, files []vfs.File, paths []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deletes = append(m.deletes, pendingDelete{deadlineMs: m.now().UnixMilli() + delayMs, files: files, paths: paths})
}

// runDeletes performs the due delayed deletions (all with force).
func (m *Manager) runDeletes(force bool) {
	nowMs := m.now().UnixMilli()
	m.mu.Lock()
	var due, keep []pendingDelete
	for _, d := range m.deletes {
		if force || d.deadlineMs <= nowMs {
			due = append(due, d)
		} else {
			keep = append(keep, d)
		}
	}
	m.deletes = keep
	m.mu.Unlock()
	for _, d := range due {
		for _, f := range d.files {
			_ = f.Close()
		}
		for _, p := range d.paths {
			if err := m.fs.Remove(p); err != nil && !os.IsNotExist(err) {
				m.logger.Warn("cannot remove deleted segment file", "file", p, "err", err)
			}
		}
	}
}
