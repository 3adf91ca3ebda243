// Cross-checks Sluice's streams-group records of __consumer_offsets against Apache
// Kafka's own message classes (kafka-group-coordinator). Not part of the test run:
//
//   CP=$(ls ~/.m2/repository/org/apache/kafka/kafka-group-coordinator/4.4.0/*.jar):$(ls ~/.m2/repository/org/apache/kafka/kafka-clients/4.4.0/kafka-clients-4.4.0.jar)
//   java -cp $CP internal/group/testdata/KafkaStreamsRecords.java encode
//       prints the values Kafka writes (every field and tagged field set), the
//       golden values of TestStreamsRecordsOfKafka (streams_records_tags_test.go)
//   SLUICE_STREAMS_RECORDS_DIR=/tmp/x go test ./internal/group -run TestStreamsRecordsRoundTrip
//   java -cp $CP internal/group/testdata/KafkaStreamsRecords.java decode /tmp/x
//       decodes each value Sluice wrote with Kafka's classes and checks that Kafka
//       writes the same bytes back
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.coordinator.group.generated.StreamsGroupCurrentMemberAssignmentValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMemberMetadataValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMetadataValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTopologyValue;

public class KafkaStreamsRecords {
    static Map<String, ApiMessage> kafkaValues() {
        Map<String, ApiMessage> m = new TreeMap<>();
        m.put("metadata", new StreamsGroupMetadataValue().setEpoch(7).setMetadataHash(0x1234567890L)
            .setValidatedTopologyEpoch(3)
            .setLastAssignmentConfigs(List.of(
                new StreamsGroupMetadataValue.LastAssignmentConfig().setKey("num.standby.replicas").setValue("1"),
                new StreamsGroupMetadataValue.LastAssignmentConfig().setKey("rack.aware.assignment.tags").setValue("zone,rack")))
            .setStoredDescriptionTopologyEpoch(2).setFailedDescriptionTopologyEpoch(1));
        m.put("metadata-defaults", new StreamsGroupMetadataValue().setEpoch(1).setMetadataHash(0));
        m.put("target-metadata", new StreamsGroupTargetAssignmentMetadataValue().setAssignmentEpoch(7).setAssignmentTimestamp(1700000000123L));
        m.put("current", new StreamsGroupCurrentMemberAssignmentValue().setMemberEpoch(7).setPreviousMemberEpoch(6).setState((byte) 1)
            .setActiveTasks(List.of(new StreamsGroupCurrentMemberAssignmentValue.TaskIds().setSubtopologyId("0")
                .setPartitions(List.of(0, 2)).setAssignmentEpochs(List.of(5, 7))))
            .setStandbyTasks(List.of(new StreamsGroupCurrentMemberAssignmentValue.TaskIds().setSubtopologyId("1").setPartitions(List.of(1))))
            .setWarmupTasks(List.of())
            .setActiveTasksPendingRevocation(List.of(new StreamsGroupCurrentMemberAssignmentValue.TaskIds().setSubtopologyId("1")
                .setPartitions(List.of(3)).setAssignmentEpochs(List.of(4))))
            .setStandbyTasksPendingRevocation(List.of()).setWarmupTasksPendingRevocation(List.of()));
        return m;
    }

    static ApiMessage decode(String name, ByteBuffer b) {
        short v = b.getShort();
        ByteBufferAccessor a = new ByteBufferAccessor(b);
        if (name.startsWith("metadata")) return new StreamsGroupMetadataValue(a, v);
        if (name.startsWith("target-metadata")) return new StreamsGroupTargetAssignmentMetadataValue(a, v);
        if (name.startsWith("target")) return new StreamsGroupTargetAssignmentMemberValue(a, v);
        if (name.startsWith("current")) return new StreamsGroupCurrentMemberAssignmentValue(a, v);
        if (name.startsWith("member")) return new StreamsGroupMemberMetadataValue(a, v);
        if (name.startsWith("topology")) return new StreamsGroupTopologyValue(a, v);
        throw new IllegalArgumentException(name);
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("encode")) {
            for (var e : kafkaValues().entrySet()) {
                System.out.println(e.getKey() + " " + HexFormat.of().formatHex(MessageUtil.toVersionPrefixedBytes((short) 0, e.getValue())));
            }
            return;
        }
        int bad = 0;
        try (var files = Files.list(Path.of(args[1]))) {
            for (Path p : files.sorted().toList()) {
                byte[] sluice = Files.readAllBytes(p);
                String name = p.getFileName().toString();
                ApiMessage msg = decode(name, ByteBuffer.wrap(sluice));
                byte[] again = MessageUtil.toVersionPrefixedBytes((short) 0, msg);
                boolean same = java.util.Arrays.equals(sluice, again);
                if (!same) bad++;
                System.out.println(name + (same ? " same bytes: " : " DIFFERENT bytes: ") + msg);
            }
        }
        if (bad > 0) System.exit(1);
    }
}
