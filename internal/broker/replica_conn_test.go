package broker

import (
	"context"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

// A replica fetcher's connection refuses answers that do not match its
// request (another correlation id, a size over its limit, a cut body) with
// an error that says so, drops the connection, and dials again for the next
// request.
func TestReplicaConnRejectsBadAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	// Each connection answers ApiVersions, then its Fetch with the next
	// of these answers (given the request's correlation id).
	bad := []func(corr int32) []byte{
		func(corr int32) []byte { return binary.BigEndian.AppendUint32(be32(4), uint32(corr+1)) },
		func(int32) []byte { return be32(200 << 20) },
		func(corr int32) []byte { return binary.BigEndian.AppendUint32(be32(100), uint32(corr)) },
	}
	go func() {
		for _, answer := range bad {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			serveOne(c, answer)
			c.Close()
		}
	}()
	rc := newReplicaConn(&interBroker{}, ln.Addr().String(), "test", 100<<20)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, want := range []string{"correlation id", "over the fetcher's limit", "EOF"} {
		_, frame, err := rc.request(ctx, kmsg.NewPtrFetchRequest(), 5*time.Second)
		frame.Release()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("bad answer %d: error %v, want one saying %q", i, err, want)
		}
		if rc.conn != nil {
			t.Fatalf("bad answer %d: the connection stays open", i)
		}
	}
}

func be32(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

// serveOne answers one ApiVersions (Fetch up to v11) and writes answer for
// the Fetch that follows.
func serveOne(c net.Conn, answer func(corr int32) []byte) {
	for i := range 2 {
		f, err := wire.ReadFrame(c, 1<<20)
		if err != nil || len(f) < 8 {
			return
		}
		corr := int32(binary.BigEndian.Uint32(f[4:]))
		if i == 1 {
			c.Write(answer(corr))
			return
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 3
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: kmsg.Fetch.Int16(), MaxVersion: 11}}
		body := resp.AppendTo(binary.BigEndian.AppendUint32(nil, uint32(corr)))
		c.Write(append(be32(uint32(len(body))), body...))
	}
}
