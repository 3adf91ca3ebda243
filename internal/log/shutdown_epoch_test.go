package log

import (
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// The clean-shutdown marker carries the broker epoch set before Close;
// the next OpenManager reports it, and -1 after a crash (no marker) or when
// none was set.
func TestCleanShutdownBrokerEpoch(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	e.log()
	if got := e.m.PreviousBrokerEpoch(); got != -1 {
		t.Fatalf("first start: previous broker epoch %d, want -1", got)
	}
	e.m.SetBrokerEpoch(42)
	e.restart()
	if got := e.m.PreviousBrokerEpoch(); got != 42 {
		t.Fatalf("after a clean shutdown with epoch 42: %d", got)
	}
	e.restart() // no epoch set this time
	if got := e.m.PreviousBrokerEpoch(); got != -1 {
		t.Fatalf("after a clean shutdown without an epoch: %d, want -1", got)
	}
	e.m.SetBrokerEpoch(43)
	e.crash(vfs.CrashOptions{})
	if got := e.m.PreviousBrokerEpoch(); got != -1 {
		t.Fatalf("after a crash: %d, want -1", got)
	}
}
