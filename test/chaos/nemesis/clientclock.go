package nemesis

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/history"
)

// ClientClockOffset draws a client-clock fault's jump: 30 s to 10 min,
// forward only. A record stamped back in time cannot model a step back of
// the clients' clock: franz-go measures its delivery timeout from the
// record's timestamp (a time.Time whose monotonic reading moves with it),
// so such a record times out before it is sent, where a real step back
// leaves the monotonic clock alone. The end of a forward jump gives the
// brokers timestamps going back all the same.
func ClientClockOffset(pick uint64) time.Duration { return ClockOffset(pick).Abs() }

// clientClock runs a client-clock step whole: the clients' clock jumped by
// ClientClockOffset(s.Pick) for s.Duration, then back. Its operations name no
// node (the heal closes it whatever node faults were open: there are none).
func (n *Nemesis) clientClock(s Step) error {
	if n.ClientClock == nil {
		return errors.New("client-clock: no client clock to move")
	}
	off := ClientClockOffset(s.Pick)
	kind := fmt.Sprintf("client clock %+ds", int64(off/time.Second))
	rec := func(typ, f, kind string) {
		n.Rec.Record(history.Op{Process: history.NemesisProcess, Type: typ, F: f, Target: "clients", Kind: kind})
	}
	rec(history.Invoke, ClientClock, kind)
	n.ClientClock(off)
	rec(history.Info, ClientClock, kind)
	time.Sleep(s.Duration)
	rec(history.Invoke, history.FHeal, "")
	n.ClientClock(0)
	rec(history.Info, history.FHeal, "")
	return nil
}
