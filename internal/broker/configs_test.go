package broker

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/log"
)

func findConfig(t *testing.T, rcs kadm.ResourceConfigs, resource, name string) kadm.Config {
	t.Helper()
	for _, rc := range rcs {
		if rc.Name != resource {
			continue
		}
		if rc.Err != nil {
			t.Fatalf("%s: %v", resource, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key == name {
				return c
			}
		}
	}
	t.Fatalf("%s: no config %s", resource, name)
	return kadm.Config{}
}

func TestDescribeConfigsSources(t *testing.T) {
	dir := t.TempDir()
	tb := startTestBroker(t, testOptions{DataDir: dir, Props: map[string]string{"log.retention.ms": "3600000"}})
	adm := tb.admin()
	c := ctx(t)
	adm.CreateTopic(c, 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, "cfg")

	rcs, err := adm.DescribeTopicConfigs(c, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	policy := findConfig(t, rcs, "cfg", "cleanup.policy")
	if policy.Value == nil || *policy.Value != "compact" || policy.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("cleanup.policy: %+v", policy)
	}
	if len(policy.Synonyms) == 0 {
		t.Fatalf("cleanup.policy: no synonyms (kadm asks for them)")
	}
	ret := findConfig(t, rcs, "cfg", "retention.ms")
	if ret.Value == nil || *ret.Value != "3600000" || ret.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("retention.ms: %+v", ret)
	}
	seg := findConfig(t, rcs, "cfg", "segment.bytes")
	if seg.Value == nil || *seg.Value != "1073741824" || seg.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("segment.bytes: %+v", seg)
	}

	// Documentation and types (v3+), filtered by name.
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeDocumentation = true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, "cfg", []string{"retention.ms"}
	req.Resources = append(req.Resources, res)
	resp := tb.request(req).(*kmsg.DescribeConfigsResponse)
	if got := resp.Resources[0].Configs; len(got) != 1 || got[0].Documentation == nil || *got[0].Documentation == "" ||
		got[0].ConfigType != kmsg.ConfigTypeLong {
		t.Fatalf("filtered with docs: %+v", got)
	}

	// Broker resource.
	rcs, err = adm.DescribeBrokerConfigs(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	lr := findConfig(t, rcs, "1", "log.retention.ms")
	if lr.Value == nil || *lr.Value != "3600000" || lr.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("log.retention.ms: %+v", lr)
	}

	// Errors. (Sent on a raw connection: kgo routes broker resources by id.)
	req = kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "missing"}, {kmsg.ConfigResourceTypeBroker, "2"}, {kmsg.ConfigResourceTypeTopic, "bad/name"}} {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = r.typ, r.name
		req.Resources = append(req.Resources, res)
	}
	rc := tb.raw()
	rc.send(req, 1)
	resp = kmsg.NewPtrDescribeConfigsResponse()
	resp.Version = 4
	rc.recv(resp)
	want := []int16{kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequest.Code, kerr.InvalidTopicException.Code}
	for i, r := range resp.Resources {
		if r.ErrorCode != want[i] {
			t.Errorf("%s: code %d, want %d", r.ResourceName, r.ErrorCode, want[i])
		}
	}
}

func TestIncrementalAlterConfigsLive(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	adm := tb.admin()
	c := ctx(t)
	adm.CreateTopic(c, 2, 1, nil, "live")
	logOf := func(p int32) *log.Log {
		l, _, code := tb.broker().partitionLog("live", p)
		if code != 0 {
			t.Fatalf("partition %d: code %d", p, code)
		}
		return l
	}

	// SET, applied live to every partition.
	rs, err := adm.AlterTopicConfigs(c, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("1234")},
		{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("delete")},
	}, "live")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("set: %v %+v", err, rs)
	}
	for p := int32(0); p < 2; p++ {
		if cfg := logOf(p).Config(); cfg.RetentionMs != 1234 {
			t.Fatalf("partition %d retention %d, want 1234", p, cfg.RetentionMs)
		}
	}

	// APPEND to a list config.
	rs, err = adm.AlterTopicConfigs(c, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("compact")}}, "live")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("append: %v %+v", err, rs)
	}
	if cfg := logOf(1).Config(); !cfg.Compact || !cfg.DeleteRetention {
		t.Fatalf("after append: compact=%v delete=%v", cfg.Compact, cfg.DeleteRetention)
	}
	// SUBTRACT.
	rs, _ = adm.AlterTopicConfigs(c, []kadm.AlterConfig{{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("delete")}}, "live")
	if rs[0].Err != nil {
		t.Fatalf("subtract: %+v", rs)
	}
	if cfg := logOf(0).Config(); !cfg.Compact || cfg.DeleteRetention {
		t.Fatalf("after subtract: compact=%v delete=%v", cfg.Compact, cfg.DeleteRetention)
	}

	// A rejected change (one good op, one bad) leaves everything untouched.
	before, _ := tb.broker().topics.Get("live")
	rs, _ = adm.AlterTopicConfigs(c, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("999")},
		{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("shred")},
	}, "live")
	if !errors.Is(rs[0].Err, kerr.InvalidConfig) || rs[0].ErrMessage == "" {
		t.Fatalf("bad change: %+v", rs)
	}
	after, _ := tb.broker().topics.Get("live")
	if after != before || logOf(0).Config().RetentionMs != 1234 {
		t.Fatalf("rejected change modified the config: %v", after.Configs)
	}

	// validate_only changes nothing.
	rs, _ = adm.ValidateAlterTopicConfigs(c, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("5")}}, "live")
	if rs[0].Err != nil || logOf(0).Config().RetentionMs != 1234 {
		t.Fatalf("validate only: %+v retention %d", rs, logOf(0).Config().RetentionMs)
	}

	// DELETE returns to the default.
	rs, _ = adm.AlterTopicConfigs(c, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, "live")
	if rs[0].Err != nil || logOf(0).Config().RetentionMs != 604800000 {
		t.Fatalf("delete: %+v retention %d", rs, logOf(0).Config().RetentionMs)
	}

	// Unknown topic, broker resource.
	rs, _ = adm.AlterTopicConfigs(c, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("1")}}, "missing")
	if !errors.Is(rs[0].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("missing topic: %+v", rs)
	}
	brs, err := adm.AlterBrokerConfigs(c, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.dirs", Value: kmsg.StringPtr("/x")}}, 1)
	if err != nil || !errors.Is(brs[0].Err, kerr.InvalidRequest) {
		t.Fatalf("broker alter of a static config: %v %+v", err, brs)
	}
}

func TestAlterConfigsReplacesState(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	adm := tb.admin()
	c := ctx(t)
	adm.CreateTopic(c, 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("1000"), "cleanup.policy": kmsg.StringPtr("compact")}, "state")

	rs, err := adm.AlterTopicConfigsState(c, []kadm.AlterConfig{{Name: "segment.ms", Value: kmsg.StringPtr("60000")}}, "state")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, rs)
	}
	tp, _ := tb.broker().topics.Get("state")
	if len(tp.Configs) != 1 || tp.Configs["segment.ms"] != "60000" {
		t.Fatalf("overrides after whole-state alter: %v", tp.Configs)
	}
	l, _, _ := tb.broker().partitionLog("state", 0)
	if cfg := l.Config(); cfg.Compact || cfg.RetentionMs != 604800000 || cfg.SegmentMs != 60000 {
		t.Fatalf("live config: %+v", cfg)
	}

	rs, _ = adm.AlterTopicConfigsState(c, []kadm.AlterConfig{{Name: "cleanup.policy", Value: kmsg.StringPtr("shred")}}, "state")
	if !errors.Is(rs[0].Err, kerr.InvalidConfig) {
		t.Fatalf("bad alter: %+v", rs)
	}
	rs, _ = adm.AlterTopicConfigsState(c, []kadm.AlterConfig{{Name: "cleanup.policy"}}, "state")
	if !errors.Is(rs[0].Err, kerr.InvalidRequest) {
		t.Fatalf("null value: %+v", rs)
	}
	if tp2, _ := tb.broker().topics.Get("state"); tp2 != tp {
		t.Fatalf("rejected alters changed the topic")
	}
}

func TestRestartPersistence(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	adm := tb.admin()
	c := ctx(t)
	adm.CreateTopic(c, 3, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, "kept")
	adm.CreateTopic(c, 1, 1, nil, "dropped")
	adm.UpdatePartitions(c, 4, "kept")
	adm.AlterTopicConfigs(c, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("777")}}, "kept")
	adm.DeleteTopics(c, "dropped")
	before, _ := tb.broker().topics.Get("kept")
	cluster := tb.broker().ClusterID()

	tb.restart()

	if tb.broker().ClusterID() != cluster {
		t.Fatalf("cluster id changed: %s → %s", cluster, tb.broker().ClusterID())
	}
	after, ok := tb.broker().topics.Get("kept")
	if !ok || after.ID != before.ID || after.Partitions != 4 || after.Configs["retention.ms"] != "777" ||
		after.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("after restart: %+v (before %+v)", after, before)
	}
	if _, ok := tb.broker().topics.Get("dropped"); ok {
		t.Fatal("deleted topic came back")
	}
	l, _, code := tb.broker().partitionLog("kept", 3)
	if code != 0 || l.Config().RetentionMs != 777 || !l.Config().Compact {
		t.Fatalf("partition 3 after restart: code %d", code)
	}
	md, err := tb.admin().Metadata(ctx(t), "kept")
	if err != nil || [16]byte(md.Topics["kept"].ID) != [16]byte(before.ID) {
		t.Fatalf("metadata after restart: %v %+v", err, md.Topics["kept"])
	}
}

func TestReconcileOrphansAndAdoption(t *testing.T) {
	dir := t.TempDir()
	tb := startTestBroker(t, testOptions{DataDir: dir})
	adm := tb.admin()
	adm.CreateTopic(ctx(t), 1, 1, nil, "real")
	tb.stop()

	// An orphan partition directory, as an interrupted CreateTopics leaves.
	if err := os.MkdirAll(filepath.Join(dir, "ghost-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	tb.start()
	if len(partitionDirs(t, dir, "ghost")) != 0 {
		t.Fatal("orphan partition directory not removed")
	}
	if _, ok := tb.broker().topics.Get("ghost"); ok {
		t.Fatal("orphan adopted although metadata existed")
	}
	tb.stop()

	// Without a metadata file, partition directories are adopted.
	if err := os.Remove(filepath.Join(dir, "sluice-topics.json")); err != nil {
		t.Fatal(err)
	}
	tb.start()
	if tp, ok := tb.broker().topics.Get("real"); !ok || tp.Partitions != 1 {
		t.Fatal("topic not adopted from its partition directory")
	}
}
