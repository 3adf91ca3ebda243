package broker

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func partitionDirs(t *testing.T, dir, topic string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, topic+"-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestApiVersionsAdvertisesRegistry(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "1.0"
	resp := tb.request(req).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("error code %d", resp.ErrorCode)
	}
	got := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	for key, want := range map[int16][2]int16{
		3: {0, 13}, 18: {0, 5}, 19: {2, 7}, 20: {1, 6}, 32: {1, 4}, 33: {0, 2}, 37: {0, 3}, 44: {0, 1}, 60: {0, 2}, 75: {0, 0},
	} {
		if got[key] != want {
			t.Errorf("key %d (%s): got %v, want %v", key, kmsg.NameForKey(key), got[key], want)
		}
	}
	for key := range got {
		if _, ok := supported(key); !ok {
			t.Errorf("advertised key %d has no handler", key)
		}
	}
	if p, ok := got[0]; ok && p[0] != 0 {
		t.Errorf("Produce must be advertised from v0 (librdkafka), got %v", p)
	}
}

func TestApiVersionsBadSoftwareName(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	rc := tb.raw()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "-bad name", "1"
	rc.send(req, 7)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	if corr := rc.recv(resp); corr != 7 {
		t.Fatalf("correlation %d", corr)
	}
	if resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("error %d, want INVALID_REQUEST", resp.ErrorCode)
	}
}

func TestCreateTopicsAndMetadata(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"num.partitions": "3"}})
	adm := tb.admin()
	c := ctx(t)

	res, err := adm.CreateTopic(c, -1, -1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, "users")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	if res.ID == [16]byte{} || res.NumPartitions != 3 || res.ReplicationFactor != 1 {
		t.Fatalf("unexpected result %+v", res)
	}
	if got := len(partitionDirs(t, tb.opts.DataDir, "users")); got != 3 {
		t.Fatalf("%d partition dirs, want 3", got)
	}

	md, err := adm.Metadata(c, "users")
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics["users"]
	if td.Err != nil || td.ID != res.ID || len(td.Partitions) != 3 {
		t.Fatalf("metadata %+v", td)
	}
	for _, p := range td.Partitions {
		if p.Leader != 1 || p.LeaderEpoch != 0 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
			t.Fatalf("partition %+v", p)
		}
	}
	if md.Cluster == "" || md.Controller != 1 || len(md.Brokers) != 1 || md.Brokers[0].Port == 0 {
		t.Fatalf("cluster metadata %+v", md)
	}

	// Duplicate topic.
	rs, err := adm.CreateTopics(c, 1, 1, nil, "users")
	if res = rs["users"]; err != nil || !errors.Is(res.Err, kerr.TopicAlreadyExists) {
		t.Fatalf("duplicate: %v %v", err, res.Err)
	}
}

func TestCreateTopicsErrors(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	adm := tb.admin()
	c := ctx(t)
	cases := []struct {
		name       string
		topic      string
		partitions int32
		rf         int16
		configs    map[string]*string
		want       *kerr.Error
	}{
		{"shred policy", "shredded", 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("shred")}, kerr.InvalidConfig},
		{"unknown config", "unknown-config", 1, 1, map[string]*string{"no.such.config": kmsg.StringPtr("1")}, kerr.InvalidConfig},
		{"bad value", "bad-value", 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("soon")}, kerr.InvalidConfig},
		{"replication 3", "rf3", 1, 3, nil, kerr.InvalidReplicationFactor},
		{"replication 0", "rf0", 1, 0, nil, kerr.InvalidReplicationFactor},
		{"zero partitions", "p0", 0, 1, nil, kerr.InvalidPartitions},
		{"too many partitions", "p-huge", maxPartitionsPerTopic + 1, 1, nil, kerr.InvalidPartitions},
		{"illegal chars", "bad/name", 1, 1, nil, kerr.InvalidTopicException},
		{"dot", ".", 1, 1, nil, kerr.InvalidTopicException},
		{"dotdot", "..", 1, 1, nil, kerr.InvalidTopicException},
		{"too long", strings.Repeat("a", 250), 1, 1, nil, kerr.InvalidTopicException},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := adm.CreateTopics(c, tc.partitions, tc.rf, tc.configs, tc.topic)
			if err != nil {
				t.Fatal(err)
			}
			res := rs[tc.topic]
			if !errors.Is(res.Err, tc.want) {
				t.Fatalf("got %v, want %v", res.Err, tc.want)
			}
			if tc.want == kerr.InvalidConfig && res.ErrMessage == "" {
				t.Fatalf("INVALID_CONFIG without a message")
			}
			if _, ok := tb.broker().topics.Get(tc.topic); ok {
				t.Fatalf("topic %q exists after a failed create", tc.topic)
			}
			if dirs := partitionDirs(t, tb.opts.DataDir, "shredded"); len(dirs) != 0 {
				t.Fatalf("partition dirs left behind: %v", dirs)
			}
		})
	}
	// The message names the offending config.
	rs, _ := adm.CreateTopics(c, 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("shred")}, "shredded")
	res := rs["shredded"]
	if !containsAll(res.ErrMessage, "cleanup.policy") {
		t.Fatalf("message %q does not name cleanup.policy", res.ErrMessage)
	}
	md, err := adm.ListTopics(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(md) != 0 {
		t.Fatalf("topics after failed creates: %v", md.Names())
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		found := false
		for i := 0; i+len(sub) <= len(s); i++ {
			if s[i:i+len(sub)] == sub {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func TestCreateTopicsValidateOnlyAndDuplicatesInRequest(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	adm := tb.admin()
	c := ctx(t)
	rs, err := adm.ValidateCreateTopics(c, 2, 1, map[string]*string{"retention.ms": kmsg.StringPtr("1000")}, "dry")
	if err != nil || rs["dry"].Err != nil || rs["dry"].NumPartitions != 2 {
		t.Fatalf("validate only: %v %+v", err, rs["dry"])
	}
	if _, ok := tb.broker().topics.Get("dry"); ok || len(partitionDirs(t, tb.opts.DataDir, "dry")) != 0 {
		t.Fatal("validate_only created the topic")
	}
	rs, err = adm.ValidateCreateTopics(c, 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("shred")}, "dry")
	if err != nil || !errors.Is(rs["dry"].Err, kerr.InvalidConfig) {
		t.Fatalf("validate only with bad config: %v %+v", err, rs["dry"])
	}

	req := kmsg.NewPtrCreateTopicsRequest()
	for range 2 {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "twice", 1, 1
		req.Topics = append(req.Topics, rt)
	}
	resp := tb.request(req).(*kmsg.CreateTopicsResponse)
	for _, rt := range resp.Topics {
		if rt.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("duplicate in request: code %d", rt.ErrorCode)
		}
	}
	if _, ok := tb.broker().topics.Get("twice"); ok {
		t.Fatal("duplicated topic was created")
	}
}

func TestCreateTopicsReplicaAssignment(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	req := kmsg.NewPtrCreateTopicsRequest()
	for i, assign := range [][][]int32{{{1}, {1}}, {{2}}, {{1, 1}}} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = []string{"assigned", "other-node", "dup-replica"}[i]
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		for p, reps := range assign {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), reps
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := tb.request(req).(*kmsg.CreateTopicsResponse)
	want := []int16{0, kerr.InvalidReplicaAssignment.Code, kerr.InvalidReplicaAssignment.Code}
	for i, rt := range resp.Topics {
		if rt.ErrorCode != want[i] {
			t.Errorf("%s: code %d, want %d", rt.Topic, rt.ErrorCode, want[i])
		}
	}
	if tp, ok := tb.broker().topics.Get("assigned"); !ok || tp.Partitions != 2 {
		t.Fatalf("assigned topic: %+v", tp)
	}
}

func TestDeleteTopicsByNameAndID(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	adm := tb.admin()
	c := ctx(t)
	if _, err := adm.CreateTopics(c, 2, 1, nil, "by-name", "by-id"); err != nil {
		t.Fatal(err)
	}
	byID, _ := tb.broker().topics.Get("by-id")

	dr, err := adm.DeleteTopics(c, "by-name", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if dr["by-name"].Err != nil || !errors.Is(dr["missing"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("delete by name: %+v", dr)
	}

	req := kmsg.NewPtrDeleteTopicsRequest()
	for _, id := range [][16]byte{byID.ID, {1, 2, 3}} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.TopicID = id
		req.Topics = append(req.Topics, rt)
	}
	resp := tb.request(req).(*kmsg.DeleteTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "by-id" {
		t.Fatalf("delete by id: %+v", resp.Topics[0])
	}
	if resp.Topics[1].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("delete unknown id: %+v", resp.Topics[1])
	}
	for _, n := range []string{"by-name", "by-id"} {
		if _, ok := tb.broker().topics.Get(n); ok {
			t.Fatalf("%s still in metadata", n)
		}
		waitFor(t, n+" data removed from disk", func() bool { return len(partitionDirs(t, tb.opts.DataDir, n)) == 0 })
	}
	// The name can be reused, with a new id.
	res, err := adm.CreateTopic(c, 1, 1, nil, "by-id")
	if err != nil || res.Err != nil || [16]byte(res.ID) == [16]byte(byID.ID) {
		t.Fatalf("recreate: %v %+v", err, res)
	}
}

func TestDeleteTopicsDisabled(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"delete.topic.enable": "false"}})
	adm := tb.admin()
	c := ctx(t)
	adm.CreateTopic(c, 1, 1, nil, "keep")
	dr, err := adm.DeleteTopics(c, "keep")
	if err != nil || !errors.Is(dr["keep"].Err, kerr.TopicDeletionDisabled) {
		t.Fatalf("%v %+v", err, dr)
	}
}

func TestCreatePartitions(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	adm := tb.admin()
	c := ctx(t)
	adm.CreateTopic(c, 2, 1, nil, "grow")

	rs, err := adm.ValidateCreatePartitions(c, 1, "grow")
	if err != nil || rs["grow"].Err != nil {
		t.Fatalf("validate: %v %+v", err, rs)
	}
	if tp, _ := tb.broker().topics.Get("grow"); tp.Partitions != 2 {
		t.Fatal("validate_only grew the topic")
	}
	rs, err = adm.UpdatePartitions(c, 5, "grow", "nope")
	if err != nil || rs["grow"].Err != nil || !errors.Is(rs["nope"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("grow: %v %+v", err, rs)
	}
	if tp, _ := tb.broker().topics.Get("grow"); tp.Partitions != 5 || len(partitionDirs(t, tb.opts.DataDir, "grow")) != 5 {
		t.Fatalf("after grow: %d partitions, %d dirs", tp.Partitions, len(partitionDirs(t, tb.opts.DataDir, "grow")))
	}
	for _, n := range []int{5, 3} {
		rs, err = adm.UpdatePartitions(c, n, "grow")
		if err != nil || !errors.Is(rs["grow"].Err, kerr.InvalidPartitions) {
			t.Fatalf("to %d: %v %+v", n, err, rs)
		}
	}
	md, _ := adm.Metadata(c, "grow")
	if len(md.Topics["grow"].Partitions) != 5 {
		t.Fatalf("metadata shows %d partitions", len(md.Topics["grow"].Partitions))
	}
}

func TestMetadataAutoCreate(t *testing.T) {
	c := ctx(t)
	t.Run("enabled", func(t *testing.T) {
		tb := startTestBroker(t, testOptions{Props: map[string]string{"num.partitions": "2"}})
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		for _, n := range []string{"auto", "bad name!"} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		}
		resp := tb.request(req).(*kmsg.MetadataResponse)
		if got := resp.Topics[0]; got.ErrorCode != 0 || len(got.Partitions) != 2 || got.TopicID == [16]byte{} {
			t.Fatalf("auto-created: %+v", got)
		}
		if got := resp.Topics[1]; got.ErrorCode != kerr.InvalidTopicException.Code {
			t.Fatalf("illegal name: code %d", got.ErrorCode)
		}
		// Not allowed by the request.
		req.AllowAutoTopicCreation = false
		req.Topics = req.Topics[:1]
		req.Topics[0].Topic = kmsg.StringPtr("not-allowed")
		resp = tb.request(req).(*kmsg.MetadataResponse)
		if resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("disallowed auto-create: code %d", resp.Topics[0].ErrorCode)
		}
		// By topic id.
		auto, _ := tb.broker().topics.Get("auto")
		req.Topics[0] = kmsg.NewMetadataRequestTopic()
		req.Topics[0].TopicID = auto.ID
		resp = tb.request(req).(*kmsg.MetadataResponse)
		if resp.Topics[0].ErrorCode != 0 || *resp.Topics[0].Topic != "auto" {
			t.Fatalf("by id: %+v", resp.Topics[0])
		}
	})
	t.Run("disabled", func(t *testing.T) {
		tb := startTestBroker(t, testOptions{Props: map[string]string{"auto.create.topics.enable": "false"}})
		md, err := tb.admin().Metadata(c, "nope")
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(md.Topics["nope"].Err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("got %v", md.Topics["nope"].Err)
		}
	})
}

func TestDescribeCluster(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	req := kmsg.NewPtrDescribeClusterRequest()
	resp := tb.request(req).(*kmsg.DescribeClusterResponse)
	if resp.ErrorCode != 0 || resp.ClusterID != tb.broker().ClusterID() || resp.ControllerID != 1 ||
		len(resp.Brokers) != 1 || resp.Brokers[0].Port != int32(tb.srv.Addr().(*net.TCPAddr).Port) {
		t.Fatalf("%+v", resp)
	}
	if len(resp.ClusterID) != 22 {
		t.Fatalf("cluster id %q is not a 22-char base64url uuid", resp.ClusterID)
	}
	req.EndpointType = 2
	resp = tb.request(req).(*kmsg.DescribeClusterResponse)
	if resp.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Fatalf("controllers endpoint: code %d", resp.ErrorCode)
	}
}

func TestDescribeTopicPartitionsPaging(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	adm := tb.admin()
	c := ctx(t)
	adm.CreateTopic(c, 3, 1, nil, "a")
	adm.CreateTopic(c, 2, 1, nil, "b")

	type tp struct {
		topic string
		p     int32
	}
	var got []tp
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for range 10 {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = 2
		req.Cursor = cursor
		for _, n := range []string{"b", "a"} {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = n
			req.Topics = append(req.Topics, rt)
		}
		resp := tb.request(req).(*kmsg.DescribeTopicPartitionsResponse)
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				t.Fatalf("%s: code %d", *rt.Topic, rt.ErrorCode)
			}
			for _, p := range rt.Partitions {
				got = append(got, tp{*rt.Topic, p.Partition})
			}
		}
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	want := []tp{{"a", 0}, {"a", 1}, {"a", 2}, {"b", 0}, {"b", 1}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "missing"
	req.Topics = append(req.Topics, rt)
	resp := tb.request(req).(*kmsg.DescribeTopicPartitionsResponse)
	if resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("missing topic: code %d", resp.Topics[0].ErrorCode)
	}
}

var _ = kadm.NewClient
var _ = os.Stat

func TestAdminRequestValidation(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	adm := tb.admin()
	c := ctx(t)
	adm.CreateTopic(c, 1, 1, nil, "v")
	v, _ := tb.broker().topics.Get("v")

	// DeleteTopics v6: name and id together, neither, or the same topic twice.
	dt := kmsg.NewPtrDeleteTopicsRequest()
	for _, tc := range []struct {
		name *string
		id   [16]byte
	}{{kmsg.StringPtr("v"), v.ID}, {nil, [16]byte{}}, {kmsg.StringPtr("v"), [16]byte{}}, {nil, v.ID}} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic, rt.TopicID = tc.name, tc.id
		dt.Topics = append(dt.Topics, rt)
	}
	dresp := tb.request(dt).(*kmsg.DeleteTopicsResponse)
	for i, rt := range dresp.Topics {
		if rt.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("delete entry %d: code %d, want INVALID_REQUEST", i, rt.ErrorCode)
		}
	}
	if _, ok := tb.broker().topics.Get("v"); !ok {
		t.Fatal("topic deleted by an invalid request")
	}

	// CreatePartitions: assignment count mismatch, foreign broker, duplicate topic.
	cp := kmsg.NewPtrCreatePartitionsRequest()
	for _, a := range [][][]int32{{{1}, {1}}, {{5}}} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "v", 2
		for _, reps := range a {
			rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: reps})
		}
		cp.Topics = append(cp.Topics, rt)
	}
	cpresp := tb.request(cp).(*kmsg.CreatePartitionsResponse)
	for _, rt := range cpresp.Topics {
		if rt.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("duplicate topic in CreatePartitions: code %d", rt.ErrorCode)
		}
	}
	for i, a := range [][][]int32{{{1}, {1}}, {{5}}} {
		cp := kmsg.NewPtrCreatePartitionsRequest()
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "v", 2
		for _, reps := range a {
			rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: reps})
		}
		cp.Topics = append(cp.Topics, rt)
		resp := tb.request(cp).(*kmsg.CreatePartitionsResponse)
		if resp.Topics[0].ErrorCode != kerr.InvalidReplicaAssignment.Code {
			t.Errorf("assignment %d: code %d", i, resp.Topics[0].ErrorCode)
		}
	}
	if tp, _ := tb.broker().topics.Get("v"); tp.Partitions != 1 {
		t.Fatalf("invalid CreatePartitions changed the topic to %d partitions", tp.Partitions)
	}

	// IncrementalAlterConfigs: duplicate key, unknown op.
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, cfgs := range [][]kmsg.IncrementalAlterConfigsRequestResourceConfig{
		{{Name: "retention.ms", Value: kmsg.StringPtr("1")}, {Name: "retention.ms", Value: kmsg.StringPtr("2")}},
	} {
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.Configs = kmsg.ConfigResourceTypeTopic, "v", cfgs
		ia.Resources = append(ia.Resources, res)
	}
	iresp := tb.request(ia).(*kmsg.IncrementalAlterConfigsResponse)
	if iresp.Resources[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("duplicate config key: code %d", iresp.Resources[0].ErrorCode)
	}
	ia.Resources[0].Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Op: 9, Value: kmsg.StringPtr("1")}}
	iresp = tb.request(ia).(*kmsg.IncrementalAlterConfigsResponse)
	if iresp.Resources[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("unknown op: code %d", iresp.Resources[0].ErrorCode)
	}
	if tp, _ := tb.broker().topics.Get("v"); len(tp.Configs) != 0 {
		t.Fatalf("rejected alters changed configs: %v", tp.Configs)
	}
}

// Without an authorizer the cluster's authorized operations are exactly the
// cluster resource's (as Kafka reports them): CREATE, CLUSTER_ACTION,
// DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE — no
// token operations, which kafka-python cannot decode for a cluster.
func TestClusterAuthorizedOperations(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	req := kmsg.NewPtrMetadataRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp := dpRaw(t, tb, req, 8).(*kmsg.MetadataResponse)
	const want = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
	if resp.AuthorizedOperations != want {
		t.Fatalf("cluster authorized operations %b, want %b", resp.AuthorizedOperations, want)
	}
}
