package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestListPartitionReassignments(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	ctx := dpCtx(t, 10*time.Second)
	dpTopic(t, tb, "ra", 2, nil)

	all, err := tb.admin().ListPartitionReassignments(ctx, nil)
	if err != nil || len(all) != 0 {
		t.Fatalf("list all: %v %+v", err, all)
	}
	var set kadm.TopicsSet
	set.Add("ra", 0, 1)
	set.Add("nope", 0)
	named, err := tb.admin().ListPartitionReassignments(ctx, set)
	if err != nil || len(named) != 0 {
		t.Fatalf("list named: %v %+v", err, named)
	}
}

func TestAlterPartitionReassignments(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	ctx := dpCtx(t, 10*time.Second)
	dpTopic(t, tb, "ra", 2, nil)
	self := tb.broker().NodeID()

	// The current assignment is a successful no-op (through kadm).
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("ra", 0, []int32{self})
	req.Assign("ra", 1, []int32{self})
	got, err := tb.admin().AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatalf("alter: %v", err)
	}
	for p := int32(0); p < 2; p++ {
		if r := got["ra"][p]; r.Err != nil {
			t.Fatalf("ra-%d to [self]: %+v", p, r)
		}
	}

	type target struct {
		topic     string
		partition int32
		replicas  []int32
		code      int16
		msg       string
	}
	cases := []target{
		{"ra", 0, []int32{self}, 0, ""},
		{"ra", 0, nil, kerr.NoReassignmentInProgress.Code, "No partition reassignment is in progress"},
		{"ra", 0, []int32{}, kerr.InvalidReplicaAssignment.Code, "empty replica list"},
		{"ra", 0, []int32{self + 1}, kerr.InvalidReplicaAssignment.Code, "no such broker is registered"},
		{"ra", 1, []int32{self, self + 1}, kerr.InvalidReplicaAssignment.Code, "no such broker is registered"},
		{"ra", 1, []int32{self, self}, kerr.InvalidReplicaAssignment.Code, "more than once"},
		{"ra", 2, []int32{self}, kerr.UnknownTopicOrPartition.Code, "Unable to find partition ra:2"},
		{"ra", -1, []int32{self}, kerr.UnknownTopicOrPartition.Code, "Unable to find partition"},
		{"nope", 0, []int32{self}, kerr.UnknownTopicOrPartition.Code, "Unable to find a topic named nope"},
	}
	for _, tc := range cases {
		r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = tc.topic
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = tc.partition, tc.replicas
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp := tb.request(r).(*kmsg.AlterPartitionAssignmentsResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("%+v: malformed answer %+v", tc, resp)
		}
		p := resp.Topics[0].Partitions[0]
		if resp.Topics[0].Topic != tc.topic || p.Partition != tc.partition || p.ErrorCode != tc.code {
			t.Errorf("%+v: got %+v", tc, p)
			continue
		}
		if tc.code != 0 && (p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, tc.msg)) {
			t.Errorf("%+v: message %v", tc, p.ErrorMessage)
		}
	}
	// Nothing moved: the partition is still served here, nothing is listed.
	if _, _, code := tb.broker().partitionLog("ra", 1); code != 0 {
		t.Fatalf("ra-1 after refused reassignments: code %d", code)
	}
	if all, err := tb.admin().ListPartitionReassignments(ctx, nil); err != nil || len(all) != 0 {
		t.Fatalf("list after alter: %v %+v", err, all)
	}
}
