package group

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func testStreamsRecords() map[string][]byte {
	ep := &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "h", Port: 8080}
	subs := []StreamsSubtopology{{
		SubtopologyID: "0", SourceTopics: []string{"words"}, SourceTopicRegex: []string{}, RepartitionSinkTopics: []string{"r"},
		StateChangelogTopics:    []kmsg.TopicInfo{{Topic: "c", NumPartitions: 0, ReplicationFactor: -1, Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}},
		RepartitionSourceTopics: []kmsg.TopicInfo{},
		CopartitionGroups:       []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{0}, SourceTopicRegex: []int16{}, RepartitionSourceTopics: []int16{}}},
	}}
	tasks := streamsTasks{{SubtopologyID: "0", Partitions: []int32{0, 2}}}
	return map[string][]byte{
		"topology": encodeStreamsTopologyValue(3, subs),
		"metadata": encodeStreamsMetadataValue(streamsMetadataRecord{epoch: 7, metadataHash: 99, validatedTopologyEpoch: 3,
			lastAssignmentConfigs: streamsAssignmentConfigs(1, []string{"zone"}), storedDescriptionEpoch: -1, failedDescriptionEpoch: -1}),
		"metadata-defaults": encodeStreamsMetadataValue(newStreamsMetadataRecord(2)),
		"target-metadata":   encodeStreamsTargetMetadataValue(7, 1_700_000_000_123),
		"member": encodeStreamsMemberValue(streamsMemberRecord{instanceID: kmsg.StringPtr("i"), clientID: "c", clientHost: "/1.2.3.4",
			rebalanceTimeoutMs: 30000, topologyEpoch: 3, processID: "p", endpoint: ep,
			clientTags: []kmsg.StreamsGroupHeartbeatRequestClientTag{{Key: "k", Value: "v"}}}),
		"target": encodeStreamsTargetValue(tasks, streamsTasks{{SubtopologyID: "1", Partitions: []int32{1}}}),
		"current": encodeStreamsCurrentValue(streamsCurrentRecord{epoch: 7, prevEpoch: 6, state: 1, active: tasks, revoking: tasks,
			activeEpochs: [][]int32{{5, 7}}, revokingEpochs: [][]int32{{4, 4}}}),
	}
}

func TestStreamsRecordsRoundTrip(t *testing.T) {
	recs := testStreamsRecords()
	if dir := os.Getenv("SLUICE_STREAMS_RECORDS_DIR"); dir != "" { // for a check against Kafka's decoders
		for name, v := range recs {
			if err := os.WriteFile(filepath.Join(dir, name), v, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	epoch, subs, err := decodeStreamsTopologyValue(recs["topology"])
	if err != nil || epoch != 3 || len(subs) != 1 || subs[0].StateChangelogTopics[0].Configs[0].Value != "compact" || subs[0].CopartitionGroups[0].SourceTopics[0] != 0 {
		t.Fatalf("topology: %v %d %+v", err, epoch, subs)
	}
	if md, err := decodeStreamsMetadataValue(recs["metadata"]); err != nil || md.epoch != 7 || md.metadataHash != 99 || md.validatedTopologyEpoch != 3 ||
		fmt.Sprint(md.lastAssignmentConfigs) != "[[num.standby.replicas 1] [rack.aware.assignment.tags zone]]" || md.storedDescriptionEpoch != -1 {
		t.Fatalf("metadata: %v %+v", err, md)
	}
	if md, err := decodeStreamsMetadataValue(recs["metadata-defaults"]); err != nil || md.epoch != 2 || md.lastAssignmentConfigs != nil || md.validatedTopologyEpoch != -1 {
		t.Fatalf("metadata with defaults: %v %+v", err, md)
	}
	if e, ts, err := decodeStreamsTargetMetadataValue(recs["target-metadata"]); err != nil || e != 7 || ts != 1_700_000_000_123 {
		t.Fatalf("target metadata: %v %d %d", err, e, ts)
	}
	m, err := decodeStreamsMemberValue(recs["member"])
	if err != nil || *m.instanceID != "i" || m.rackID != nil || m.endpoint.Port != 8080 || m.clientTags[0].Value != "v" || m.processID != "p" {
		t.Fatalf("member: %v %+v", err, m)
	}
	if m, err := decodeStreamsMemberValue(encodeStreamsMemberValue(streamsMemberRecord{processID: "p"})); err != nil || m.endpoint != nil {
		t.Fatalf("member without endpoint: %v %+v", err, m)
	}
	a, s, err := decodeStreamsTargetValue(recs["target"])
	if err != nil || fmt.Sprint(a) != fmt.Sprint(streamsTasks{{SubtopologyID: "0", Partitions: []int32{0, 2}}}) || s[0].SubtopologyID != "1" {
		t.Fatalf("target: %v %+v %+v", err, a, s)
	}
	c, err := decodeStreamsCurrentValue(recs["current"])
	if err != nil || c.epoch != 7 || c.prevEpoch != 6 || c.state != 1 || !reflect.DeepEqual(c.active, c.revoking) ||
		fmt.Sprint(c.activeEpochs, c.revokingEpochs) != "[[5 7]] [[4 4]]" {
		t.Fatalf("current: %v %+v", err, c)
	}
	if _, err := decodeStreamsCurrentValue(recs["current"][:10]); err == nil {
		t.Fatal("truncated value decoded")
	}
	k := encodeStreamsKey(keyTypeStreamsGroupCurrentMember, "g", "m")
	if typ, g, mem, err := decodeStreamsKey(k); err != nil || typ != 22 || g != "g" || mem != "m" {
		t.Fatalf("key: %v %d %s %s", err, typ, g, mem)
	}
}
