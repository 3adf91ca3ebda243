package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestElectLeaders(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	ctx := dpCtx(t, 10*time.Second)
	dpTopic(t, tb, "el", 2, nil)

	for _, how := range []kadm.ElectLeadersHow{kadm.ElectPreferredReplica, kadm.ElectLiveReplica} {
		var set kadm.TopicsSet
		set.Add("el", 0, 1, 7)
		set.Add("nope", 0)
		got, err := tb.admin().ElectLeaders(ctx, how, set)
		if err != nil {
			t.Fatalf("elect %v: %v", how, err)
		}
		for _, p := range []int32{0, 1} {
			if r := got["el"][p]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
				t.Errorf("elect %v el-%d: %+v", how, p, r)
			}
		}
		if r := got["el"][7]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) || r.ErrMessage != "No such partition as el-7" {
			t.Errorf("elect %v el-7: %+v", how, r)
		}
		if r := got["nope"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) || r.ErrMessage != "No such topic as nope" {
			t.Errorf("elect %v nope-0: %+v", how, r)
		}
	}

	// Every version answers; null topics means all partitions, and those
	// that need no election are left out (every topic listed, empty).
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version = v
		req.Topics = nil
		rc := tb.raw()
		rc.send(req, 1)
		resp := kmsg.NewPtrElectLeadersResponse()
		resp.Version = v
		rc.recv(resp)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d all: top-level %d", v, resp.ErrorCode)
		}
		topics := map[string]int{}
		for _, rt := range resp.Topics {
			topics[rt.Topic] = len(rt.Partitions)
		}
		if n, ok := topics["el"]; !ok || n != 0 {
			t.Fatalf("v%d all: %+v", v, resp.Topics)
		}
		if n, ok := topics["__consumer_offsets"]; !ok || n != 0 {
			t.Fatalf("v%d all: internal topic missing or not empty: %+v", v, resp.Topics)
		}
	}

	// An unknown election type is an invalid request, for every partition.
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType = 5
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = "el", []int32{0, 1}
	req.Topics = append(req.Topics, rt)
	resp := tb.request(req).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != kerr.InvalidRequest.Code || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 ||
		resp.Topics[0].Partitions[1].ErrorCode != kerr.InvalidRequest.Code ||
		resp.Topics[0].Partitions[1].ErrorMessage == nil || *resp.Topics[0].Partitions[1].ErrorMessage != "Unknown election type 5" {
		t.Fatalf("unknown election type: %+v", resp)
	}
}
