package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// nodeRequest sends req to one node (kgo would route a broker resource by
// its name, and "" nowhere).
func nodeRequest(t testing.TB, cl *kgo.Client, node int32, req kmsg.Request) kmsg.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := cl.Broker(int(node)).Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// alterBroker sends IncrementalAlterConfigs for one broker resource ("" is
// the cluster-wide default) to node 1.
func alterBroker(tb *testBroker, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
	tb.t.Helper()
	return alterBrokerOn(tb.t, tb.client(), 1, name, ops...)
}

func alterBrokerOn(t testing.TB, cl *kgo.Client, node int32, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeBroker, name, ops
	req.Resources = append(req.Resources, r)
	return nodeRequest(t, cl, node, req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
}

func setOp(name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
	return c
}

func deleteOp(name string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = name, kmsg.IncrementalAlterConfigOpDelete
	return c
}

// describeBroker returns the named configs of a broker resource, with
// synonyms.
func describeBroker(tb *testBroker, name string, configs ...string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	tb.t.Helper()
	return describeBrokerOn(tb.t, tb.client(), 1, name, configs...)
}

func describeBrokerOn(t testing.TB, cl *kgo.Client, node int32, name string, configs ...string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeBroker, name, configs
	req.Resources = append(req.Resources, res)
	resp := nodeRequest(t, cl, node, req).(*kmsg.DescribeConfigsResponse)
	if r := resp.Resources[0]; r.ErrorCode != 0 {
		t.Fatalf("describe broker %q: error %d %v", name, r.ErrorCode, r.ErrorMessage)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}

func errCode(t *testing.T, what string, r kmsg.IncrementalAlterConfigsResponseResource, want int16) {
	t.Helper()
	if r.ErrorCode != want {
		t.Fatalf("%s: error %d %v, want %d", what, r.ErrorCode, r.ErrorMessage, want)
	}
}

// Dynamic broker configs on a single node: validation as Kafka's, the
// precedence per-broker > cluster default > static > default with the
// sources DescribeConfigs reports, live application to the partition logs
// and the replication throttles, and durability across a restart.
func TestDynamicBrokerConfigsSingleNode(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"log.retention.ms": "3600000"}})
	c := ctx(t)
	adm := tb.admin()
	if _, err := adm.CreateTopic(c, 1, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(c, 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("5000")}, "own"); err != nil {
		t.Fatal(err)
	}
	logOf := func(topic string) int64 { return tb.broker().logs.Get(topic, 0).Config().RetentionMs }

	// Refusals.
	errCode(t, "unknown name", alterBroker(tb, "1", setOp("no.such.config", "1")), kerr.InvalidConfig.Code)
	r := alterBroker(tb, "1", setOp("log.dirs", "/x"))
	errCode(t, "static config", r, kerr.InvalidRequest.Code)
	if r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "Cannot update these configs dynamically: [log.dirs]") {
		t.Fatalf("static config message: %v", r.ErrorMessage)
	}
	errCode(t, "bad value", alterBroker(tb, "", setOp("log.retention.ms", "abc")), kerr.InvalidConfig.Code)
	errCode(t, "other broker", alterBroker(tb, "2", setOp("log.retention.ms", "1")), kerr.InvalidRequest.Code)
	errCode(t, "delete of an unset config", alterBroker(tb, "1", deleteOp("leader.replication.throttled.rate")), 0)

	// Cluster default beats static; per-broker beats the default.
	errCode(t, "default", alterBroker(tb, "", setOp("log.retention.ms", "7000")), 0)
	if got := logOf("plain"); got != 7000 {
		t.Fatalf("plain retention after the cluster default: %d", got)
	}
	if got := logOf("own"); got != 5000 {
		t.Fatalf("topic override lost to a broker default: %d", got)
	}
	lr := describeBroker(tb, "1", "log.retention.ms")["log.retention.ms"]
	if lr.Value == nil || *lr.Value != "7000" || lr.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig ||
		len(lr.ConfigSynonyms) < 2 || lr.ConfigSynonyms[1].Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("log.retention.ms with a default: %+v", lr)
	}
	errCode(t, "per broker", alterBroker(tb, "1", setOp("log.retention.ms", "8000"),
		setOp("leader.replication.throttled.rate", "1000")), 0)
	if got := logOf("plain"); got != 8000 {
		t.Fatalf("plain retention after the broker's own config: %d", got)
	}
	lr = describeBroker(tb, "1", "log.retention.ms")["log.retention.ms"]
	if lr.Source != kmsg.ConfigSourceDynamicBrokerConfig || len(lr.ConfigSynonyms) != 4 {
		t.Fatalf("log.retention.ms per broker: %+v", lr)
	}
	srcs := []kmsg.ConfigSource{kmsg.ConfigSourceDynamicBrokerConfig, kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigSourceDefaultConfig}
	for i, s := range lr.ConfigSynonyms {
		if s.Source != srcs[i] {
			t.Fatalf("synonym %d of log.retention.ms: %+v", i, s)
		}
	}
	tr, _ := adm.DescribeTopicConfigs(c, "plain")
	if rt := findConfig(t, tr, "plain", "retention.ms"); rt.Value == nil || *rt.Value != "8000" || rt.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("topic retention.ms: %+v", rt)
	}
	if q := tb.broker().replThrottles().leader; q == nil || q.rate != 1000 {
		t.Fatalf("leader throttle not applied: %+v", q)
	}
	def := describeBroker(tb, "")
	if len(def) != 1 || def["log.retention.ms"].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("describe of the cluster default: %+v", def)
	}

	// max.connections.per.ip applies to the next connection.
	// (One client, connected before: its connection stays.)
	held := tb.client()
	errCode(t, "per ip", alterBrokerOn(t, held, 1, "", setOp("max.connections.per.ip", "0")), 0)
	if tb.raw().apiVersionsOK(2 * time.Second) {
		t.Fatal("a connection was served with max.connections.per.ip=0")
	}
	errCode(t, "per ip removed", alterBrokerOn(t, held, 1, "", deleteOp("max.connections.per.ip")), 0)
	if !tb.raw().apiVersionsOK(5 * time.Second) {
		t.Fatal("no connection served after max.connections.per.ip was removed")
	}

	// validate_only changes nothing.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = true
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	res.Configs = append(res.Configs, setOp("log.retention.ms", "9000"))
	req.Resources = append(req.Resources, res)
	if r := nodeRequest(t, tb.client(), 1, req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; r.ErrorCode != 0 || logOf("plain") != 8000 {
		t.Fatalf("validate only: %+v, retention %d", r, logOf("plain"))
	}

	// Durable across a restart.
	tb.restart()
	if got := logOf("plain"); got != 8000 {
		t.Fatalf("retention after restart: %d", got)
	}
	if q := tb.broker().replThrottles().leader; q == nil || q.rate != 1000 {
		t.Fatalf("leader throttle after restart: %+v", q)
	}

	// AlterConfigs replaces the broker's whole set; deleting returns to
	// the cluster default, then to the static value.
	adm = tb.admin()
	brs, err := adm.AlterBrokerConfigsState(ctx(t), []kadm.AlterConfig{{Name: "log.retention.ms", Value: kmsg.StringPtr("9000")}}, 1)
	if err != nil || brs[0].Err != nil || logOf("plain") != 9000 || tb.broker().replThrottles().leader != nil {
		t.Fatalf("AlterConfigs: %v %+v retention %d", err, brs, logOf("plain"))
	}
	errCode(t, "delete per broker", alterBroker(tb, "1", deleteOp("log.retention.ms")), 0)
	if got := logOf("plain"); got != 7000 {
		t.Fatalf("retention after deleting the broker's own: %d", got)
	}
	errCode(t, "delete default", alterBroker(tb, "", deleteOp("log.retention.ms")), 0)
	if got := logOf("plain"); got != 3600000 {
		t.Fatalf("retention after deleting the default: %d", got)
	}
	if def := describeBroker(tb, ""); len(def) != 0 {
		t.Fatalf("cluster default after delete: %+v", def)
	}
	tb.restart()
	if got := logOf("plain"); got != 3600000 {
		t.Fatalf("retention after the last restart: %d", got)
	}
	if brs, err := tb.admin().AlterBrokerConfigs(ctx(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "node.id", Value: kmsg.StringPtr("3")}}, 1); err != nil || !errors.Is(brs[0].Err, kerr.InvalidRequest) {
		t.Fatalf("node.id: %v %+v", err, brs)
	}
}

// rawAlterBroker sends IncrementalAlterConfigs (v1) for one broker
// resource to addr.
func rawAlterBroker(t *testing.T, addr, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeBroker, name, ops
	req.Resources = append(req.Resources, r)
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.Version = 1
	rawRequest(t, addr, req, resp)
	return resp.Resources[0]
}

// TestClusterDynamicConfigsAndScram checks dynamic broker configs and SCRAM
// credentials in the cluster metadata on one three-node cluster (one
// start, one restart of node 3, to keep the test short).
func TestClusterDynamicConfigsAndScram(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	waitCluster(t, tc.admin(), "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	afterRestart := checkClusterDynamicConfigs(t, tc)
	checkClusterScram(t, tc, afterRestart) // cluster_scram_test.go; restarts node 3
}

// On a cluster, dynamic broker configs are metadata records: the
// cluster-wide default set through one node applies on every node, a
// broker's own config only on that broker, and both survive a node's
// restart (read back from the metadata log). Returns the checks to run
// once node 3 has restarted.
func checkClusterDynamicConfigs(t *testing.T, tc *testCluster) (afterRestart func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := tc.admin()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "dyn"); err != nil {
		t.Fatal(err)
	}
	retention := func(i int) int64 {
		l := tc.nodes[i].broker().logs.Get("dyn", 0)
		if l == nil {
			return 0
		}
		return l.Config().RetentionMs
	}
	pollUntil(t, "every node to have the partition", func() bool {
		return retention(0) != 0 && retention(1) != 0 && retention(2) != 0
	})

	errCode(t, "cluster default through node 2", rawAlterBroker(t, tc.nodes[1].addr, "", setOp("log.retention.ms", "7000")), 0)
	for i := range 3 {
		pollUntil(t, fmt.Sprintf("node %d to apply the default", i+1), func() bool { return retention(i) == 7000 })
	}
	errCode(t, "node 3's own throttle", rawAlterBroker(t, tc.nodes[2].addr, "3",
		setOp("follower.replication.throttled.rate", "5000"), setOp("log.retention.ms", "9000")), 0)
	pollUntil(t, "node 3 to apply its own configs", func() bool {
		q := tc.nodes[2].broker().replThrottles().follower
		return q != nil && q.rate == 5000 && retention(2) == 9000
	})
	if q := tc.nodes[0].broker().replThrottles().follower; q != nil || retention(0) != 7000 {
		t.Fatalf("node 1 took node 3's configs: throttle %+v retention %d", q, retention(0))
	}
	errCode(t, "another broker's id", rawAlterBroker(t, tc.nodes[0].addr, "3", setOp("log.retention.ms", "1")), kerr.InvalidRequest.Code)
	errCode(t, "static config", rawAlterBroker(t, tc.nodes[0].addr, "", setOp("node.id", "4")), kerr.InvalidRequest.Code)

	cl := tc.nodes[0].client()
	lr := describeBrokerOn(t, cl, 1, "1", "log.retention.ms")["log.retention.ms"]
	if lr.Value == nil || *lr.Value != "7000" || lr.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("node 1 log.retention.ms: %+v", lr)
	}

	return func() {
		pollUntil(t, "node 3 to re-apply its configs after a restart", func() bool {
			q := tc.nodes[2].broker().replThrottles().follower
			return q != nil && q.rate == 5000 && retention(2) == 9000
		})
		errCode(t, "remove the default", rawAlterBroker(t, tc.nodes[0].addr, "", deleteOp("log.retention.ms")), 0)
		pollUntil(t, "node 2 back to the default retention", func() bool { return retention(1) == 604800000 })

		// Two nodes change the cluster default at the same time: neither
		// change is lost (the controller refuses one computed from a stale set,
		// and its node computes it again).
		var wg sync.WaitGroup
		codes := make([]int16, 2)
		for i, op := range []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			setOp("log.retention.bytes", "123456789"), setOp("log.segment.bytes", "2097152")} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := kmsg.NewPtrIncrementalAlterConfigsRequest()
				req.Version = 1
				r := kmsg.NewIncrementalAlterConfigsRequestResource()
				r.ResourceType, r.Configs = kmsg.ConfigResourceTypeBroker, append(r.Configs, op)
				req.Resources = append(req.Resources, r)
				resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
				resp.Version = 1
				rc := dialRaw(t, tc.nodes[i].addr)
				defer rc.nc.Close()
				rc.send(req, 1)
				rc.recv(resp)
				codes[i] = resp.Resources[0].ErrorCode
			}()
		}
		wg.Wait()
		if codes[0] != 0 || codes[1] != 0 {
			t.Fatalf("concurrent changes of the cluster default: %v", codes)
		}
		pollUntil(t, "node 1 to describe both changes", func() bool {
			d := describeBrokerOn(t, cl, 1, "")
			return len(d) == 2
		})
	}
}
