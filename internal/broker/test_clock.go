// A test-only clock the fault checker can jump (sluice.test.clock.control,
// docs/reliability.md): off by default, every clock below is time.Now.
//
// With sluice.test.clock.control=true the broker reads wall-clock time
// through testClock, whose offset from the real clock the metrics listener's
// /test/clock endpoint sets: GET answers the offset in milliseconds, POST
// with offset_ms=N sets it (N may be negative; 0 puts the clock back). The
// jumped clock is the one Apache Kafka reads as wall-clock time: the logs
// (LogAppendTime, segment.ms, retention.ms, flush.ms, file deletion delays),
// the transaction coordinator (transaction timeouts, transactional id
// expiry), the group coordinator (session and rebalance timeouts, offset
// retention), the log cleaner (compaction lags, tombstone retention), share
// groups (acquisition locks) and transaction markers' timestamps. Time the
// broker measures as durations (the metadata quorum's timers, broker
// sessions at the controller, request timeouts) is monotonic in Apache Kafka
// and is not jumped.
package broker

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/group"
)

// testClockControlConfig enables the jumpable clock and its endpoint.
const testClockControlConfig = "sluice.test.clock.control"

// TestClockPath is the metrics listener's path of the clock control.
const TestClockPath = "/test/clock"

// testClock is time.Now plus an offset the fault checker sets.
type testClock struct{ offset atomic.Int64 } // nanoseconds

func (c *testClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// AfterFunc waits for the real duration: a jump moves what the coordinator
// compares deadlines with, as a wall-clock step does to Kafka's timers.
func (c *testClock) AfterFunc(d time.Duration, f func()) group.Timer { return time.AfterFunc(d, f) }

// newTestClock returns the jumpable clock when cfg enables it, else nil.
func newTestClock(cfg *config.Broker) *testClock {
	if cfg == nil || !strings.EqualFold(strings.TrimSpace(cfg.Raw[testClockControlConfig]), "true") {
		return nil
	}
	return &testClock{}
}

// now is the broker's wall clock: time.Now unless the test clock is on.
func (b *Broker) now() time.Time {
	if b.clock != nil {
		return b.clock.Now()
	}
	return time.Now()
}

// groupClock is the group coordinator's clock (nil: its default).
func (b *Broker) groupClock() group.Clock {
	if b.clock != nil {
		return b.clock
	}
	return nil
}

// nowFunc is the clock to hand to a component (nil: its default, time.Now).
func (b *Broker) nowFunc() func() time.Time {
	if b.clock != nil {
		return b.clock.Now
	}
	return nil
}

// serveTestClock answers /test/clock (registered only when the clock is on).
func (c *testClock) serveHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost:
		v := r.FormValue("offset_ms")
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || ms > int64(365*24*time.Hour/time.Millisecond) || ms < -int64(365*24*time.Hour/time.Millisecond) {
			http.Error(w, fmt.Sprintf("offset_ms %q: an integer number of milliseconds, at most a year either way", v), http.StatusBadRequest)
			return
		}
		c.offset.Store(ms * int64(time.Millisecond))
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
		return
	}
	fmt.Fprintf(w, "offset_ms %d\n", c.offset.Load()/int64(time.Millisecond))
}

// installTestClock registers /test/clock on the metrics listener when the
// test clock is on (and logs loudly that it is).
func (s *Server) installTestClock(b *Broker) {
	if b.clock == nil {
		return
	}
	b.logger.Warn("test-only clock control is on (" + testClockControlConfig + "=true): " + TestClockPath + " on the metrics listener moves this broker's clock; never use it in production")
	if s.mux != nil {
		s.mux.HandleFunc(TestClockPath, b.clock.serveHTTP)
	}
}
