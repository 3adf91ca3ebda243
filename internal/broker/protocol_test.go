package broker

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func TestUnsupportedApiVersionsGetsV0Error(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	rc := tb.raw()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 9
	rc.send(req, 11)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if corr := rc.recv(resp); corr != 11 {
		t.Fatalf("correlation %d", corr)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 ||
		resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MaxVersion != 5 {
		t.Fatalf("%+v", resp)
	}
}

func TestUnsupportedVersionClosesConnection(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	rc := tb.raw()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 1 // removed in Kafka 4
	rc.send(req, 1)
	rc.expectClosed()
	tb.raw().apiVersions(t)
}

func TestProduceV0Rejected(t *testing.T) {
	if _, ok := supported(int16(kmsg.Produce)); !ok {
		t.Skip("no Produce handler registered")
	}
	tb := startTestBroker(t, testOptions{})
	rc := tb.raw()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 2, 1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rc.send(req, 3)
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 2
	rc.recv(resp)
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("%+v", resp)
	}
}

func TestOversizedFrameKeepsServerUp(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"socket.request.max.bytes": "4096"}})
	rc := tb.raw()
	rc.write(binary.BigEndian.AppendUint32(nil, 4097))
	rc.expectClosed()
	tb.raw().apiVersions(t)
	if _, err := tb.admin().ListTopics(ctx(t)); err != nil {
		t.Fatal(err)
	}
}

// TestPipeliningOrder pipelines reads and barriers on one connection: every
// response must come back in request order, and a Metadata after a
// CreateTopics must see the topic.
func TestPipeliningOrder(t *testing.T) {
	// Auto-creation would hide ordering bugs.
	tb := startTestBroker(t, testOptions{Props: map[string]string{"auto.create.topics.enable": "false"}})
	rc := tb.raw()
	type sent struct {
		corr int32
		resp kmsg.Response
	}
	var all []sent
	var buf []byte
	add := func(req kmsg.Request) {
		corr := int32(len(all) + 100)
		buf = append(buf, encodeRequest(req, corr, "pipeline")...)
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		all = append(all, sent{corr, resp})
	}
	md := func(topic string) kmsg.Request {
		r := kmsg.NewPtrMetadataRequest()
		r.Version = 12
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		r.Topics = append(r.Topics, rt)
		return r
	}
	for i := range 5 {
		add(md("piped"))
		av := kmsg.NewPtrApiVersionsRequest()
		av.Version = 3
		av.ClientSoftwareName, av.ClientSoftwareVersion = "p", "1"
		add(av)
		if i == 2 {
			ct := kmsg.NewPtrCreateTopicsRequest()
			ct.Version = 7
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "piped", 2, 1
			ct.Topics = append(ct.Topics, rt)
			add(ct)
		}
	}
	rc.write(buf)
	created := false
	for _, s := range all {
		if corr := rc.recv(s.resp); corr != s.corr {
			t.Fatalf("got correlation %d, want %d", corr, s.corr)
		}
		switch r := s.resp.(type) {
		case *kmsg.CreateTopicsResponse:
			if r.Topics[0].ErrorCode != 0 {
				t.Fatalf("create: %d", r.Topics[0].ErrorCode)
			}
			created = true
		case *kmsg.MetadataResponse:
			code := r.Topics[0].ErrorCode
			if created && code != 0 || !created && code != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("metadata (created=%v): code %d", created, code)
			}
		}
	}
}

func (rc *rawConn) apiVersions(t testing.TB) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "check", "1"
	rc.send(req, 77)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	if corr := rc.recv(resp); corr != 77 || resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions on a fresh connection failed: corr %d %+v", corr, resp)
	}
}

// seedRequests returns one valid encoded request per registered key and
// version, plus a few with content, for fuzzing and mutation.
func seedRequests() [][]byte {
	var out [][]byte
	for _, s := range apiTable {
		if _, ok := supported(s.key); !ok {
			continue
		}
		for v := s.min; v <= s.max; v++ {
			req := kmsg.RequestForKey(s.key)
			req.SetVersion(v)
			out = append(out, encodeRequest(req, int32(v), "seed")[4:])
		}
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "fz", 1, 1
	rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "cleanup.policy", Value: kmsg.StringPtr("compact")}}
	ct.Topics = append(ct.Topics, rt)
	out = append(out, encodeRequest(ct, 1, "seed")[4:])
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.AllowAutoTopicCreation = true
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("fz")
	md.Topics = append(md.Topics, mt)
	out = append(out, encodeRequest(md, 2, "seed")[4:])
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ia.Version = 1
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "fz"
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "cleanup.policy", Op: 2, Value: kmsg.StringPtr("delete")}}
	ia.Resources = append(ia.Resources, res)
	out = append(out, encodeRequest(ia, 3, "seed")[4:])
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Version = 4
	dres := kmsg.NewDescribeConfigsRequestResource()
	dres.ResourceType, dres.ResourceName = kmsg.ConfigResourceTypeTopic, "fz"
	dc.Resources = append(dc.Resources, dres)
	out = append(out, encodeRequest(dc, 4, "seed")[4:])
	return out
}

func mutate(r *rand.Rand, b []byte) []byte {
	b = append([]byte(nil), b...)
	switch r.IntN(4) {
	case 0: // flip bytes after the api key/version
		for range 1 + r.IntN(4) {
			if len(b) > 4 {
				b[4+r.IntN(len(b)-4)] ^= byte(1 + r.IntN(255))
			}
		}
	case 1: // truncate
		if len(b) > 4 {
			b = b[:4+r.IntN(len(b)-4)]
		}
	case 2: // extend with junk
		for range 1 + r.IntN(16) {
			b = append(b, byte(r.IntN(256)))
		}
	case 3: // overwrite a 4-byte window with an extreme int
		if len(b) >= 12 {
			i := 8 + r.IntN(len(b)-11)
			binary.BigEndian.PutUint32(b[i:], []uint32{0xffffffff, 0x7fffffff, 0x80000000, 0}[r.IntN(4)])
		}
	}
	return b
}

// sendFrame writes body as one frame on a fresh connection and waits until
// the broker answers, closes, or a short deadline passes.
func sendFrame(t testing.TB, addr string, body []byte) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(300 * time.Millisecond))
	nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
	wire.ReadFrame(nc, 1<<30) // one response, a close, or the deadline
}

// TestMutatedRequests sends random frames and mutated valid requests of
// every registered API: no handler may panic, the broker keeps serving an
// established connection, and no goroutine is leaked.
func TestMutatedRequests(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	keeper := tb.raw()
	keeper.apiVersions(t)
	baseline := runtime.NumGoroutine()

	r := rand.New(rand.NewPCG(1, 2))
	seeds := seedRequests()
	var frames [][]byte
	for range 200 {
		junk := make([]byte, r.IntN(64))
		for i := range junk {
			junk[i] = byte(r.IntN(256))
		}
		frames = append(frames, junk)
	}
	for _, s := range seeds {
		for range 3 {
			frames = append(frames, mutate(r, s))
		}
	}
	var wg sync.WaitGroup
	work := make(chan []byte)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				sendFrame(t, tb.addr, f)
			}
		}()
	}
	for _, f := range frames {
		work <- f
	}
	close(work)
	wg.Wait()

	keeper.apiVersions(t)
	tb.raw().apiVersions(t)
	if logs := tb.logs.text(); strings.Contains(logs, "panicked") {
		t.Fatalf("a handler panicked:\n%s", logs)
	}
	waitFor(t, "connections to close", func() bool { return tb.srv.wire.NumConns() <= 2 })
	waitFor(t, "goroutines to settle", func() bool { return runtime.NumGoroutine() <= baseline+10 })
}

// FuzzRequestPath sends fuzzed frames to a running broker.
func FuzzRequestPath(f *testing.F) {
	for _, s := range seedRequests() {
		f.Add(s)
	}
	tb := startTestBroker(f, testOptions{Quiet: true})
	f.Fuzz(func(t *testing.T, body []byte) {
		sendFrame(t, tb.addr, body)
		if strings.Contains(tb.logs.text(), "panicked") {
			t.Fatalf("a handler panicked:\n%s", tb.logs.text())
		}
	})
}

// FuzzHandlers decodes fuzzed bodies for every served key and version and
// calls the handlers directly (no network), so any panic fails the fuzz.
func FuzzHandlers(f *testing.F) {
	for _, s := range seedRequests() {
		f.Add(s)
	}
	tb := startTestBroker(f, testOptions{Quiet: true})
	d := dispatcher{tb.broker()}
	f.Fuzz(func(t *testing.T, frame []byte) {
		key, version, err := wire.PeekKeyVersion(frame)
		if err != nil {
			return
		}
		min, max, ok := d.Versions(key)
		if !ok || version < min || version > max {
			return
		}
		hdr, body, err := wire.ParseRequestHeader(frame, wire.RequestHeaderVersion(key, version))
		if err != nil {
			return
		}
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if req.ReadFrom(body) != nil {
			return
		}
		c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		resp, err := d.Handle(c, &wire.Request{Header: hdr, Body: req, Size: len(frame), Received: time.Now()})
		if err == nil && resp != nil {
			resp.SetVersion(version)
			wire.AppendResponse(nil, hdr.CorrelationID, resp)
		}
	})
}

func TestListenLocalhostBindsBothFamilies(t *testing.T) {
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skip("no IPv6 loopback:", err)
	} else {
		ln.Close()
	}
	lns, err := listen("localhost:0", slogDiscard())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	if len(lns) != 2 {
		t.Fatalf("%d listeners", len(lns))
	}
	_, p4, _ := net.SplitHostPort(lns[0].Addr().String())
	_, p6, _ := net.SplitHostPort(lns[1].Addr().String())
	if p4 != p6 || !strings.HasPrefix(lns[0].Addr().String(), "127.0.0.1:") || !strings.HasPrefix(lns[1].Addr().String(), "[::1]:") {
		t.Fatalf("listeners %v %v", lns[0].Addr(), lns[1].Addr())
	}
	host, port, err := advertised("", "localhost:0", lns[0].Addr())
	if err != nil || host != "localhost" || port == 0 {
		t.Fatalf("advertised %q %d %v", host, port, err)
	}
}

func slogDiscard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
