package sluice.clients.connect;

import static sluice.clients.Harness.RUN_ID;
import static sluice.clients.Harness.check;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.connect.runtime.Connect;
import sluice.clients.tools.LocalCluster;

/**
 * Kafka Connect distributed on a three-node Sluice cluster (LocalCluster: default.replication.factor=3,
 * min.insync.replicas=2) with a broker killed mid-run. The worker keeps Connect's defaults for its config,
 * offset and status topics (replication factor 3, checked); a FileStreamSource writes a file's lines to a
 * topic, a FileStreamSink copies the topic to a file. While lines are appended, the leader of the topic's
 * partition is killed with SIGKILL (by pid), later restarted. Both connectors and their tasks must stay
 * RUNNING, and every line must reach the topic and the sink file (Connect's default source delivery is
 * at-least-once: duplicates are counted and reported, not failed; a line missing or one never written fails).
 */
final class ClusterResilience {
    private static final String PREFIX = "connect-" + RUN_ID + "-cluster";

    private ClusterResilience() {}

    static void brokerKilled() throws Exception {
        brokerKilled(false);
    }

    /**
     * The same with exactly.once.source.support=enabled (KIP-618) and read_committed readers: the victim is the
     * coordinator of the source task's transactions, and the topic must hold every line exactly once.
     */
    static void exactlyOnceBrokerKilled() throws Exception {
        brokerKilled(true);
    }

    private static void brokerKilled(boolean eos) throws Exception {
        String prefix = PREFIX + (eos ? "-eos" : "");
        Path dir = Files.createTempDirectory("sluice-connect-cluster");
        Path source = dir.resolve("source.txt");
        Path sink = dir.resolve("sink.txt");
        String topic = prefix + "-lines";
        List<String> want = new ArrayList<>();
        try (LocalCluster cluster = LocalCluster.start(Map.of("default.replication.factor", "3",
                "min.insync.replicas", "2", "group.initial.rebalance.delay.ms", "0"));
                Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(),
                        AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000))) {
            admin.createTopics(List.of(new NewTopic(topic, Optional.of(1), Optional.empty()))).all()
                    .get(30, TimeUnit.SECONDS);
            int port = Main.freePort();
            String rest = "http://127.0.0.1:" + port;
            Map<String, String> p = new HashMap<>();
            p.put("bootstrap.servers", cluster.bootstrap());
            p.put("group.id", prefix);
            p.put("config.storage.topic", prefix + "-configs");
            p.put("offset.storage.topic", prefix + "-offsets");
            p.put("status.storage.topic", prefix + "-status");
            if (eos) {
                p.put("exactly.once.source.support", "enabled");
                p.put("consumer.isolation.level", "read_committed");
            }
            // No *.storage.replication.factor: Connect's default, 3.
            p.put("offset.storage.partitions", "3");
            p.put("status.storage.partitions", "1");
            p.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
            p.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
            p.put("offset.flush.interval.ms", "500");
            p.put("scheduled.rebalance.max.delay.ms", "1000");
            p.put("listeners", rest);
            p.put("rest.advertised.host.name", "127.0.0.1");
            p.put("rest.advertised.port", String.valueOf(port));
            p.put("plugin.discovery", "service_load");
            append(source, want, 0, 40);
            // The worker stops before the cluster does (try-with-resources closes the cluster first).
            Connect<?> worker = Main.startWorker(p);
            try {
                run(cluster, admin, rest, source, sink, prefix, topic, want, eos);
            } finally {
                Main.stopWorker(worker);
            }
        } finally {
            for (Path x : List.of(source, sink, dir)) {
                Files.deleteIfExists(x);
            }
        }
    }

    private static void run(LocalCluster cluster, Admin admin, String rest, Path source, Path sink,
            String prefix, String topic, List<String> want, boolean eos) throws Exception {
        Main.await("the worker's REST API answers",
                () -> String.valueOf(Main.http("GET", rest + "/", null).status()), "200"::equals);
        for (String t : List.of(prefix + "-configs", prefix + "-offsets", prefix + "-status")) {
            Main.await("Connect's internal topic " + t + " exists with 3 replicas", () -> {
                TopicDescription d = admin.describeTopics(List.of(t)).allTopicNames().get(10, TimeUnit.SECONDS)
                        .get(t);
                // Admin lists a partition's replicas among the brokers its
                // DescribeCluster answer named; right after the worker created
                // the topic that answer may not name them all yet: asked again.
                for (var pi : d.partitions()) {
                    if (pi.replicas().isEmpty()) {
                        return "partition " + pi.partition() + " lists no replica yet";
                    }
                    check(pi.replicas().size() == 3,
                            t + " partition " + pi.partition() + " has replicas " + pi.replicas() + ", want 3");
                }
                return "ok";
            }, "ok"::equals);
        }
        Main.connector(rest, "file-source", Map.of("connector.class",
                "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max", "1",
                "file", source.toString(), "topic", topic));
        Main.connector(rest, "file-sink", Map.of("connector.class",
                "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max", "1",
                "file", sink.toString(), "topics", topic));
        Main.awaitRunning(rest, "file-source");
        Main.awaitRunning(rest, "file-sink");
        awaitAll("the sink file", () -> Main.lines(sink), want);

        int victim;
        String role;
        if (eos) {
            victim = transactionCoordinator(admin, prefix);
            role = "the coordinator of the source task's transactions";
        } else {
            victim = admin.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic)
                    .partitions().get(0).leader().id();
            role = "the leader of " + topic + "-0";
        }
        System.out.println("  killing broker " + victim + " (pid " + cluster.pid(victim) + "), " + role);
        append(source, want, 40, 40);
        cluster.killNode(victim);
        append(source, want, 80, 40);
        awaitAll("the sink file", () -> Main.lines(sink), want);
        Main.awaitRunning(rest, "file-source");
        Main.awaitRunning(rest, "file-sink");
        cluster.startNode(victim);
        append(source, want, 120, 20);
        awaitAll("the sink file", () -> Main.lines(sink), want);
        Main.awaitRunning(rest, "file-source");
        Main.awaitRunning(rest, "file-sink");
        List<String> topicLines = readTopic(cluster.bootstrap(), topic, eos);
        awaitAll("the topic", () -> topicLines, want);
        if (eos) {
            check(topicLines.equals(want), "with exactly-once source support the topic (read_committed) must hold "
                    + "each line once, in order; it has " + topicLines.size() + " records for " + want.size()
                    + " lines (" + duplicates(topicLines) + " duplicates)");
        }
        System.out.println("  " + want.size() + " lines: topic " + topicLines.size() + " records ("
                + duplicates(topicLines) + " duplicates), sink file " + Main.lines(sink).size() + " lines ("
                + duplicates(Main.lines(sink)) + " duplicates)");
    }

    private static void append(Path source, List<String> want, int from, int n) throws java.io.IOException {
        List<String> more = new ArrayList<>();
        for (int i = from; i < from + n; i++) {
            more.add("line " + i + " of the cluster run");
        }
        Main.append(source, more);
        want.addAll(more);
    }

    private interface Lines {
        List<String> get() throws Exception;
    }

    /** Waits until got holds every line of want; a line that was never written fails at once. */
    private static void awaitAll(String what, Lines got, List<String> want) throws InterruptedException {
        Set<String> all = new HashSet<>(want);
        Main.await(what + " holds all " + want.size() + " lines", () -> {
            List<String> g = got.get();
            for (String l : g) {
                check(all.contains(l), what + " has a line never written: " + l);
            }
            Set<String> missing = new java.util.TreeSet<>(all);
            g.forEach(missing::remove);
            return missing.isEmpty() ? "complete" : missing.size() + " missing, e.g. " + missing.iterator().next();
        }, "complete"::equals);
    }

    private static int duplicates(List<String> lines) {
        return lines.size() - new HashSet<>(lines).size();
    }

    /** The broker DescribeTransactions names as coordinator of a transactional id starting with prefix. */
    private static int transactionCoordinator(Admin admin, String prefix) throws Exception {
        int[] coordinator = {-1};
        Main.await("a transaction of " + prefix + " is listed with its coordinator", () -> {
            for (var l : admin.listTransactions().all().get(10, TimeUnit.SECONDS)) {
                if (l.transactionalId().startsWith(prefix)) {
                    coordinator[0] = admin.describeTransactions(List.of(l.transactionalId())).all()
                            .get(10, TimeUnit.SECONDS).get(l.transactionalId()).coordinatorId();
                    return "found";
                }
            }
            return "none yet";
        }, "found"::equals);
        return coordinator[0];
    }

    private static List<String> readTopic(String bootstrap, String topic, boolean committed) {
        Map<String, Object> p = new TreeMap<>();
        if (committed) {
            p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        }
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> out = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            long deadline = System.currentTimeMillis() + 30_000;
            while (c.position(tp) < end && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.add(r.value());
                }
            }
        }
        return out;
    }
}
