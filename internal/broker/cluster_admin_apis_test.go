package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterAdminAPIsAdvertised checks that the admin APIs added for
// Kafka's tools are advertised with Apache Kafka 4.0's version ranges (from
// its message JSON specs: ACL v0 was removed in 4.0; 4.1's ListTransactions
// v2 is not served), and AlterPartitionReassignments with v1 (KIP-860,
// Kafka 4.1+; Kafka 4.4 advertises 0–1).
func TestClusterAdminAPIsAdvertised(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	resp := tb.request(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	got := make(map[int16][2]int16)
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	want := map[kmsg.Key][2]int16{
		kmsg.DescribeACLs:                 {1, 3},
		kmsg.CreateACLs:                   {1, 3},
		kmsg.DeleteACLs:                   {1, 3},
		kmsg.ElectLeaders:                 {0, 2},
		kmsg.AlterPartitionAssignments:    {0, 1},
		kmsg.ListPartitionReassignments:   {0, 0},
		kmsg.DescribeClientQuotas:         {0, 1},
		kmsg.AlterClientQuotas:            {0, 1},
		kmsg.DescribeUserSCRAMCredentials: {0, 0},
		kmsg.DescribeProducers:            {0, 0},
		kmsg.DescribeTransactions:         {0, 0},
		kmsg.ListTransactions:             {0, 2},
		kmsg.UnregisterBroker:             {0, 0},
		kmsg.UnregisterController:         {0, 0},
	}
	for key, w := range want {
		g, ok := got[int16(key)]
		if !ok {
			t.Errorf("%s not advertised", key.Name())
			continue
		}
		if g != w {
			t.Errorf("%s advertised v%d–v%d, want v%d–v%d", key.Name(), g[0], g[1], w[0], w[1])
		}
	}
}
