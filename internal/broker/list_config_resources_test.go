package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// lcr lists config resources at version v as "type:name" strings.
func lcr(t *testing.T, tb *testBroker, v int16, types ...int8) ([]string, int16) {
	t.Helper()
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.ResourceTypes = types
	resp := dpRaw(t, tb, req, v).(*kmsg.ListConfigResourcesResponse)
	var out []string
	for _, r := range resp.ConfigResources {
		out = append(out, fmt.Sprintf("%d:%s", r.Type, r.Name))
	}
	return out, resp.ErrorCode
}

func TestListConfigResources(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "lcr-b", 1, nil)
	dpTopic(t, tb, "lcr-a", 1, nil)
	// A group config set on a group that does not exist lists the group.
	v := "earliest"
	if c := alterGroupConfig(t, tb, "cfg-only", "share.auto.offset.reset", &v); c != 0 {
		t.Fatalf("alter group config: %v", kerr.ErrorForCode(c))
	}
	node := fmt.Sprint(tb.broker().self())

	all, code := lcr(t, tb, 1)
	wantCode(t, "v1 all types", code, nil)
	// Kafka's order of types: groups, client metrics, broker loggers, brokers, topics.
	want := []string{"32:cfg-only", "8:" + node, "4:" + node}
	if len(all) < len(want)+2 || !slices.Equal(all[:len(want)], want) {
		t.Fatalf("v1 all types: %v", all)
	}
	for _, tp := range []string{"2:lcr-a", "2:lcr-b"} {
		if !slices.Contains(all[len(want):], tp) {
			t.Fatalf("v1 all types: %s missing from %v", tp, all)
		}
	}

	topics, code := lcr(t, tb, 1, 2)
	wantCode(t, "v1 topics", code, nil)
	if !slices.Contains(topics, "2:lcr-a") || slices.ContainsFunc(topics, func(s string) bool { return s[:2] != "2:" }) {
		t.Fatalf("v1 topics: %v", topics)
	}
	groups, code := lcr(t, tb, 1, 32, 4)
	wantCode(t, "v1 groups and brokers", code, nil)
	if !slices.Equal(groups, []string{"32:cfg-only", "4:" + node}) {
		t.Fatalf("v1 groups and brokers: %v", groups)
	}
	metrics, code := lcr(t, tb, 1, 16)
	wantCode(t, "v1 client metrics", code, nil)
	if len(metrics) != 0 {
		t.Fatalf("v1 client metrics: %v", metrics)
	}
	_, code = lcr(t, tb, 1, 2, 1) // 1 is UNKNOWN
	wantCode(t, "v1 unsupported type", code, kerr.UnsupportedVersion)

	// v0 (ListClientMetricsResources) lists client-metrics resources only.
	v0, code := lcr(t, tb, 0)
	wantCode(t, "v0", code, nil)
	if len(v0) != 0 {
		t.Fatalf("v0: %v", v0)
	}
}

// TestAuthzConfigResourcesAndLogDirs: ListConfigResources needs
// DESCRIBE_CONFIGS on the cluster, AlterReplicaLogDirs ALTER, as in Kafka.
func TestAuthzConfigResourcesAndLogDirs(t *testing.T) {
	ab := startAuthzBroker(t, nil)
	dir := ab.broker().dataDir
	alice := ab.as("alice")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	list := func() int16 {
		return send[*kmsg.ListConfigResourcesResponse](t, alice, kmsg.NewPtrListConfigResourcesRequest()).ErrorCode
	}
	move := func() int16 {
		req := kmsg.NewPtrAlterReplicaLogDirsRequest()
		req.Dirs = append(req.Dirs, arldReq(dir, "t", 0))
		resp := send[*kmsg.AlterReplicaLogDirsResponse](t, alice, req)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "list, no ACL", list(), kerr.ClusterAuthorizationFailed)
	wantCode(t, "move, no ACL", move(), kerr.ClusterAuthorizationFailed)

	ab.grant(ctx, kadm.NewACLs().Clusters().Allow("User:alice").AllowHosts("*").
		Operations(kadm.OpDescribeConfigs))
	wantCode(t, "list, DESCRIBE_CONFIGS", list(), nil)
	wantCode(t, "move, DESCRIBE_CONFIGS", move(), kerr.ClusterAuthorizationFailed)

	ab.grant(ctx, kadm.NewACLs().Clusters().Allow("User:alice").AllowHosts("*").
		Operations(kadm.OpAlter))
	wantCode(t, "move, ALTER", move(), kerr.UnknownTopicOrPartition)
}
