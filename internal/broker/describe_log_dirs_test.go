package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeLogDirs(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "ld", 2, nil)
	dpProduce(t, tb, dpProduceReq("ld", 1, dpBatch(t, -1, -1, -1, 5)))

	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = "ld", []int32{0, 1, 9}
	req.Topics = append(req.Topics, rt)
	rt2 := kmsg.NewDescribeLogDirsRequestTopic()
	rt2.Topic, rt2.Partitions = "nope", []int32{0}
	req.Topics = append(req.Topics, rt2)
	resp := dpRaw(t, tb, req, 4).(*kmsg.DescribeLogDirsResponse)
	if len(resp.Dirs) != 1 {
		t.Fatalf("%d dirs", len(resp.Dirs))
	}
	d := resp.Dirs[0]
	if d.ErrorCode != 0 || d.Dir != tb.broker().dataDir || len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 2 {
		t.Fatalf("dir %+v", d)
	}
	for _, p := range d.Topics[0].Partitions {
		if (p.Partition == 1) != (p.Size > 0) {
			t.Fatalf("partition %d size %d", p.Partition, p.Size)
		}
	}
	if resp.Version >= 4 && (d.TotalBytes <= 0 || d.UsableBytes < 0 || d.UsableBytes > d.TotalBytes) {
		t.Fatalf("disk space: total %d usable %d", d.TotalBytes, d.UsableBytes)
	}

	// All topics: ld is listed with both partitions.
	all := dpRaw(t, tb, kmsg.NewPtrDescribeLogDirsRequest(), 1).(*kmsg.DescribeLogDirsResponse)
	found := false
	for _, dt := range all.Dirs[0].Topics {
		if dt.Topic == "ld" {
			found = len(dt.Partitions) == 2
		}
	}
	if !found {
		t.Fatalf("all topics: %+v", all.Dirs[0].Topics)
	}
}
