package wire

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// muteDispatcher mutes the connection after its first request.
type muteDispatcher struct {
	fakeDispatcher
	n    atomic.Int32
	mute time.Duration
}

func (d *muteDispatcher) Handle(ctx context.Context, r *Request) (kmsg.Response, error) {
	if d.n.Add(1) == 1 {
		r.Conn.Throttle(d.mute)
	}
	return d.fakeDispatcher.Handle(ctx, r)
}

func TestThrottleMutesConnection(t *testing.T) {
	const mute = 300 * time.Millisecond
	d := &muteDispatcher{mute: mute}
	_, addr, _ := startServer(t, d, Config{})
	c := dial(t, addr)
	start := time.Now()
	c.apiVersionsWorks() // answered at once, then the connection is muted
	c.apiVersionsWorks() // read only once the mute is over
	if el := time.Since(start); el < mute {
		t.Fatalf("second request answered %v after the first was sent, before the %v mute ended", el, mute)
	}
	// Another connection is not muted: its request is answered while the
	// first one's mute would still hold it.
	c2 := dial(t, addr)
	c.send(kmsg.NewPtrApiVersionsRequest(), 5)
	c2.apiVersionsWorks()
	if d.n.Load() < 3 {
		t.Fatalf("requests handled: %d", d.n.Load())
	}

	// Throttle keeps the longer mute; a nil state ignores it.
	var st ConnState
	st.Throttle(time.Hour)
	st.Throttle(time.Millisecond)
	if st.MutedFor() < 59*time.Minute {
		t.Fatalf("mute shortened: %v", st.MutedFor())
	}
	(*ConnState)(nil).Throttle(time.Second)
}
