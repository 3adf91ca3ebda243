package broker

import (
	"testing"
	"time"
)

// A broker's session with the controller: it lapses after the timeout
// counted from the send time of the last accepted heartbeat, and a renewal
// after a lapse counts only once the controller's image of that moment is
// applied (the chaos run with seed 2028: a leader isolated longer than the
// session timeout, healed, was renewed before it learned that its
// leadership had moved, and answered its old high watermark again).
func TestBrokerLease(t *testing.T) {
	var l brokerLease
	const timeout = time.Second
	lapsed := func(published uint64) bool { return l.lapsed(timeout) || published < l.need.Load() }
	if lapsed(0) {
		t.Fatal("a broker that never registered has a lapsed session")
	}
	now := time.Now()
	l.renewAt(now, timeout, 10)
	if lapsed(0) {
		t.Fatal("a fresh session is lapsed")
	}
	l.renewAt(now.Add(-2*timeout), timeout, 20) // an older send time never moves the renewal back
	if lapsed(0) {
		t.Fatal("a late answer to an older heartbeat moved the renewal back")
	}
	l.renewed.Store(now.Add(-2 * timeout).UnixNano()) // no heartbeat accepted for two timeouts
	if !lapsed(100) {
		t.Fatal("no renewal for twice the timeout, not lapsed")
	}
	l.renewAt(time.Now(), timeout, 30) // healed: the controller's image is at 30
	if !lapsed(29) {
		t.Fatal("renewed after a lapse, acting again before applying the controller's image")
	}
	if lapsed(30) {
		t.Fatal("renewed after a lapse and caught up, still lapsed")
	}
	l.renewAt(time.Now(), timeout, 50) // a renewal without a lapse asks for nothing more
	if lapsed(30) {
		t.Fatal("a renewal of a live session required a newer image")
	}
}
