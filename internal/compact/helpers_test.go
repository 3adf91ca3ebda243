package compact

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/producer"
	"github.com/sluice-broker/sluice/internal/vfs"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// env is a log manager and a cleaner on a crash-simulating MemFS with a
// fake clock.
type env struct {
	t     testing.TB
	fs    *vfs.MemFS
	clock *fakeClock
	cfg   log.Config
	tcfg  TopicConfig
	m     *log.Manager
	c     *Cleaner
	dedup int64
	// guards installs a producer guard (transaction tracking) in every log.
	guards bool
}

func compactConfig() log.Config {
	cfg := log.DefaultConfig()
	cfg.Compact = true
	cfg.DeleteRetention = false
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 256
	cfg.FileDeleteDelayMs = 0
	return cfg
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, fs: vfs.NewMemFS(), clock: newClock(), cfg: compactConfig(), tcfg: DefaultTopicConfig(), dedup: 1 << 20}
	e.open()
	return e
}

func (e *env) open() {
	e.t.Helper()
	opts := log.ManagerOptions{
		Logger: quietLogger(), Now: e.clock.Now, HousekeepingInterval: -1,
		ConfigFor: func(string, int32) log.Config { return e.cfg },
	}
	if e.guards {
		opts.ProducerGuard = func(string, int32) log.ProducerGuard { return producer.NewGuard(nil) }
	}
	m, err := log.OpenManager(e.fs, "/data", opts)
	if err != nil {
		e.t.Fatalf("OpenManager: %v", err)
	}
	e.m = m
	c, err := New(Options{FS: e.fs, DataDir: "/data", Manager: m, DedupeBufferSize: e.dedup, BackoffMs: 1000,
		TopicConfig: func(string) TopicConfig { return e.tcfg }, Now: e.clock.Now, Logger: quietLogger()})
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	e.c = c
}

// crash simulates power loss and reopens everything.
func (e *env) crash() {
	e.t.Helper()
	e.fs.Crash(vfs.CrashOptions{})
	e.open()
}

func (e *env) close() {
	e.t.Helper()
	if err := e.c.Close(); err != nil {
		e.t.Fatalf("cleaner Close: %v", err)
	}
	if err := e.m.Close(); err != nil {
		e.t.Fatalf("manager Close: %v", err)
	}
}

func (e *env) log(topic string) *log.Log {
	e.t.Helper()
	l, err := e.m.Open(topic, 0, e.cfg)
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	return l
}

func (e *env) append(l *log.Log, b []byte) log.AppendResult {
	e.t.Helper()
	res, err := l.Append(b, log.AppendOptions{Now: e.clock.Now()})
	if err != nil {
		e.t.Fatalf("Append: %v", err)
	}
	return res
}

func kv(k, v string) batch.KV {
	var val []byte
	if v != "\x00" {
		val = []byte(v)
	}
	return batch.KV{Key: []byte(k), Value: val}
}

const tomb = "\x00"

// rec is one record read back from a log.
type rec struct {
	off     int64
	ts      int64
	key     string
	value   *string
	headers []batch.RecordHeader
}

// readAll reads the whole log from offset from, checking that batch and
// record offsets increase strictly and every batch is valid.
func readAll(t testing.TB, l *log.Log, from int64) ([]rec, []batch.Header) {
	t.Helper()
	var out []rec
	var hdrs []batch.Header
	last := int64(-1)
	for off := from; off < l.LogEndOffset(); {
		data, err := l.ReadBytes(off, 1<<20)
		if err != nil {
			t.Fatalf("ReadBytes(%d): %v", off, err)
		}
		if len(data) == 0 {
			t.Fatalf("ReadBytes(%d) empty below LEO %d", off, l.LogEndOffset())
		}
		bs, err := batch.Split(data)
		if err != nil {
			t.Fatalf("Split: %v", err)
		}
		for _, b := range bs {
			if err := batch.Validate(b, batch.ValidateOptions{FromLog: true, CheckRecords: true}); err != nil {
				t.Fatalf("invalid batch in log: %v", err)
			}
			h, _ := batch.ParseHeader(b)
			if h.BaseOffset <= last && h.LastOffset() >= off {
				t.Fatalf("batch offsets go backwards: base %d after %d", h.BaseOffset, last)
			}
			rs, err := batch.Records(b, 0)
			if err != nil {
				t.Fatalf("Records: %v", err)
			}
			for i := range rs {
				r := &rs[i]
				o := h.Offset(r)
				if o < off {
					continue // before the fetch offset, as a client skips it
				}
				if o <= last {
					t.Fatalf("record offset %d not above %d", o, last)
				}
				last = o
				x := rec{off: o, ts: h.Timestamp(r), key: string(r.Key), headers: r.Headers}
				if r.Value != nil {
					v := string(r.Value)
					x.value = &v
				}
				out = append(out, x)
			}
			if h.LastOffset() >= off {
				hdrs = append(hdrs, h)
			}
			off = max(off, h.LastOffset()+1)
			last = max(last, h.LastOffset())
		}
	}
	return out, hdrs
}

func mustRun(t testing.TB, c *Cleaner) (PassResult, bool) {
	t.Helper()
	res, did, err := c.RunOnce()
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	return res, did
}
