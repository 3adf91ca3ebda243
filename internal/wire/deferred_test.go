package wire

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// deferDispatcher answers CreateTopics (a barrier key) with a *Deferred
// response whose Wait blocks until release is closed, then fails if the
// topic is named "fail"; Metadata (also a barrier here) answers at once and
// records that it ran.
type deferDispatcher struct {
	release  chan struct{}
	waiting  chan struct{} // closed when the first Wait has started
	metadata chan int32    // ControllerID of every Metadata handled
}

func (d *deferDispatcher) Versions(key int16) (int16, int16, bool) {
	switch key {
	case 3:
		return 0, 12, true
	case 19:
		return 2, 7, true
	}
	return 0, 0, false
}

func (d *deferDispatcher) Concurrent(int16) bool { return false }

func (d *deferDispatcher) Handle(_ context.Context, r *Request) (kmsg.Response, error) {
	switch req := r.Body.(type) {
	case *kmsg.CreateTopicsRequest:
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		name := req.Topics[0].Topic
		return &Deferred{Response: resp, Wait: func() error {
			if name == "first" {
				close(d.waiting)
			}
			<-d.release
			if name == "fail" {
				return errors.New("sync failed")
			}
			resp.ThrottleMillis = 7 // changed by Wait: must reach the client
			return nil
		}}, nil
	case *kmsg.MetadataRequest:
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.ControllerID = int32(len(d.metadata) + 1)
		d.metadata <- resp.ControllerID
		return resp, nil
	}
	return nil, errors.New("unexpected request")
}

// A deferred response does not hold the connection: the next request (a
// barrier) is handled while it waits, and the answers still come in request
// order, with what Wait changed.
func TestDeferredResponseLetsNextRequestRun(t *testing.T) {
	d := &deferDispatcher{release: make(chan struct{}), waiting: make(chan struct{}), metadata: make(chan int32, 4)}
	_, addr, _ := startServer(t, d, Config{})
	c := dial(t, addr)

	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = 4
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "first", NumPartitions: 1, ReplicationFactor: 1}}
	c.send(ct, 1)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	c.send(md, 2)

	select {
	case <-d.waiting:
	case <-time.After(5 * time.Second):
		t.Fatal("deferred Wait never started")
	}
	select {
	case <-d.metadata: // handled while the first request still waits
	case <-time.After(5 * time.Second):
		t.Fatal("the request after a deferred one was not handled while it waited")
	}
	close(d.release)

	corr, body, err := c.recv(0)
	if err != nil || corr != 1 {
		t.Fatalf("first answer: corr %d err %v (want the deferred one first)", corr, err)
	}
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.Version = 4
	if err := resp.ReadFrom(body); err != nil || resp.ThrottleMillis != 7 {
		t.Fatalf("deferred answer %+v err %v: Wait's change lost", resp, err)
	}
	corr, _, err = c.recv(1)
	if err != nil || corr != 2 {
		t.Fatalf("second answer: corr %d err %v", corr, err)
	}
}

// A Wait error closes the connection, after the answers before it.
func TestDeferredWaitErrorClosesConnection(t *testing.T) {
	d := &deferDispatcher{release: make(chan struct{}), waiting: make(chan struct{}), metadata: make(chan int32, 4)}
	close(d.release)
	_, addr, logs := startServer(t, d, Config{})
	c := dial(t, addr)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	c.send(md, 1)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = 4
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "fail", NumPartitions: 1, ReplicationFactor: 1}}
	c.send(ct, 2)
	if corr, _, err := c.recv(1); err != nil || corr != 1 {
		t.Fatalf("answer before the failure: corr %d err %v", corr, err)
	}
	c.expectClosed()
	waitLog(t, logs, "sync failed")
}

func waitLog(t *testing.T, logs *logBuf, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("log never mentioned %q:\n%s", want, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
