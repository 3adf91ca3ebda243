package broker

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// gateFS wraps an FS so that syncs of partition .log files can be held
// (outside the inner FS's locks) and failed, and counts them.
type gateFS struct {
	vfs.FS
	mu    sync.Mutex
	gate  chan struct{} // non-nil: .log syncs wait for it to close
	held  chan struct{} // closed when a sync starts waiting on gate
	fail  atomic.Bool
	syncs atomic.Int32
}

func (g *gateFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &gateFile{File: f, g: g}, nil
}

type gateFile struct {
	vfs.File
	g *gateFS
}

func (f *gateFile) Sync() error {
	f.g.mu.Lock()
	gate, held := f.g.gate, f.g.held
	f.g.gate, f.g.held = nil, nil // only the first sync is held
	f.g.mu.Unlock()
	if gate != nil {
		close(held)
		<-gate
	}
	f.g.syncs.Add(1)
	if f.g.fail.Load() {
		return syscall.EIO
	}
	return f.File.Sync()
}

func durableBatch(t *testing.T) *kmsg.ProduceRequest {
	return dpProduceReq("durable", 0, dpBatch(t, -1, -1, -1, 3))
}

// With flush.messages=1 a produce is answered only after its fsync, but
// the connection does not wait for it: the next pipelined request is
// appended while the first fsync is in progress, and answers keep their
// order.
func TestDurableProducePipelines(t *testing.T) {
	g := &gateFS{FS: vfs.NewMemFS()}
	s := dpStartServer(t, t.TempDir(), g)
	defer s.srv.Close()
	tb := s.tb(t)
	dpTopic(t, tb, "durable", 1, map[string]*string{"flush.messages": strp("1")})
	l := s.srv.Broker().logs.Get("durable", 0)

	g.mu.Lock()
	g.gate, g.held = make(chan struct{}), make(chan struct{})
	gate, held := g.gate, g.held
	g.mu.Unlock()
	var open sync.Once
	openGate := func() { open.Do(func() { close(gate) }) }
	defer openGate() // before the server closes, even when the test fails

	rc := tb.raw()
	req := durableBatch(t)
	req.Version = 9
	rc.send(req, 1)
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the first produce never reached its fsync")
	}
	rc.send(req, 2)
	waitFor(t, "the second produce appended while the first fsync is held", func() bool {
		return l.LogEndOffset() == 6
	})
	openGate()
	for i, want := range []int64{0, 3} {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		if corr := rc.recv(resp); corr != int32(i+1) {
			t.Fatalf("answer %d has correlation id %d", i, corr)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != want {
			t.Fatalf("answer %d: code %d base offset %d, want 0 and %d", i, p.ErrorCode, p.BaseOffset, want)
		}
	}
}

// A failed fsync answers KAFKA_STORAGE_ERROR, not success.
func TestDurableProduceSyncFailure(t *testing.T) {
	g := &gateFS{FS: vfs.NewMemFS()}
	s := dpStartServer(t, t.TempDir(), g)
	defer s.srv.Close()
	tb := s.tb(t)
	dpTopic(t, tb, "durable", 1, map[string]*string{"flush.messages": strp("1")})
	if p := dpProduce(t, tb, durableBatch(t)); p.ErrorCode != 0 {
		t.Fatalf("first produce: %d", p.ErrorCode)
	}
	before := g.syncs.Load()
	g.fail.Store(true)
	p := dpProduce(t, tb, durableBatch(t))
	if p.ErrorCode != kerr.KafkaStorageError.Code || p.BaseOffset != -1 {
		t.Fatalf("produce with a failing fsync: code %d base offset %d, want KAFKA_STORAGE_ERROR and -1", p.ErrorCode, p.BaseOffset)
	}
	if g.syncs.Load() == before {
		t.Fatal("no fsync was attempted")
	}
}
