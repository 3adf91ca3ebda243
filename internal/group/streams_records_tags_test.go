package group

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"reflect"
	"testing"
)

// Values written by Apache Kafka 4.4's own message classes with every field and
// tagged field set (internal/group/testdata/KafkaStreamsRecords.java encode).
var kafkaStreamsValues = map[string]string{
	"current":           "00000000000700000006010202300300000000000000020100090300000005000000070202310200000001000102023102000000030100050200000004010100",
	"metadata":          "000000000007000000123456789004000400000003013f03156e756d2e7374616e6462792e7265706c696361730231001b7261636b2e61776172652e61737369676e6d656e742e746167730a7a6f6e652c7261636b00020400000002030400000001",
	"metadata-defaults": "000000000001000000000000000000",
	"target-metadata":   "0000000000070100080000018bcfe5687b",
}

// Sluice reads every field of Kafka's streams-group records, tagged ones included,
// and writes them back byte for byte.
func TestStreamsRecordsOfKafka(t *testing.T) {
	val := func(name string) []byte {
		b, err := hex.DecodeString(kafkaStreamsValues[name])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	md, err := decodeStreamsMetadataValue(val("metadata"))
	if err != nil || md.epoch != 7 || md.metadataHash != 0x1234567890 || md.validatedTopologyEpoch != 3 || md.storedDescriptionEpoch != 2 ||
		md.failedDescriptionEpoch != 1 || fmt.Sprint(md.lastAssignmentConfigs) != "[[num.standby.replicas 1] [rack.aware.assignment.tags zone,rack]]" {
		t.Fatalf("metadata: %v %+v", err, md)
	}
	if got := encodeStreamsMetadataValue(md); !bytes.Equal(got, val("metadata")) {
		t.Fatalf("metadata written back as %x", got)
	}
	if md, err := decodeStreamsMetadataValue(val("metadata-defaults")); err != nil || !reflect.DeepEqual(md, newStreamsMetadataRecord(1)) {
		t.Fatalf("metadata with defaults: %v %+v", err, md)
	} else if got := encodeStreamsMetadataValue(md); !bytes.Equal(got, val("metadata-defaults")) {
		t.Fatalf("metadata with defaults written back as %x", got)
	}
	e, ts, err := decodeStreamsTargetMetadataValue(val("target-metadata"))
	if err != nil || e != 7 || ts != 1700000000123 {
		t.Fatalf("target metadata: %v %d %d", err, e, ts)
	}
	if got := encodeStreamsTargetMetadataValue(e, ts); !bytes.Equal(got, val("target-metadata")) {
		t.Fatalf("target metadata written back as %x", got)
	}
	c, err := decodeStreamsCurrentValue(val("current"))
	tasks := func(ts streamsTasks) string {
		out := ""
		for _, t := range ts {
			out += fmt.Sprintf("%s%v", t.SubtopologyID, t.Partitions)
		}
		return out
	}
	if err != nil || c.epoch != 7 || c.prevEpoch != 6 || c.state != 1 || fmt.Sprintf("%s %v %s %s %v", tasks(c.active), c.activeEpochs, tasks(c.standby), tasks(c.revoking), c.revokingEpochs) !=
		"0[0 2] [[5 7]] 1[1] 1[3] [[4]]" {
		t.Fatalf("current: %v %+v", err, c)
	}
	if got := encodeStreamsCurrentValue(c); !bytes.Equal(got, val("current")) {
		t.Fatalf("current written back as %x", got)
	}
	// a malformed tagged field is an error, not a crash
	bad := val("target-metadata")
	bad[len(bad)-9] = 3 // AssignmentTimestamp's size
	if _, _, err := decodeStreamsTargetMetadataValue(bad); err == nil {
		t.Fatal("malformed tagged field decoded")
	}
}

// A restarted coordinator takes a streams group's assignment epochs, last assignment
// configs and assignment time back from its records.
func TestStreamsRecordsTaggedFieldsSurviveRestart(t *testing.T) {
	e := newEnv(t, Config{StreamsNumStandbyReplicas: 1})
	e.topics.add("words", 2)
	e.topics.add("app-counts-changelog", 2)
	epochs := map[string]int32{}
	for i := 0; i < 3; i++ { // join, then heartbeats until the assignment is taken
		for _, id := range []string{"a", "b"} {
			req := streamsHB("app", id, epochs[id], 1)
			r := e.c.StreamsGroupHeartbeat(testClient, req)
			if r.ErrorCode != 0 {
				t.Fatalf("%s: %+v", id, r)
			}
			epochs[id] = r.MemberEpoch
		}
	}
	e.c.mu.Lock()
	st := e.c.groups["app"].consumer.streams
	if len(st.members["a"].activeEpochs)+len(st.members["b"].activeEpochs) != 2 || st.assignedAt.IsZero() {
		t.Fatalf("epochs %v %v, assigned at %v", st.members["a"].activeEpochs, st.members["b"].activeEpochs, st.assignedAt)
	}
	before := fmt.Sprint(st.members["a"].activeEpochs, st.members["b"].activeEpochs, st.assignedAt.UnixMilli(), streamsMetadataOf(e.c.groups["app"].consumer))
	e.c.mu.Unlock()
	e.restart(Config{StreamsNumStandbyReplicas: 1})
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	g := e.c.groups["app"]
	if g == nil || !g.isStreams() {
		t.Fatal("streams group not loaded")
	}
	st = g.consumer.streams
	if after := fmt.Sprint(st.members["a"].activeEpochs, st.members["b"].activeEpochs, st.assignedAt.UnixMilli(), streamsMetadataOf(g.consumer)); after != before {
		t.Fatalf("after a restart: %s, before: %s", after, before)
	}
}
