package node

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Leaders asks every running, unpaused node for the metadata of the given
// topics and returns the leader (node id) of each partition, "topic/p",
// as most nodes name it (partitions without a leader are left out).
func (c *Cluster) Leaders(ctx context.Context, topics ...string) map[string]int {
	votes := map[string]map[int]int{}
	for _, n := range c.Nodes {
		if !n.Running() || n.Paused() {
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.Listen), kgo.RequestRetries(0), kgo.DialTimeout(time.Second))
		if err != nil {
			continue
		}
		req := kmsg.NewPtrMetadataRequest()
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		kr, err := cl.SeedBrokers()[0].Request(qctx, req)
		cancel()
		cl.Close()
		if err != nil {
			continue
		}
		for _, t := range kr.(*kmsg.MetadataResponse).Topics {
			if t.Topic == nil || t.ErrorCode != 0 {
				continue
			}
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 {
					continue
				}
				k := PartitionKey(*t.Topic, p.Partition)
				if votes[k] == nil {
					votes[k] = map[int]int{}
				}
				votes[k][int(p.Leader)]++
			}
		}
	}
	out := map[string]int{}
	for k, vs := range votes {
		best := -1
		ids := make([]int, 0, len(vs))
		for id := range vs {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		for _, id := range ids {
			if best < 0 || vs[id] > vs[best] {
				best = id
			}
		}
		out[k] = best
	}
	return out
}

// PartitionKey names a partition as the history does: "topic/p".
func PartitionKey(topic string, p int32) string {
	return topic + "/" + strconv.Itoa(int(p))
}
