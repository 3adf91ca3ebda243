package main

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// topicSizeTimeout bounds the DescribeLogDirs of one broker, so that a dead
// broker delays "topic describe" by at most this much.
const topicSizeTimeout = 10 * time.Second

// topicSizes asks each broker holding a replica of the topic for its log
// dirs (DescribeLogDirs per broker, in parallel) and returns one replica's
// size per partition: the leader's when it answered, else any replica's. A
// broker that is down or fails leaves out only its own replicas.
func topicSizes(ctx context.Context, adm *kadm.Client, name string, t kadm.TopicDetail) map[int32]int64 {
	set := kadm.TopicsSet{}
	set.Add(name, t.Partitions.Numbers()...)
	brokers := map[int32]bool{}
	for _, p := range t.Partitions {
		for _, r := range p.Replicas {
			brokers[r] = true
		}
		if p.Leader >= 0 {
			brokers[p.Leader] = true
		}
	}
	var (
		mu         sync.Mutex
		wg         sync.WaitGroup
		sizes      = map[int32]int64{}
		fromLeader = map[int32]bool{}
	)
	for b := range brokers {
		wg.Go(func() {
			bctx, cancel := context.WithTimeout(ctx, topicSizeTimeout)
			defer cancel()
			dirs, err := adm.DescribeBrokerLogDirs(bctx, b, set)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, ld := range dirs {
				if ld.Err != nil {
					continue
				}
				for _, p := range ld.Topics[name] {
					leader := p.Broker == t.Partitions[p.Partition].Leader
					if _, ok := sizes[p.Partition]; !ok || (leader && !fromLeader[p.Partition]) {
						sizes[p.Partition] = p.Size
						fromLeader[p.Partition] = leader
					}
				}
			}
		})
	}
	wg.Wait()
	return sizes
}
