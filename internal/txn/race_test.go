package txn

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/batch"
)

// gateParts is fakeParts whose WriteMarker, once armed, reports that it was
// entered and waits for release.
type gateParts struct {
	fakeParts
	armed   chan struct{} // closed by the first WriteMarker after arming
	release chan struct{}
	once    sync.Once
}

func (g *gateParts) WriteMarker(tp TopicPartition, m batch.Marker) error {
	if g.release != nil {
		g.once.Do(func() { close(g.armed) })
		<-g.release
	}
	return g.fakeParts.WriteMarker(tp, m)
}

// EndTxn answers only once the markers are written, even when the sweep
// started writing them first (between EndTxn's durable decision and its own
// completion).
func TestEndTxnWaitsForMarkersWrittenBySweep(t *testing.T) {
	parts := &gateParts{}
	c := New(Options{
		Config:       Config{NumPartitions: 5, MaxTimeoutMs: 60000, IDExpiration: time.Hour},
		Storage:      &memStore{},
		Partitions:   parts,
		IDs:          &counterIDs{next: 10},
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		NoBackground: true,
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	loadAll(t, c)
	defer c.Close()
	pid, epoch := mustInit(t, c, "tx")
	tp := TopicPartition{"a", 0}
	wantCode(t, "add", c.AddPartitions("tx", pid, epoch, []TopicPartition{tp}), nil)

	parts.armed, parts.release = make(chan struct{}), make(chan struct{})
	sweepDone := make(chan struct{})
	testHookPrepared = func() {
		go func() { c.AbortTimedOut(); close(sweepDone) }()
		<-parts.armed // the sweep is writing the marker
	}
	defer func() { testHookPrepared = nil }()

	ended := make(chan int16)
	go func() { ended <- c.EndTxn("tx", pid, epoch, true) }()
	<-parts.armed
	select {
	case code := <-ended:
		close(parts.release)
		<-sweepDone
		t.Fatalf("EndTxn answered %d before its marker was written", code)
	case <-time.After(50 * time.Millisecond): // EndTxn must still be waiting
	}
	close(parts.release)
	wantCode(t, "commit", <-ended, nil)
	<-sweepDone
	if ms := parts.take(); len(ms) != 1 || ms[0].m.Type != batch.ControlCommit {
		t.Fatalf("markers %+v", ms)
	}
	if d, _ := c.Describe("tx"); d.State != CompleteCommit {
		t.Fatalf("state %v", d.State)
	}
}

// Producers of one transactional id, a sweeper (timeouts, expiry) and an
// InitProducerId fencer run at once. Whatever interleaving: a commit that
// is acknowledged has its markers written, markers of a producer id never go
// back in epoch on a partition, and once everything stops and the timeouts
// pass nothing is left open.
func TestConcurrentEndTxnSweepAndInit(t *testing.T) {
	e := newEnv(t)
	c := e.c
	const id = "hot"
	tps := []TopicPartition{{"a", 0}, {"a", 1}, {"b", 0}}

	var markersMu sync.Mutex
	type pe struct {
		pid   int64
		epoch int16
	}
	countCommits := func(p pe) map[TopicPartition]int {
		markersMu.Lock()
		defer markersMu.Unlock()
		out := map[TopicPartition]int{}
		e.parts.mu.Lock()
		for _, r := range e.parts.markers {
			if r.m.ProducerID == p.pid && r.m.ProducerEpoch == p.epoch && r.m.Type == batch.ControlCommit {
				out[r.tp]++
			}
		}
		e.parts.mu.Unlock()
		return out
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				pid, epoch, code := c.InitProducerID(id, 10000, -1, -1)
				if code != 0 {
					continue // CONCURRENT_TRANSACTIONS: retry
				}
				for k := 0; k < 5; k++ {
					mine := tps[:1+(n+k)%len(tps)]
					if c.AddPartitions(id, pid, epoch, mine) != 0 {
						break // fenced by another producer or the sweep
					}
					before := countCommits(pe{pid, epoch})
					commit := k%2 == 0
					code := c.EndTxn(id, pid, epoch, commit)
					if code != 0 {
						break
					}
					if commit {
						after := countCommits(pe{pid, epoch})
						for _, tp := range mine {
							if after[tp] <= before[tp] {
								errs <- fmt.Errorf("commit of %d/%d acknowledged without its marker on %v", pid, epoch, tp)
								return
							}
						}
					}
				}
			}
		}()
	}
	for i := 0; i < 2000; i++ { // the sweeper, while the workers run
		e.clock.Advance(3 * time.Second)
		c.AbortTimedOut()
		c.ExpireIDs()
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Markers never go back in epoch for a producer id on a partition.
	last := map[string]int16{}
	for _, r := range e.parts.take() {
		k := fmt.Sprintf("%v/%d", r.tp, r.m.ProducerID)
		if prev, ok := last[k]; ok && r.m.ProducerEpoch < prev {
			t.Fatalf("%s: marker at epoch %d after one at %d", k, r.m.ProducerEpoch, prev)
		}
		last[k] = r.m.ProducerEpoch
	}

	// Once the timeout passes, nothing is left open.
	e.clock.Advance(time.Minute)
	c.AbortTimedOut()
	c.AbortTimedOut()
	if d, code := c.Describe(id); code == 0 {
		switch d.State {
		case Ongoing, PrepareCommit, PrepareAbort, PrepareEpochFence:
			t.Fatalf("left in %v", d.State)
		}
	} else if code != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("describe: %d", code)
	}
}

// A transactional append admitted by BeginProduce while the transaction is
// Ongoing lands before the transaction's markers: EndTxn waits for its
// release, and no append is admitted once the decision is taken.
func TestMarkersWaitForAdmittedAppends(t *testing.T) {
	e := newEnv(t)
	pid, epoch := mustInit(t, e.c, "tx")
	tp := TopicPartition{"a", 0}
	wantCode(t, "add", e.c.AddPartitions("tx", pid, epoch, []TopicPartition{tp}), nil)
	release, code := e.c.BeginProduce(pid, epoch, tp)
	wantCode(t, "begin produce", code, nil)

	ended := make(chan int16)
	go func() { ended <- e.c.EndTxn("tx", pid, epoch, false) }()
	// Wait for the decision (PrepareAbort), then check that no marker is
	// written while the append is outstanding.
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, _ := e.c.Describe("tx")
		if d.State == PrepareAbort {
			break
		}
		if d.State == CompleteAbort {
			t.Fatal("transaction completed while an admitted append was outstanding")
		}
		if time.Now().After(deadline) {
			t.Fatal("EndTxn did not reach PrepareAbort")
		}
		time.Sleep(time.Millisecond) // polling the state
	}
	if _, code := e.c.BeginProduce(pid, epoch, tp); code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("append admitted after the decision: %d", code)
	}
	select {
	case code := <-ended:
		t.Fatalf("EndTxn answered %d while an admitted append was outstanding", code)
	case <-time.After(50 * time.Millisecond): // EndTxn must still be waiting
	}
	if ms := e.parts.take(); len(ms) != 0 {
		t.Fatalf("marker written before the admitted append: %+v", ms)
	}
	release()
	release() // idempotent
	wantCode(t, "abort", <-ended, nil)
	if ms := e.parts.take(); len(ms) != 1 || ms[0].m.Type != batch.ControlAbort {
		t.Fatalf("markers %+v", ms)
	}
}
