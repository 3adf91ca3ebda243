package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A group config set through one broker of a cluster is in the metadata:
// every broker describes it and applies it to its share groups (the broker
// leading a share partition uses the group's share.auto.offset.reset
// wherever it was set); a deletion through another broker is seen
// everywhere too.
func TestClusterGroupConfigsInMetadata(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	n1, n3 := tc.nodes[0].addr, tc.nodes[2].addr

	describe := func(addr string) string {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
		req.Resources = append(req.Resources, r)
		resp := kmsg.NewPtrDescribeConfigsResponse()
		resp.Version = req.Version
		rawRequest(t, addr, req, resp)
		if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			return "error"
		}
		for _, c := range resp.Resources[0].Configs {
			if c.Name == "share.auto.offset.reset" && c.Value != nil {
				return *c.Value
			}
		}
		return "missing"
	}
	alter := func(addr string, op kmsg.IncrementalAlterConfigOp, value *string) int16 {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = 1
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "share.auto.offset.reset", op, value
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
		resp.Version = req.Version
		rawRequest(t, addr, req, resp)
		if len(resp.Resources) != 1 {
			return -1
		}
		return resp.Resources[0].ErrorCode
	}
	if got := describe(n3); got != "latest" {
		t.Fatalf("node 3 before the change: share.auto.offset.reset %q, want the default latest", got)
	}
	if code := alter(n1, kmsg.IncrementalAlterConfigOpSet, strp("earliest")); code != 0 {
		t.Fatalf("alter through node 1: error %d", code)
	}
	if got := describe(n1); got != "earliest" {
		t.Fatalf("node 1 (which answered the change) describes %q", got)
	}
	pollUntil(t, "node 3 to describe the group config", func() bool { return describe(n3) == "earliest" })
	if got := tc.nodes[2].broker().shares.GroupConfigs("sg")["share.auto.offset.reset"]; got != "earliest" {
		t.Fatalf("node 3's share groups use %q", got)
	}

	if code := alter(n3, kmsg.IncrementalAlterConfigOpDelete, nil); code != 0 {
		t.Fatalf("delete through node 3: error %d", code)
	}
	pollUntil(t, "node 1 to drop the group config", func() bool { return describe(n1) == "latest" })
}
