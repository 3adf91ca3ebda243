package sluice.clients;

import static sluice.clients.Harness.BOOTSTRAP;
import static sluice.clients.Harness.RUN_ID;
import static sluice.clients.Harness.check;
import static sluice.clients.Harness.eventually;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Sluice conformance scenarios with Apache Kafka's Java client (kafka-clients), all in one JVM.
 * Usage: java -cp ... sluice.clients.Main [scenario...]; the environment comes from
 * scripts/test-clients.sh (SLUICE_BOOTSTRAP, SLUICE_APIS, SLUICE_RESULTS_DIR, SLUICE_RUN_ID).
 * Exits 1 when any scenario failed.
 */
public final class Main {
    private static final long TIMEOUT_MS = 30_000;
    private static final String PREFIX = "java-" + RUN_ID;
    private static final List<String> DATA = List.of("CreateTopics", "Produce", "Fetch", "ListOffsets");
    private static final List<String> GROUP = List.of("CreateTopics", "Produce", "Fetch", "ListOffsets",
            "FindCoordinator", "OffsetCommit", "OffsetFetch");
    private static final List<String> CLASSIC = List.of("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup");

    private static Admin admin;

    private Main() {}

    public static void main(String[] args) throws Exception {
        Harness h = new Harness("java");
        h.add("describe-cluster", "admin.describe-cluster", List.of("DescribeCluster"), Main::describeCluster);
        h.add("create-compacted-topic", "admin.create-topic", List.of("CreateTopics", "Metadata"),
                Main::createCompactedTopic);
        h.add("describe-configs", "admin.describe-configs", List.of("CreateTopics", "DescribeConfigs"),
                Main::describeConfigs);
        h.add("invalid-cleanup-policy", "admin.invalid-config", List.of("CreateTopics", "Metadata"),
                Main::invalidCleanupPolicy);
        h.add("incremental-alter-configs", "admin.alter-configs",
                List.of("CreateTopics", "IncrementalAlterConfigs", "DescribeConfigs"), Main::incrementalAlterConfigs);
        h.add("delete-topic", "admin.delete-topic", List.of("CreateTopics", "DeleteTopics", "Metadata"),
                Main::deleteTopic);
        h.add("produce-tombstones", "produce.tombstone", DATA, Main::produceTombstones);
        h.add("idempotent-producer", "produce.idempotent", plus(DATA, "InitProducerID"), Main::idempotentProducer);
        for (String codec : List.of("gzip", "snappy", "lz4", "zstd")) {
            h.add("compression-" + codec, "compression." + codec, DATA, () -> compression(codec));
        }
        h.add("consume-from-beginning", "consume.from-beginning", DATA, Main::consumeFromBeginning);
        h.add("group-classic", "group.classic", plus(GROUP, CLASSIC.toArray(String[]::new)),
                () -> groupRoundTrip("classic"));
        h.add("group-consumer-protocol", "group.consumer", plus(GROUP, "ConsumerGroupHeartbeat"),
                () -> groupRoundTrip("consumer"));
        h.add("manual-commit", "group.manual-commit", GROUP, Main::manualCommit);
        h.add("list-describe-groups", "admin.groups",
                plus(GROUP, "JoinGroup", "SyncGroup", "Heartbeat", "ListGroups", "DescribeGroups"),
                Main::listDescribeGroups);
        Transactions.register(h);
        Security.register(h);
        OAuth.register(h);
        Acls.register(h);
        Share.register(h);
        boolean ok;
        try {
            ok = h.runAll(kafkaClientsVersion(), Set.of(args));
        } finally {
            if (admin != null) {
                admin.close(Duration.ofSeconds(5));
            }
        }
        System.exit(ok ? 0 : 1);
    }

    /** The version kafka-clients reports about itself (a resource in its jar). */
    private static String kafkaClientsVersion() throws java.io.IOException {
        Properties p = new Properties();
        try (var in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) {
                p.load(in);
            }
        }
        return p.getProperty("version", "unknown");
    }

    private static List<String> plus(List<String> a, String... more) {
        List<String> out = new ArrayList<>(a);
        out.addAll(List.of(more));
        return out;
    }

    // ---- clients --------------------------------------------------------------------------------

    private static Admin admin() {
        if (admin == null) {
            Properties p = new Properties();
            p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
            p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
            admin = Admin.create(p);
        }
        return admin;
    }

    private static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    }

    private static KafkaProducer<String, String> producer(Map<String, Object> extra) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, TIMEOUT_MS);
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    private static KafkaConsumer<String, String> consumer(Map<String, Object> extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    private static void createTopic(String name, Map<String, String> configs) throws Exception {
        get(admin().createTopics(List.of(new NewTopic(name, Optional.of(1), Optional.empty()).configs(configs))).all());
    }

    private static Config topicConfig(String name) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, name);
        return get(admin().describeConfigs(List.of(r)).all()).get(r);
    }

    private static String value(Config c, String name) {
        ConfigEntry e = c.get(name);
        return e == null ? null : e.value();
    }

    /** Produces the records to partition 0, waits for every acknowledgement and returns the offsets. */
    private static List<Long> produce(String topic, List<String[]> records, Map<String, Object> extra)
            throws Exception {
        List<Long> offsets = new ArrayList<>();
        try (KafkaProducer<String, String> p = producer(extra)) {
            List<java.util.concurrent.Future<RecordMetadata>> acks = new ArrayList<>();
            for (String[] kv : records) {
                acks.add(p.send(new ProducerRecord<>(topic, 0, kv[0], kv[1])));
            }
            p.flush();
            for (var a : acks) {
                offsets.add(a.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).offset());
            }
        }
        return offsets;
    }

    /** Reads count records of partition 0 from the log start, without a group. */
    private static List<ConsumerRecord<String, String>> readFromBeginning(String topic, int count) {
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(Map.of())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + TIMEOUT_MS;
            while (out.size() < count && System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(500)).forEach(out::add);
            }
        }
        check(out.size() == count, "read " + out.size() + " of " + count + " records within " + TIMEOUT_MS + " ms");
        return out;
    }

    private static List<String[]> numbered(String prefix, int n) {
        List<String[]> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(new String[] {"k" + i, prefix + "-" + i});
        }
        return out;
    }

    // ---- admin ----------------------------------------------------------------------------------

    private static void describeCluster() throws Exception {
        DescribeClusterResult r = admin().describeCluster();
        String id = get(r.clusterId());
        check(id != null && !id.isEmpty(), "no cluster id");
        check(!get(r.nodes()).isEmpty(), "no nodes");
        check(get(r.controller()) != null, "no controller");
    }

    private static void createCompactedTopic() throws Exception {
        String t = PREFIX + "-compacted";
        createTopic(t, Map.of("cleanup.policy", "compact"));
        var d = get(admin().describeTopics(List.of(t)).allTopicNames()).get(t);
        check(d.partitions().size() == 1, "partitions: " + d.partitions());
        check(d.partitions().get(0).leader() != null, "partition 0 has no leader");
    }

    private static void describeConfigs() throws Exception {
        String t = PREFIX + "-describe";
        createTopic(t, Map.of("cleanup.policy", "compact", "min.cleanable.dirty.ratio", "0.1"));
        Config c = topicConfig(t);
        check("compact".equals(value(c, "cleanup.policy")), "cleanup.policy=" + value(c, "cleanup.policy"));
        check("0.1".equals(value(c, "min.cleanable.dirty.ratio")),
                "min.cleanable.dirty.ratio=" + value(c, "min.cleanable.dirty.ratio"));
        ConfigEntry e = c.get("cleanup.policy");
        check(e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, "cleanup.policy source " + e.source());
        ConfigEntry seg = c.get("segment.bytes");
        check(seg != null && seg.isDefault(), "segment.bytes should be a default: " + seg);
    }

    private static void invalidCleanupPolicy() throws Exception {
        String t = PREFIX + "-shred";
        try {
            createTopic(t, Map.of("cleanup.policy", "shred"));
            throw new AssertionError("cleanup.policy=shred was accepted");
        } catch (ExecutionException e) {
            check(e.getCause() instanceof InvalidConfigurationException,
                    "want InvalidConfigurationException, got " + Harness.describe(e.getCause()));
        }
        check(!get(admin().listTopics().names()).contains(t), t + " exists after a refused create");
    }

    private static void incrementalAlterConfigs() throws Exception {
        String t = PREFIX + "-alter";
        createTopic(t, Map.of());
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
        Map<ConfigResource, Collection<AlterConfigOp>> ops = Map.of(r, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET)));
        get(admin().incrementalAlterConfigs(ops).all());
        Config c = topicConfig(t);
        check("compact".equals(value(c, "cleanup.policy")), "cleanup.policy=" + value(c, "cleanup.policy"));
        check("3600000".equals(value(c, "retention.ms")), "retention.ms=" + value(c, "retention.ms"));
        // APPEND to a list config, then DELETE restores the default.
        get(admin().incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(
                new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.APPEND)))).all());
        String policy = value(topicConfig(t), "cleanup.policy");
        check("compact,delete".equals(policy), "after APPEND delete: cleanup.policy=" + policy);
        get(admin().incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(
                new ConfigEntry("retention.ms", null), AlterConfigOp.OpType.DELETE)))).all());
        String retention = value(topicConfig(t), "retention.ms");
        check("604800000".equals(retention), "after DELETE: retention.ms=" + retention);
    }

    private static void deleteTopic() throws Exception {
        String t = PREFIX + "-delete-me";
        createTopic(t, Map.of());
        get(admin().deleteTopics(List.of(t)).all());
        eventually(t + " gone", TIMEOUT_MS, () -> {
            try {
                return !get(admin().listTopics().names()).contains(t);
            } catch (Exception e) {
                return false;
            }
        });
    }

    // ---- data path ------------------------------------------------------------------------------

    private static void produceTombstones() throws Exception {
        String t = PREFIX + "-tombstones";
        createTopic(t, Map.of("cleanup.policy", "compact"));
        List<Long> offsets = produce(t, List.of(new String[] {"user-42", "v1"}, new String[] {"user-42", "v2"},
                new String[] {"user-7", null}), Map.of());
        check(offsets.equals(List.of(0L, 1L, 2L)), "offsets " + offsets);
        var got = readFromBeginning(t, 3);
        check(got.get(0).offset() == 0 && "user-42".equals(got.get(0).key()) && "v1".equals(got.get(0).value()),
                "first record " + got.get(0));
        check(got.get(1).offset() == 1 && "v2".equals(got.get(1).value()), "second record " + got.get(1));
        check(got.get(2).offset() == 2 && "user-7".equals(got.get(2).key()) && got.get(2).value() == null,
                "third record should be a tombstone: " + got.get(2));
    }

    private static void idempotentProducer() throws Exception {
        String t = PREFIX + "-idempotent";
        createTopic(t, Map.of());
        var records = numbered("v", 300);
        List<Long> offsets = produce(t, records, Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.LINGER_MS_CONFIG, 2,
                ProducerConfig.BATCH_SIZE_CONFIG, 512));
        for (int i = 0; i < offsets.size(); i++) {
            check(offsets.get(i) == i, "record " + i + " acknowledged at offset " + offsets.get(i));
        }
        var got = readFromBeginning(t, records.size());
        for (int i = 0; i < got.size(); i++) {
            check(records.get(i)[1].equals(got.get(i).value()), "record " + i + " read back as " + got.get(i));
        }
    }

    private static void compression(String codec) throws Exception {
        String t = PREFIX + "-codec-" + codec;
        createTopic(t, Map.of());
        var records = numbered(codec + "-value-with-repetition-repetition-repetition", 200);
        produce(t, records, Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec, ProducerConfig.LINGER_MS_CONFIG, 20));
        var got = readFromBeginning(t, records.size());
        for (int i = 0; i < got.size(); i++) {
            check(got.get(i).offset() == i && records.get(i)[1].equals(got.get(i).value()),
                    "record " + i + " read back as " + got.get(i));
        }
    }

    private static void consumeFromBeginning() throws Exception {
        String t = PREFIX + "-from-beginning";
        createTopic(t, Map.of());
        var records = numbered("v", 1000);
        produce(t, records, Map.of(ProducerConfig.BATCH_SIZE_CONFIG, 4096));
        var got = readFromBeginning(t, records.size());
        for (int i = 0; i < got.size(); i++) {
            check(got.get(i).offset() == i && records.get(i)[1].equals(got.get(i).value()),
                    "record " + i + " read back as " + got.get(i));
        }
    }

    /** A group member reads everything and commits; a second member resumes after the commit. */
    private static void groupRoundTrip(String protocol) throws Exception {
        String t = PREFIX + "-group-" + protocol;
        String group = PREFIX + "-" + protocol;
        createTopic(t, Map.of());
        produce(t, numbered("v", 10), Map.of());
        Map<String, Object> conf = Map.of(ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        TopicPartition tp = new TopicPartition(t, 0);
        try (KafkaConsumer<String, String> c = consumer(conf)) {
            c.subscribe(List.of(t));
            List<String> seen = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 60_000;
            while (seen.size() < 10 && System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(500)).forEach(r -> seen.add(r.value()));
            }
            check(seen.size() == 10, "group member read " + seen.size() + " of 10 records within 60 s");
            c.commitSync();
            OffsetAndMetadata om = c.committed(Set.of(tp)).get(tp);
            check(om != null && om.offset() == 10, "committed " + om + ", want offset 10");
        }
        produce(t, List.<String[]>of(new String[] {"late", "after-commit"}), Map.of());
        try (KafkaConsumer<String, String> c = consumer(conf)) {
            c.subscribe(List.of(t));
            long deadline = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    check("after-commit".equals(r.value()) && r.offset() == 10,
                            "second member read " + r + "; the committed offset was ignored");
                    return;
                }
            }
            throw new AssertionError("second member got nothing within 60 s");
        }
    }

    /** Commits chosen offsets with metadata from a consumer that only assigns, and reads them back. */
    private static void manualCommit() throws Exception {
        String t = PREFIX + "-manual-commit";
        String group = PREFIX + "-manual";
        createTopic(t, Map.of());
        produce(t, numbered("v", 5), Map.of());
        TopicPartition tp = new TopicPartition(t, 0);
        try (KafkaConsumer<String, String> c = consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, group))) {
            c.assign(List.of(tp));
            c.commitSync(Map.of(tp, new OffsetAndMetadata(3, "checkpoint-3")));
            OffsetAndMetadata om = c.committed(Set.of(tp)).get(tp);
            check(om != null && om.offset() == 3 && "checkpoint-3".equals(om.metadata()), "committed " + om);
            c.seek(tp, om.offset());
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + TIMEOUT_MS;
            while (got.size() < 2 && System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(500)).forEach(got::add);
            }
            check(got.size() == 2 && got.get(0).offset() == 3, "resumed at " + got);
        }
        var offsets = get(admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
        check(offsets.get(tp) != null && offsets.get(tp).offset() == 3, "admin sees " + offsets);
    }

    private static void listDescribeGroups() throws Exception {
        String t = PREFIX + "-groups-admin";
        String group = PREFIX + "-listed";
        createTopic(t, Map.of());
        produce(t, numbered("v", 1), Map.of());
        try (KafkaConsumer<String, String> c = consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic"))) {
            c.subscribe(List.of(t));
            List<String> seen = new ArrayList<>();
            eventually("member got its record", 60_000, () -> {
                c.poll(Duration.ofMillis(200)).forEach(r -> seen.add(r.value()));
                return !seen.isEmpty();
            });
            Set<String> listed = new HashSet<>();
            for (GroupListing g : get(admin().listGroups().all())) {
                listed.add(g.groupId());
            }
            check(listed.contains(group), group + " not listed in " + listed);
            ConsumerGroupDescription d = get(admin().describeConsumerGroups(List.of(group)).all()).get(group);
            check(d.members().size() == 1, "members " + d.members());
            check(d.members().iterator().next().assignment().topicPartitions().contains(new TopicPartition(t, 0)),
                    "assignment " + d.members().iterator().next().assignment());
        }
    }
}
