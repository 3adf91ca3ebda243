package txn

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
)

type memStore struct {
	mu      sync.Mutex
	logs    map[int32][][]byte
	failing bool
}

func (s *memStore) Append(p int32, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing {
		return errors.New("disk on fire")
	}
	if s.logs == nil {
		s.logs = make(map[int32][][]byte)
	}
	s.logs[p] = append(s.logs[p], append([]byte(nil), b...))
	return nil
}

func (s *memStore) Replay(p int32, fn func([]byte) error) error {
	s.mu.Lock()
	bs := append([][]byte(nil), s.logs[p]...)
	s.mu.Unlock()
	var all []byte
	for _, b := range bs {
		all = append(all, b...)
	}
	if len(all) == 0 {
		return nil
	}
	return fn(all)
}

type markerRec struct {
	tp TopicPartition
	m  batch.Marker
}

type fakeParts struct {
	mu      sync.Mutex
	markers []markerRec
	fail    map[TopicPartition]error
}

func (f *fakeParts) WriteMarker(tp TopicPartition, m batch.Marker) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail[tp]; err != nil {
		return err
	}
	f.markers = append(f.markers, markerRec{tp, m})
	return nil
}

func (f *fakeParts) take() []markerRec {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.markers
	f.markers = nil
	return out
}

func (f *fakeParts) setFail(tp TopicPartition, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		f.fail = make(map[TopicPartition]error)
	}
	if err == nil {
		delete(f.fail, tp)
	} else {
		f.fail[tp] = err
	}
}

type counterIDs struct {
	mu   sync.Mutex
	next int64
}

func (c *counterIDs) Next() (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	return c.next, nil
}

type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeNow) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

type env struct {
	c     *Coordinator
	store *memStore
	parts *fakeParts
	ids   *counterIDs
	clock *fakeNow
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{store: &memStore{}, parts: &fakeParts{}, ids: &counterIDs{next: 999}, clock: &fakeNow{t: time.UnixMilli(1_700_000_000_000)}}
	e.c = e.start(t)
	return e
}

// start opens a coordinator over e's storage (a restart when called again).
func (e *env) start(t *testing.T) *Coordinator {
	t.Helper()
	c := New(Options{
		Config:       Config{NumPartitions: 5, MaxTimeoutMs: 60000, IDExpiration: time.Hour},
		Storage:      e.store,
		Partitions:   e.parts,
		IDs:          e.ids,
		Now:          e.clock.Now,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		NoBackground: true,
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	loadAll(t, c)
	t.Cleanup(c.Close)
	return c
}

var errTest = errors.New("test failure")

// loadAll loads every __transaction_state partition, as a single broker
// leading all of them does at start.
func loadAll(t testing.TB, c *Coordinator) {
	t.Helper()
	for p := int32(0); p < c.Config().NumPartitions; p++ {
		if err := c.LoadPartition(p); err != nil {
			t.Fatal(err)
		}
	}
}
