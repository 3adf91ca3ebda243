package broker

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// throttleHook collects the throttle times a kgo client is given.
type throttleHook struct {
	mu  sync.Mutex
	max time.Duration
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	h.max = max(h.max, d)
	h.mu.Unlock()
}

func (h *throttleHook) get() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.max
}

func setQuota(t *testing.T, adm *kadm.Client, entity kadm.ClientQuotaEntity, key string, v float64) {
	t.Helper()
	res, err := adm.AlterClientQuotas(context.Background(), []kadm.AlterClientQuotaEntry{
		{Entity: entity, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: v}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter %s: %v %+v", key, err, res)
	}
}

func TestQuotaByteRatesThrottle(t *testing.T) {
	tb := startTestBroker(t, testOptions{MetricsListen: "127.0.0.1:0"})
	ctx := dpCtx(t, 30*time.Second)
	adm := tb.admin()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "q"); err != nil {
		t.Fatal(err)
	}
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "client-id", Name: strp("slow")}}, "producer_byte_rate", 1024)
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "client-id", Name: strp("slow-consumer")}}, "consumer_byte_rate", 1024)

	// 12 KB at 1 KB/s, measured over the first 10 s windows: about 2 s of
	// throttle; the same bytes from another client id are not throttled.
	value := make([]byte, 12<<10) // random: compression must not shrink it
	rand.Read(value)
	for _, tc := range []struct {
		client    string
		throttled bool
	}{{"slow", true}, {"fast", false}} {
		h := &throttleHook{}
		cl := tb.client(kgo.ClientID(tc.client), kgo.WithHooks(h), kgo.DefaultProduceTopic("q"))
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if got := h.get(); (got > 0) != tc.throttled || got > 11*time.Second {
			t.Errorf("producer %s: throttle %v, want throttled=%v", tc.client, got, tc.throttled)
		}
	}

	for _, tc := range []struct {
		client    string
		throttled bool
	}{{"slow-consumer", true}, {"other-consumer", false}} {
		h := &throttleHook{}
		cl := tb.client(kgo.ClientID(tc.client), kgo.WithHooks(h), kgo.ConsumeTopics("q"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		n := 0
		for n < 2 {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			n += fs.NumRecords()
		}
		if got := h.get(); (got > 0) != tc.throttled {
			t.Errorf("consumer %s: throttle %v, want throttled=%v", tc.client, got, tc.throttled)
		}
	}

	// The throttle time shows in the metrics, per quota type and client.
	resp, err := http.Get("http://" + tb.srv.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`sluice_client_quota_throttle_seconds_total{client_id="slow",quota_type="produce",user=""}`,
		`sluice_client_quota_throttle_seconds_total{client_id="slow-consumer",quota_type="fetch",user=""}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(body), `client_id="fast"`) || strings.Contains(string(body), `client_id="other-consumer"`) {
		t.Errorf("unthrottled clients in the throttle metric")
	}
}

func TestQuotaRequestPercentage(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	adm := tb.admin()
	// A tiny share of one handler's time: any request exceeds it.
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "user"}}, "request_percentage", 1e-9)
	rc := tb.raw()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rc.write(encodeRequest(req, 1, "anyone"))
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 12
	rc.recv(resp)
	// Kafka bounds the request quota's throttle by one window (1 s).
	if resp.ThrottleMillis <= 0 || resp.ThrottleMillis > 1000 {
		t.Fatalf("request quota: throttle %d", resp.ThrottleMillis)
	}
	// Before KIP-219 (Metadata v5) clients do not wait by themselves: the
	// broker holds the response for the throttle time.
	old := kmsg.NewPtrMetadataRequest()
	old.Version = 5
	rc5 := tb.raw()
	start := time.Now()
	rc5.write(encodeRequest(old, 1, "anyone"))
	oldResp := kmsg.NewPtrMetadataResponse()
	oldResp.Version = 5
	rc5.recv(oldResp)
	if el := time.Since(start); oldResp.ThrottleMillis <= 0 || el < time.Duration(oldResp.ThrottleMillis)*time.Millisecond {
		t.Fatalf("v5 response after %v with throttle %d ms", el, oldResp.ThrottleMillis)
	}
	// ApiVersions is exempt.
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	rc2 := tb.raw()
	rc2.write(encodeRequest(av, 2, "anyone"))
	avr := kmsg.NewPtrApiVersionsResponse()
	avr.Version = 3
	rc2.recv(avr)
	if avr.ThrottleMillis != 0 {
		t.Fatalf("ApiVersions throttled: %d", avr.ThrottleMillis)
	}
}

func TestQuotaControllerMutations(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	ctx := dpCtx(t, 30*time.Second)
	setQuota(t, tb.admin(), kadm.ClientQuotaEntity{{Type: "client-id", Name: strp("mut")}}, "controller_mutation_rate", 1)

	create := func(version int16, name string, partitions int32) *kmsg.CreateTopicsResponse {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = version
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 10000
		rc := tb.raw()
		rc.write(encodeRequest(req, 1, "mut"))
		resp := kmsg.NewPtrCreateTopicsResponse()
		resp.Version = version
		rc.recv(resp)
		return resp
	}
	// The bucket holds 11 (1/s over 11 windows): 20 partitions go through
	// and leave the client 9 s in debt; a strict request is then refused.
	if r := create(7, "m1", 20); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("first create: %+v", r.Topics[0])
	}
	r := create(7, "m2", 1)
	if r.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || r.ThrottleMillis <= 0 ||
		r.Topics[0].ErrorMessage == nil || !strings.Contains(*r.Topics[0].ErrorMessage, "throttling quota") {
		t.Fatalf("strict create over quota: %+v %v", r, r.Topics[0].ErrorMessage)
	}
	// Before v6 the request is served and only throttled.
	if r := create(5, "m3", 1); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis <= 0 {
		t.Fatalf("permissive create over quota: %+v", r)
	}
	// Another client id has no quota.
	if _, err := tb.admin().CreateTopic(ctx, 1, 1, nil, "m4"); err != nil {
		t.Fatal(err)
	}
}
