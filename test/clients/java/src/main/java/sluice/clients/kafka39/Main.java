package sluice.clients.kafka39;

import static sluice.clients.Harness.BOOTSTRAP;
import static sluice.clients.Harness.RUN_ID;
import static sluice.clients.Harness.check;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
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
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import sluice.clients.Harness;

/**
 * A small scenario set with kafka-clients 3.9, whose request versions are older than 4.x's (built against
 * 3.9 only, in the kafka39 Maven profile): admin, an idempotent producer, a plain consumer, classic and
 * consumer-protocol groups with commits, listing and describing groups.
 * Usage: java -cp ... sluice.clients.kafka39.Main [scenario...].
 */
public final class Main {
    private static final long TIMEOUT_MS = 30_000;
    private static final String PREFIX = "java39-" + RUN_ID;
    private static final List<String> DATA = List.of("CreateTopics", "Produce", "Fetch", "ListOffsets");
    private static final List<String> GROUP = List.of("CreateTopics", "Produce", "Fetch", "ListOffsets",
            "FindCoordinator", "OffsetCommit", "OffsetFetch");

    private static Admin admin;

    private Main() {}

    public static void main(String[] args) throws Exception {
        Harness h = new Harness("java39");
        h.add("admin", "admin.alter-configs", List.of("CreateTopics", "DescribeConfigs", "IncrementalAlterConfigs",
                "DescribeCluster", "Metadata"), Main::adminScenario);
        h.add("idempotent-producer", "produce.idempotent", plus(DATA, "InitProducerID"), Main::idempotent);
        h.add("consume-from-beginning", "consume.from-beginning", DATA, Main::fromBeginning);
        h.add("group-classic", "group.classic", plus(GROUP, "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup",
                "ListGroups", "DescribeGroups"), () -> group("classic"));
        h.add("group-consumer-protocol", "group.consumer", plus(GROUP, "ConsumerGroupHeartbeat",
                "ConsumerGroupDescribe", "ListGroups"), () -> group("consumer"));
        boolean ok;
        try {
            ok = h.runAll(Harness.kafkaVersion(), Set.of(args));
        } finally {
            if (admin != null) {
                admin.close(Duration.ofSeconds(5));
            }
        }
        System.exit(ok ? 0 : 1);
    }

    private static List<String> plus(List<String> a, String... more) {
        List<String> out = new ArrayList<>(a);
        out.addAll(List.of(more));
        return out;
    }

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

    private static void createTopic(String name, Map<String, String> configs) throws Exception {
        get(admin().createTopics(List.of(new NewTopic(name, Optional.of(1), Optional.empty()).configs(configs)))
                .all());
    }

    private static String config(String topic, String name) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config c = get(admin().describeConfigs(List.of(r)).all()).get(r);
        return c.get(name) == null ? null : c.get(name).value();
    }

    private static KafkaProducer<String, String> producer(Map<String, Object> extra) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
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

    private static List<Long> produce(String topic, int n, Map<String, Object> extra) throws Exception {
        List<Long> offsets = new ArrayList<>();
        try (KafkaProducer<String, String> p = producer(extra)) {
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                acks.add(p.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)));
            }
            p.flush();
            for (Future<RecordMetadata> a : acks) {
                offsets.add(a.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).offset());
            }
        }
        return offsets;
    }

    private static void adminScenario() throws Exception {
        var cluster = admin().describeCluster();
        check(!get(cluster.nodes()).isEmpty() && get(cluster.clusterId()) != null, "describeCluster");
        String t = PREFIX + "-admin";
        createTopic(t, Map.of("cleanup.policy", "compact"));
        check("compact".equals(config(t, "cleanup.policy")), "cleanup.policy=" + config(t, "cleanup.policy"));
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
        Map<ConfigResource, Collection<AlterConfigOp>> ops = Map.of(r, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.APPEND),
                new AlterConfigOp(new ConfigEntry("min.cleanable.dirty.ratio", "0.3"), AlterConfigOp.OpType.SET)));
        get(admin().incrementalAlterConfigs(ops).all());
        check("compact,delete".equals(config(t, "cleanup.policy")), "after APPEND: " + config(t, "cleanup.policy"));
        check("0.3".equals(config(t, "min.cleanable.dirty.ratio")), "ratio " + config(t, "min.cleanable.dirty.ratio"));
        var d = get(admin().describeTopics(List.of(t)).allTopicNames()).get(t);
        check(d.partitions().size() == 1 && d.partitions().get(0).leader() != null, "describeTopics " + d);
        get(admin().deleteTopics(List.of(t)).all());
    }

    private static void idempotent() throws Exception {
        String t = PREFIX + "-idempotent";
        createTopic(t, Map.of());
        List<Long> offsets = produce(t, 200, Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.BATCH_SIZE_CONFIG, 512,
                ProducerConfig.LINGER_MS_CONFIG, 2, ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd"));
        for (int i = 0; i < offsets.size(); i++) {
            check(offsets.get(i) == i, "record " + i + " acknowledged at offset " + offsets.get(i));
        }
    }

    private static void fromBeginning() throws Exception {
        String t = PREFIX + "-read";
        createTopic(t, Map.of());
        produce(t, 500, Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4"));
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(Map.of())) {
            TopicPartition tp = new TopicPartition(t, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + TIMEOUT_MS;
            while (got.size() < 500 && System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(500)).forEach(got::add);
            }
        }
        check(got.size() == 500, "read " + got.size() + " of 500");
        for (int i = 0; i < got.size(); i++) {
            check(got.get(i).offset() == i && ("v" + i).equals(got.get(i).value()), "record " + i + ": " + got.get(i));
        }
    }

    /** A member reads and commits, the group is listed and described, a second member resumes. */
    private static void group(String protocol) throws Exception {
        String t = PREFIX + "-group-" + protocol;
        String g = PREFIX + "-" + protocol;
        createTopic(t, Map.of());
        produce(t, 10, Map.of());
        Map<String, Object> conf = Map.of(ConsumerConfig.GROUP_ID_CONFIG, g,
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        TopicPartition tp = new TopicPartition(t, 0);
        try (KafkaConsumer<String, String> c = consumer(conf)) {
            c.subscribe(List.of(t));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (seen < 10 && System.currentTimeMillis() < deadline) {
                seen += c.poll(Duration.ofMillis(500)).count();
            }
            check(seen == 10, "member read " + seen + " of 10 within 60 s");
            c.commitSync();
            OffsetAndMetadata om = c.committed(Set.of(tp)).get(tp);
            check(om != null && om.offset() == 10, "committed " + om);
            boolean listed = false;
            for (ConsumerGroupListing l : get(admin().listConsumerGroups().all())) {
                listed |= l.groupId().equals(g);
            }
            check(listed, g + " not in listConsumerGroups");
            ConsumerGroupDescription d = get(admin().describeConsumerGroups(List.of(g)).all()).get(g);
            check(d.members().size() == 1, "members " + d.members());
        }
        produce(t, 1, Map.of());
        try (KafkaConsumer<String, String> c = consumer(conf)) {
            c.subscribe(List.of(t));
            long deadline = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    check(r.offset() == 10, "second member started at " + r + "; the commit was ignored");
                    return;
                }
            }
            throw new AssertionError("second member got nothing within 60 s");
        }
    }
}
