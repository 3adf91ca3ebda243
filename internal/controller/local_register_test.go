package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// TestLocalRegistrationReplacesPreviousIncarnation: the broker of the
// controller's own process (a node restarted after a crash) registers a new
// incarnation at once; another process with the same id is still refused
// until the session expires.
func TestLocalRegistrationReplacesPreviousIncarnation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, l := e.active()
	r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: 1, Incarnation: "before-the-crash"}})
	if err != nil {
		t.Fatal(err)
	}
	if hb, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: 1, Epoch: r.Epoch, MetadataOffset: r.Offset}); err != nil || hb.Fenced {
		t.Fatalf("heartbeat: %+v %v", hb, err)
	}
	if _, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: 1, Incarnation: "other-process"}}); code(err) != kerr.DuplicateBrokerRegistration.Code {
		t.Fatalf("another process's registration: %v", err)
	}
	r2, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: 1, Incarnation: "after-the-crash"}, Local: true})
	if err != nil {
		t.Fatalf("the local broker's new incarnation: %v", err)
	}
	if r2.Epoch <= r.Epoch {
		t.Fatalf("new broker epoch %d, want above %d", r2.Epoch, r.Epoch)
	}
}
