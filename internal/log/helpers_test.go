package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// fakeClock is a settable clock for ManagerOptions.Now.
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

type env struct {
	t     testing.TB
	fs    *vfs.MemFS
	clock *fakeClock
	m     *Manager
	cfg   Config
}

func newEnv(t testing.TB, cfg Config) *env {
	t.Helper()
	e := &env{t: t, fs: vfs.NewMemFS(), clock: newClock(), cfg: cfg}
	e.open()
	return e
}

func (e *env) opts() ManagerOptions {
	return ManagerOptions{
		Logger:               quietLogger(),
		Now:                  e.clock.Now,
		HousekeepingInterval: -1,
		ConfigFor:            func(string, int32) Config { return e.cfg },
		// A tiny descriptor cache: every test also exercises files being
		// closed when idle and reopened on use.
		MaxOpenFiles: 4,
	}
}

func (e *env) open() {
	e.t.Helper()
	m, err := OpenManager(e.fs, "/data", e.opts())
	if err != nil {
		e.t.Fatalf("OpenManager: %v", err)
	}
	e.m = m
}

// log opens topic "t" partition 0.
func (e *env) log() *Log {
	e.t.Helper()
	l, err := e.m.Open("t", 0, e.cfg)
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	return l
}

// crash simulates power loss and reopens.
func (e *env) crash(opts vfs.CrashOptions) {
	e.t.Helper()
	e.fs.Crash(opts)
	e.open()
}

// restart closes cleanly and reopens.
func (e *env) restart() {
	e.t.Helper()
	if err := e.m.Close(); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	e.open()
}

// mkBatch builds an uncompressed batch of n records with values of size
// vsize, keys "k<i>", timestamp ts, client base offset 0.
func mkBatch(t testing.TB, n, vsize int, ts int64) []byte {
	t.Helper()
	b := batch.NewBuilder()
	b.BaseTimestamp = ts
	for i := 0; i < n; i++ {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, vsize)
		b.AddAt(ts, []byte(fmt.Sprintf("k%d", i)), v)
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustAppend(t testing.TB, l *Log, recs []byte) AppendResult {
	t.Helper()
	r, err := l.Append(append([]byte(nil), recs...), AppendOptions{})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return r
}

// readAll reads every batch from offset to the end and returns their
// headers, checking CRCs and offset continuity.
func readAll(t testing.TB, l *Log, from int64) []batch.Header {
	t.Helper()
	return readAllMode(t, l, from, true)
}

// readAllMode is readAll; with dense=false offsets need only increase (the
// batch header's baseOffset is not covered by the CRC, so a flipped bit
// there yields a valid batch with a gap, which Kafka's recovery accepts
// too: compacted logs have gaps).
func readAllMode(t testing.TB, l *Log, from int64, dense bool) []batch.Header {
	t.Helper()
	var out []batch.Header
	off := from
	for off < l.LogEndOffset() {
		b, err := l.ReadBytes(off, 1<<20)
		if err != nil {
			t.Fatalf("ReadBytes(%d): %v", off, err)
		}
		if len(b) == 0 {
			t.Fatalf("ReadBytes(%d) empty before LEO %d", off, l.LogEndOffset())
		}
		for len(b) > 0 {
			h, err := batch.ParseHeader(b)
			if err != nil {
				t.Fatalf("bad batch at offset %d: %v", off, err)
			}
			whole := b[:h.TotalSize()]
			if batch.ComputeCRC(whole) != h.CRC {
				t.Fatalf("served a batch with a bad CRC at offset %d", h.BaseOffset)
			}
			if len(out) > 0 && (h.BaseOffset != out[len(out)-1].LastOffset()+1 && dense || h.BaseOffset <= out[len(out)-1].LastOffset()) {
				t.Fatalf("offsets not dense: batch %d after last %d", h.BaseOffset, out[len(out)-1].LastOffset())
			}
			out = append(out, h)
			off = h.LastOffset() + 1
			b = b[h.TotalSize():]
		}
	}
	return out
}

func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }
