package broker

import (
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsOK sends ApiVersions and reports whether it was answered
// within d (false: the connection is held, or was closed).
func (rc *rawConn) apiVersionsOK(d time.Duration) bool {
	rc.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	rc.send(req, 7)
	rc.nc.SetReadDeadline(time.Now().Add(d))
	defer rc.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := rc.readFrame()
	return err == nil
}

func TestMaxConnectionsPerIP(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{
		"max.connections.per.ip":           "2",
		"max.connections.per.ip.overrides": "10.1.2.3:5",
	}})
	a, b := tb.raw(), tb.raw()
	if !a.apiVersionsOK(10*time.Second) || !b.apiVersionsOK(10*time.Second) {
		t.Fatal("connections within the limit not served")
	}
	tb.raw().expectClosed() // the third from 127.0.0.1
	a.nc.Close()
	// Once one closes, a new one is served (the close is noticed
	// asynchronously: poll).
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := tb.raw()
		if c.apiVersionsOK(5 * time.Second) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection served after one closed")
		}
		c.nc.Close()
	}
}

func TestMaxConnectionsHoldsAccept(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"listener.name.plaintext.max.connections": "1"}})
	a := tb.raw()
	if !a.apiVersionsOK(10 * time.Second) {
		t.Fatal("first connection not served")
	}
	b := tb.raw() // accepted by the kernel, not served by the broker
	if b.apiVersionsOK(300 * time.Millisecond) {
		t.Fatal("a connection above listener.name.plaintext.max.connections was served")
	}
	a.nc.Close()
	b.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := b.readFrame(); err != nil {
		t.Fatalf("held connection not served once a slot freed: %v", err)
	}
}

func TestConnectionCreationRateQuotaOfIP(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	adm := tb.admin() // connects before the quota exists
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "ip"}}, "connection_creation_rate", 1)
	// 1/s over 10 s: the burst of about ten goes through, then a connection
	// is closed (after its throttle time).
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 20; i++ {
		c := tb.raw()
		conns = append(conns, c.nc)
		if !c.apiVersionsOK(5 * time.Second) {
			if i < 9 {
				t.Fatalf("connection %d refused within the burst", i)
			}
			return
		}
	}
	t.Fatal("20 connections served at connection_creation_rate=1")
}

func TestMaxConnectionCreationRate(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"max.connection.creation.rate": "1"}})
	// 1/s measured over the first ten windows: ten connections at once are
	// within the rate, the eleventh makes it 1.1/s and waits out Kafka's
	// throttle, (1.1 − 1) / 1 × 10 s = 1 s, before it is served.
	for i := 0; i < 10; i++ {
		if !tb.raw().apiVersionsOK(10 * time.Second) {
			t.Fatalf("connection %d not served", i)
		}
	}
	start := time.Now()
	if !tb.raw().apiVersionsOK(10 * time.Second) {
		t.Fatal("the eleventh connection was not served")
	}
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Fatalf("the eleventh connection was served after %v, before its 1 s throttle", el)
	}
}
