package group

import (
	"sync"
	"testing"
	"time"
)

// The consumer.session.timeout.ms and consumer.heartbeat.interval.ms group configs
// override the broker's settings for their group only, from a member's next heartbeat.
func TestConsumerGroupConfigs(t *testing.T) {
	var mu sync.Mutex
	cfgs := map[string]map[string]string{"g": {cfgConsumerSessionTimeout: "10000", cfgConsumerHeartbeatInterval: "2500"}}
	e := newEnv(t, Config{GroupConfigs: func(g string) map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return cfgs[g]
	}})
	e.topics.add("t", 2)
	m := &cgMember{id: "m1"}
	if r := e.cgHeartbeat("g", m, []string{"t"}, nil); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 2500 {
		t.Fatalf("g join: code %d, heartbeat interval %d ms, want 2500", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	other := &cgMember{id: "o1"}
	if r := e.cgHeartbeat("other", other, []string{"t"}, nil); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("other join: code %d, heartbeat interval %d ms, want the broker's 5000", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	// g's members expire after 10 s without a heartbeat, other's after the broker's 45 s.
	e.clock.Advance(11 * time.Second)
	if st := e.cgState("g"); st != "Empty" {
		t.Fatalf("g is %s 11 s after its member's last heartbeat (consumer.session.timeout.ms=10000)", st)
	}
	if st := e.cgState("other"); st == "Empty" {
		t.Fatal("other emptied before the broker's session timeout")
	}
	// A change applies from the next heartbeat.
	mu.Lock()
	cfgs["other"] = map[string]string{cfgConsumerHeartbeatInterval: "7000", cfgConsumerSessionTimeout: "20000"}
	mu.Unlock()
	if r := e.cgHeartbeat("other", other, nil, nil); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("other after the change: code %d, heartbeat interval %d ms, want 7000", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	e.clock.Advance(19 * time.Second)
	if st := e.cgState("other"); st == "Empty" {
		t.Fatal("other emptied before its new session timeout")
	}
	e.clock.Advance(2 * time.Second)
	if st := e.cgState("other"); st != "Empty" {
		t.Fatalf("other is %s after its new 20 s session timeout", st)
	}
}
