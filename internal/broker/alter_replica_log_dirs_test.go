package broker

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// arldReq builds an AlterReplicaLogDirs request entry moving topic's
// partitions to dir.
func arldReq(dir, topic string, parts ...int32) kmsg.AlterReplicaLogDirsRequestDir {
	d := kmsg.NewAlterReplicaLogDirsRequestDir()
	d.Dir = dir
	t := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	t.Topic, t.Partitions = topic, parts
	d.Topics = append(d.Topics, t)
	return d
}

// arldCodes maps "topic/partition" to the answer's error code.
func arldCodes(resp *kmsg.AlterReplicaLogDirsResponse) map[string]int16 {
	out := map[string]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[fmt.Sprintf("%s/%d", t.Topic, p.Partition)] = p.ErrorCode
		}
	}
	return out
}

func TestAlterReplicaLogDirs(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "arld", 2, nil)
	dpProduce(t, tb, dpProduceReq("arld", 1, dpBatch(t, -1, -1, -1, 3)))
	dir := tb.broker().dataDir
	long := strings.Repeat("x", 249) // a legal topic name, too long for Kafka's future-replica directory
	dpTopic(t, tb, long, 1, nil)

	for _, v := range []int16{1, 2} {
		req := kmsg.NewPtrAlterReplicaLogDirsRequest()
		req.Dirs = append(req.Dirs,
			arldReq(dir, "arld", 0, 1, 7),                    // the current dir: no-op; 7 does not exist
			arldReq(dir, "nope", 0),                          // unknown topic
			arldReq(filepath.Join(dir, "other"), "arld2", 0), // not a configured log dir
			arldReq(dir+"/", "arld3", 0),                     // compared exactly, as Kafka does
			arldReq(dir, long, 0),
		)
		got := arldCodes(dpRaw(t, tb, req, v).(*kmsg.AlterReplicaLogDirsResponse))
		want := map[string]*kerr.Error{
			"arld/0":    nil,
			"arld/1":    nil,
			"arld/7":    kerr.UnknownTopicOrPartition,
			"nope/0":    kerr.UnknownTopicOrPartition,
			"arld2/0":   kerr.LogDirNotFound,
			"arld3/0":   kerr.LogDirNotFound,
			long + "/0": kerr.InvalidTopicException,
		}
		if len(got) != len(want) {
			t.Fatalf("v%d: %d results, want %d: %v", v, len(got), len(want), got)
		}
		for k, w := range want {
			wantCode(t, fmt.Sprintf("v%d %.20s", v, k), got[k], w)
		}
	}

	// The replica is still in the data directory, with its records.
	dreq := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = "arld", []int32{1}
	dreq.Topics = append(dreq.Topics, rt)
	d := dpRaw(t, tb, dreq, 4).(*kmsg.DescribeLogDirsResponse)
	if len(d.Dirs) != 1 || d.Dirs[0].Dir != dir || len(d.Dirs[0].Topics) != 1 || d.Dirs[0].Topics[0].Partitions[0].Size <= 0 {
		t.Fatalf("after the move: %+v", d.Dirs)
	}
}
