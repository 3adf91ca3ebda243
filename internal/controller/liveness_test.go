package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// fakeProber answers probes from a table; a broker listed in hold waits
// for its channel before answering.
type fakeProber struct {
	mu     sync.Mutex
	answer map[int32]ProbeResult
	calls  map[int32]int
	hold   map[int32]chan struct{}
}

func (f *fakeProber) probe(_ context.Context, b metadata.BrokerRegistration) (ProbeResult, string) {
	f.mu.Lock()
	f.calls[b.ID]++
	res, hold := f.answer[b.ID], f.hold[b.ID]
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return res, "the fake prober"
}

func (f *fakeProber) count(id int32) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}

// TestControllerFencesGoneProcess: a broker whose connection ended, with no
// heartbeat since, is fenced as soon as a probe finds its process gone,
// long before its session would expire, with the records of a session
// expiry; a heartbeat after the connection ended (a reconnect), even while
// the probe runs, or a probe that finds the process alive or gets no
// answer, fences nothing.
func TestControllerFencesGoneProcess(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, l := e.active()
	const grace = 500 * time.Millisecond
	fp := &fakeProber{answer: map[int32]ProbeResult{11: ProbeGone, 12: ProbeGone, 13: ProbeGone, 14: ProbeAlive, 15: ProbeUnknown},
		calls: map[int32]int{}, hold: map[int32]chan struct{}{13: make(chan struct{})}}
	l.ctrl.SetLivenessProbe(grace, fp.probe)
	epochs := map[int32]int64{}
	for b := int32(11); b <= 15; b++ {
		r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: b, Incarnation: "i"}})
		if err != nil {
			t.Fatal(err)
		}
		epochs[b] = r.Epoch
		if hb, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: b, Epoch: r.Epoch, MetadataOffset: r.Offset}); err != nil || hb.Fenced {
			t.Fatalf("heartbeat %d: %+v %v", b, hb, err)
		}
	}
	if _, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "t", Assignments: [][]int32{{11}, {12}, {13}, {14}, {15}}}); err != nil {
		t.Fatal(err)
	}
	heartbeat := func(b int32) {
		t.Helper()
		if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: b, Epoch: epochs[b], MetadataOffset: l.store.Image().Offset}); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.advance(time.Millisecond)
	for b := int32(11); b <= 15; b++ {
		l.ctrl.ConnectionClosed(b)
	}
	e.clock.advance(time.Millisecond)
	heartbeat(12) // a reconnect: alive
	e.clock.advance(grace / 2)
	l.ctrl.step(ctx)
	l.ctrl.waitProbes()
	for b := int32(11); b <= 15; b++ {
		if n := fp.count(b); n != 0 {
			t.Fatalf("broker %d probed %d times within the grace", b, n)
		}
	}
	e.clock.advance(grace)
	l.ctrl.step(ctx)
	e.until("broker 11 fenced", func() bool { return !l.store.Image().IsLive(11) })
	e.until("broker 13's probe started", func() bool { return fp.count(13) == 1 })
	heartbeat(13) // while its probe runs
	close(fp.hold[13])
	l.ctrl.waitProbes()

	im := l.store.Image()
	b11, _ := im.Broker(11)
	if !b11.Fenced || b11.Epoch != epochs[11] {
		t.Fatalf("broker 11 after the probe: %+v", b11)
	}
	p := im.Topics["t"].Partitions[0]
	if p.Leader != metadata.NoLeader || p.LeaderEpoch != 1 || p.PartitionEpoch != 1 {
		t.Fatalf("the gone broker's partition: %+v", p)
	}
	for _, b := range []int32{12, 13, 14, 15} {
		if !im.IsLive(b) {
			t.Fatalf("broker %d fenced", b)
		}
	}
	if fp.count(12) != 0 || fp.count(14) != 1 || fp.count(15) != 1 {
		t.Fatalf("probes: %v", fp.calls)
	}
	// An alive answer clears the suspicion; no answer is asked again, and
	// the session timeout still decides.
	e.clock.advance(probeInterval)
	l.ctrl.step(ctx)
	l.ctrl.waitProbes()
	if fp.count(14) != 1 || fp.count(15) != 2 {
		t.Fatalf("probes after the interval: %v", fp.calls)
	}
	if !l.store.Image().IsLive(15) || !l.store.Image().IsLive(14) {
		t.Fatal("a broker fenced without a gone process")
	}
	// The broker that came back by heartbeat is unaffected; a registered
	// new incarnation is not fenced by its predecessor's closed connection.
	r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: 11, Incarnation: "j"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: 11, Epoch: r.Epoch, MetadataOffset: r.Offset}); err != nil {
		t.Fatal(err)
	}
	e.clock.advance(grace + probeInterval)
	l.ctrl.step(ctx)
	l.ctrl.waitProbes()
	if !l.store.Image().IsLive(11) || fp.count(11) != 1 {
		t.Fatalf("broker 11's new incarnation: live %v, probes %d", l.store.Image().IsLive(11), fp.count(11))
	}
}
