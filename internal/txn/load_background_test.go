package txn

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
)

// gatedParts holds every marker write until the gate opens, as a marker
// waiting for in-sync replicas that have not yet followed a new leader.
type gatedParts struct {
	*fakeParts
	gate chan struct{}
}

func (g gatedParts) WriteMarker(tp TopicPartition, m batch.Marker) error {
	<-g.gate
	return g.fakeParts.WriteMarker(tp, m)
}

// A broker that becomes a __transaction_state leader while applying a
// metadata change loads it without waiting for the markers of the prepared
// transactions it finds: they are written in the background (the fault
// checker found two brokers each stalled in the other's marker wait).
func TestLoadPartitionCompletingInBackground(t *testing.T) {
	e := newEnv(t)
	pid, epoch := mustInit(t, e.c, "commit-me")
	tp := TopicPartition{"a", 0}
	wantCode(t, "add", e.c.AddPartitions("commit-me", pid, epoch, []TopicPartition{tp}), nil)
	e.parts.setFail(tp, errTest)
	wantCode(t, "commit (markers fail)", e.c.EndTxn("commit-me", pid, epoch, true), nil)
	e.c.Close()
	e.parts.setFail(tp, nil)

	gate := make(chan struct{})
	c := New(Options{
		Config:       Config{NumPartitions: 5, MaxTimeoutMs: 60000, IDExpiration: time.Hour},
		Storage:      e.store,
		Partitions:   gatedParts{e.parts, gate},
		IDs:          e.ids,
		Now:          e.clock.Now,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		NoBackground: true,
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	loaded := make(chan error, 1)
	go func() {
		for p := int32(0); p < c.Config().NumPartitions; p++ {
			if err := c.LoadPartitionCompletingInBackground(p); err != nil {
				loaded <- err
				return
			}
		}
		loaded <- nil
	}()
	select {
	case err := <-loaded:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		close(gate)
		t.Fatal("loading waited for the markers of a prepared transaction")
	}
	if d, _ := c.Describe("commit-me"); d.State != PrepareCommit {
		t.Fatalf("before the marker is written: %+v", d)
	}
	close(gate)
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, _ := c.Describe("commit-me")
		if d.State == CompleteCommit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the prepared transaction was not completed in the background: %+v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ms := e.parts.take(); len(ms) != 1 || ms[0].tp != tp || ms[0].m.Type != batch.ControlCommit {
		t.Fatalf("markers: %+v", ms)
	}
}
