// DescribeLogDirs (key 35), v1–v5 (Apache Kafka 4.4's range; v5's IsCordoned is
// false: Sluice has no cordoned log dirs).
//
// Sluice has one log directory, the data directory: the answer lists it
// (absolute path) with every partition asked for (all of them when topics
// is null) that exists, its size in bytes (segments on disk), offset lag 0
// and is_future false. v4 adds the file system's total and usable bytes
// (statfs; -1 when unknown). Unknown topics or partitions are left out, as
// Kafka does.
package broker

import (
	"context"
	"slices"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DescribeLogDirs, (*Broker).handleDescribeLogDirs) }

func (b *Broker) handleDescribeLogDirs(_ context.Context, r *wire.Request, req *kmsg.DescribeLogDirsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !b.allowedCluster(r, authz.OpDescribe) { // Kafka: DESCRIBE on the cluster
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.dataDir
	dir.TotalBytes, dir.UsableBytes = diskSpace(b.dataDir)

	addTopic := func(name string, parts []int32) {
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = name
		for _, p := range parts {
			l := b.logs.Get(name, p)
			if l == nil {
				continue
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition = p
			dp.Size = l.Size()
			dt.Partitions = append(dt.Partitions, dp)
		}
		if len(dt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, dt)
		}
	}
	if req.Topics == nil {
		byTopic := map[string][]int32{}
		var names []string
		for _, tp := range b.logs.Partitions() {
			if _, known := b.topics.Get(tp.Topic); !known {
				continue
			}
			if _, seen := byTopic[tp.Topic]; !seen {
				names = append(names, tp.Topic)
			}
			byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
		}
		slices.Sort(names)
		for _, n := range names {
			parts := byTopic[n]
			slices.Sort(parts)
			addTopic(n, parts)
		}
	} else {
		for _, t := range req.Topics {
			if _, known := b.topics.Get(t.Topic); known {
				addTopic(t.Topic, t.Partitions)
			}
		}
	}
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{dir}
	return resp, nil
}

// diskSpace returns the total and available bytes of the file system
// holding dir, or -1, -1.
func diskSpace(dir string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize)
}
