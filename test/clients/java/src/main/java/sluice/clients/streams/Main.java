package sluice.clients.streams;

import static sluice.clients.Harness.BOOTSTRAP;
import static sluice.clients.Harness.RUN_ID;
import static sluice.clients.Harness.check;
import static sluice.clients.Harness.eventually;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.Stores;
import sluice.clients.Harness;

/**
 * Kafka Streams on Sluice: a word count whose KTable lives in an in-memory store backed by a compacted
 * changelog topic that Streams creates itself. The application runs, is stopped, and a new instance
 * (in-memory state: nothing survives locally) must restore the table from the changelog on Sluice and go on
 * counting to the right totals, at-least-once and (second scenario) exactly-once v2, whose output and
 * changelog are written in transactions and read back read_committed. With SLUICE_CLIENTS_COMPACTION=1 the restart waits until the
 * broker's cleaner has compacted the changelog, so the restore reads a compacted log (offset gaps).
 * Usage: java -cp ... sluice.clients.streams.Main [scenario...].
 */
public final class Main {
    private static final String PREFIX = "streams-" + RUN_ID;
    private static final long TIMEOUT_MS = 60_000;

    private static Admin admin;

    private Main() {}

    public static void main(String[] args) throws Exception {
        Harness h = new Harness("kafka-streams");
        List<String> apis = List.of("CreateTopics", "Metadata", "Produce", "Fetch", "ListOffsets", "FindCoordinator",
                "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch", "InitProducerID",
                "DescribeConfigs");
        h.add("word-count-restore", "streams.ktable-restore", apis, () -> wordCount(StreamsConfig.AT_LEAST_ONCE));
        List<String> eos = new ArrayList<>(apis);
        eos.addAll(List.of("AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit"));
        h.add("word-count-exactly-once", "streams.exactly-once", eos, () -> wordCount(StreamsConfig.EXACTLY_ONCE_V2));
        h.add("word-count-streams-protocol", "streams.rebalance-protocol",
                List.of("CreateTopics", "Metadata", "Produce", "Fetch", "ListOffsets", "FindCoordinator",
                        "StreamsGroupHeartbeat", "StreamsGroupDescribe", "StreamsGroupTopologyDescriptionUpdate",
                        "OffsetCommit", "OffsetFetch"),
                Main::streamsProtocol);
        h.add("word-count-streams-protocol-instance-killed", "streams.rebalance-protocol-killed",
                List.of("CreateTopics", "Metadata", "Produce", "Fetch", "ListOffsets", "FindCoordinator",
                        "StreamsGroupHeartbeat", "StreamsGroupDescribe", "OffsetCommit", "OffsetFetch",
                        "IncrementalAlterConfigs"),
                InstanceKilled::run);
        // On a three-node cluster of its own, RF 3, a broker killed mid-run (ClusterResilience).
        List<String> cluster = new ArrayList<>(eos);
        cluster.addAll(List.of("DescribeTransactions", "ListTransactions"));
        h.add("word-count-exactly-once-cluster-broker-killed", "streams.exactly-once-cluster", cluster,
                ClusterResilience::exactlyOnceBrokerKilled);
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

    static Admin admin() {
        if (admin == null) {
            admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP,
                    AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000));
        }
        return admin;
    }

    /** The word-count topology: lines → words → count per word in "counts" (changelog-backed) → output. */
    static StreamsBuilder topology(String input, String output) {
        StreamsBuilder b = new StreamsBuilder();
        // Small changelog segments and an eager dirty ratio, so the cleaner can compact it within the run.
        Map<String, String> changelog = Map.of("segment.ms", "1000", "min.cleanable.dirty.ratio", "0.01");
        KTable<String, Long> counts = b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((k, w) -> !w.isEmpty())
                .groupBy((k, w) -> w, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("counts"))
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long())
                        .withLoggingEnabled(changelog));
        counts.toStream().to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return b;
    }

    static Properties streamsProps(String appId, Path stateDir, String guarantee) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        // Streams does not leave the group on close: the restarted instance waits out the old member's session.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6_000);
        p.put("processing.exception.handler.global.enabled", "true");
        return p;
    }

    /** A running application instance and what its restore listener saw. */
    record Instance(KafkaStreams streams, AtomicLong restored, AtomicReference<Throwable> error) {}

    static Instance start(StreamsBuilder b, Properties p) throws Exception {
        KafkaStreams s = new KafkaStreams(b.build(), p);
        AtomicLong restored = new AtomicLong();
        AtomicReference<Throwable> error = new AtomicReference<>();
        s.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {}

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {}

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                restored.addAndGet(total);
            }
        });
        s.setUncaughtExceptionHandler(t -> {
            error.set(t);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                    .SHUTDOWN_CLIENT;
        });
        s.start();
        Instance in = new Instance(s, restored, error);
        eventually("the Streams application to reach RUNNING", TIMEOUT_MS, () -> {
            failIfDead(in);
            return s.state() == KafkaStreams.State.RUNNING;
        });
        return in;
    }

    static void failIfDead(Instance in) {
        if (in.error().get() != null) {
            throw new AssertionError("stream thread died: " + Harness.describe(in.error().get()), in.error().get());
        }
        KafkaStreams.State st = in.streams().state();
        if (st == KafkaStreams.State.ERROR || st == KafkaStreams.State.NOT_RUNNING
                || st == KafkaStreams.State.PENDING_ERROR) {
            throw new AssertionError("Streams application is " + st);
        }
    }

    static void produceLines(String topic, List<String> lines) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
            for (String l : lines) {
                pr.send(new ProducerRecord<>(topic, null, l)).get(30, TimeUnit.SECONDS);
            }
        }
    }

    static Map<String, Long> expectedCounts(List<String> lines) {
        Map<String, Long> m = new HashMap<>();
        for (String l : lines) {
            for (String w : l.toLowerCase(Locale.ROOT).split("\\W+")) {
                if (!w.isEmpty()) {
                    m.merge(w, 1L, Long::sum);
                }
            }
        }
        return m;
    }

    /** Reads the output topic (latest count per word) until it shows want, failing if the app dies. */
    static void awaitCounts(KafkaConsumer<String, Long> out, Map<String, Long> latest, Map<String, Long> want,
            Instance in) throws Exception {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (System.currentTimeMillis() < deadline) {
            failIfDead(in);
            for (ConsumerRecord<String, Long> r : out.poll(Duration.ofMillis(200))) {
                latest.put(r.key(), r.value());
            }
            if (latest.equals(want)) {
                return;
            }
        }
        throw new AssertionError("output counts " + new java.util.TreeMap<>(latest) + ", want "
                + new java.util.TreeMap<>(want));
    }

    static KafkaConsumer<String, Long> outputReader(String output, String guarantee) {
        Properties p = new Properties();
        if (!guarantee.equals(StreamsConfig.AT_LEAST_ONCE)) {
            // Exactly-once output is transactional: read only what the application committed.
            p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        }
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
        KafkaConsumer<String, Long> c = new KafkaConsumer<>(p);
        TopicPartition tp = new TopicPartition(output, 0);
        c.assign(List.of(tp));
        c.seekToBeginning(List.of(tp));
        return c;
    }

    /** Records in the changelog, read from its start (compaction makes this smaller than the update count). */
    private static int changelogRecords(String changelog) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(changelog, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            int n = 0;
            long deadline = System.currentTimeMillis() + 30_000;
            while (c.position(tp) < end && System.currentTimeMillis() < deadline) {
                n += c.poll(Duration.ofMillis(200)).count();
            }
            return n;
        }
    }

    private static void wordCount(String guarantee) throws Exception {
        String tag = guarantee.equals(StreamsConfig.AT_LEAST_ONCE) ? "" : "-eos";
        String app = PREFIX + "-wordcount" + tag;
        String input = PREFIX + "-lines" + tag;
        String output = PREFIX + "-counts" + tag;
        String changelog = app + "-counts-changelog";
        admin().createTopics(List.of(new NewTopic(input, Optional.of(1), Optional.empty()),
                new NewTopic(output, Optional.of(1), Optional.empty()))).all().get(30, TimeUnit.SECONDS);
        List<String> first = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            first.add("the quick brown fox " + (i % 2 == 0 ? "jumps over" : "naps under") + " the lazy dog " + i % 5);
        }
        List<String> second = List.of("the fox is back", "The DOG is not impressed", "quick quick quick");
        List<String> all = new ArrayList<>(first);
        all.addAll(second);

        Path state1 = Files.createTempDirectory("sluice-streams-a");
        Path state2 = Files.createTempDirectory("sluice-streams-b");
        Map<String, Long> latest = new ConcurrentHashMap<>();
        try (KafkaConsumer<String, Long> out = outputReader(output, guarantee)) {
            produceLines(input, first);
            Instance one = start(topology(input, output), streamsProps(app, state1, guarantee));
            try {
                awaitCounts(out, latest, expectedCounts(first), one);
            } finally {
                one.streams().close(Duration.ofSeconds(30));
            }
            // Streams created the changelog on Sluice, compacted as a KTable's changelog must be.
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
            Config c = admin().describeConfigs(List.of(r)).all().get(30, TimeUnit.SECONDS).get(r);
            check("compact".equals(c.get("cleanup.policy").value()),
                    changelog + " cleanup.policy=" + c.get("cleanup.policy").value());
            long updates = first.stream().mapToLong(l -> expectedCounts(List.of(l)).values().stream()
                    .mapToLong(Long::longValue).sum()).sum();
            if (Harness.env("SLUICE_CLIENTS_COMPACTION", "0").equals("1")) {
                int words = expectedCounts(first).size();
                eventually("the cleaner compacts " + changelog + " (" + updates + " updates of " + words + " words)",
                        TIMEOUT_MS, () -> changelogRecords(changelog) < updates);
            }

            // While the application is down, more input arrives; a new instance with empty local state
            // (in-memory store, new state dir) must restore the table from the changelog, then count on.
            produceLines(input, second);
            Instance two = start(topology(input, output), streamsProps(app, state2, guarantee));
            try {
                awaitCounts(out, latest, expectedCounts(all), two);
                check(two.restored().get() > 0, "the second instance restored nothing from " + changelog);
                System.out.println("  restored " + two.restored().get() + " records from " + changelog + " ("
                        + updates + " updates written by the first instance)");
            } finally {
                two.streams().close(Duration.ofSeconds(30));
            }
        } finally {
            deleteTree(state1);
            deleteTree(state2);
        }
    }

    static int activeTasks(Instance in) {
        return in.streams().metadataForLocalThreads().stream().mapToInt(t -> t.activeTasks().size()).sum();
    }

    /**
     * The Streams rebalance protocol (KIP-1071, group.protocol=streams): two instances of a word count over a
     * two-partition input share its four tasks (the broker creates the repartition and changelog topics and
     * assigns the tasks); one instance leaves the group, its tasks move to the other, which restores their
     * state and counts on to the right totals. The group is described through Admin (StreamsGroupDescribe).
     */
    private static void streamsProtocol() throws Exception {
        String app = PREFIX + "-wordcount-kip1071";
        String input = PREFIX + "-lines-kip1071";
        String output = PREFIX + "-counts-kip1071";
        admin().createTopics(List.of(new NewTopic(input, Optional.of(2), Optional.empty()),
                new NewTopic(output, Optional.of(1), Optional.empty()))).all().get(30, TimeUnit.SECONDS);
        List<String> first = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            first.add("alpha beta gamma " + (i % 3 == 0 ? "delta" : "epsilon") + " word" + i % 7);
        }
        List<String> second = List.of("alpha again", "beta beta beta", "zeta arrives");
        List<String> all = new ArrayList<>(first);
        all.addAll(second);
        Path state1 = Files.createTempDirectory("sluice-streams-k1");
        Path state2 = Files.createTempDirectory("sluice-streams-k2");
        Map<String, Long> latest = new ConcurrentHashMap<>();
        Instance one = null;
        Instance two = null;
        try (KafkaConsumer<String, Long> out = outputReader(output, StreamsConfig.AT_LEAST_ONCE)) {
            Properties p1 = streamsProps(app, state1, StreamsConfig.AT_LEAST_ONCE);
            p1.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
            Properties p2 = streamsProps(app, state2, StreamsConfig.AT_LEAST_ONCE);
            p2.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
            one = start(topology(input, output), p1);
            two = start(topology(input, output), p2);
            Instance a = one;
            Instance b = two;
            eventually("both instances own two of the four tasks", TIMEOUT_MS, () -> {
                failIfDead(a);
                failIfDead(b);
                return activeTasks(a) == 2 && activeTasks(b) == 2;
            });
            produceLines(input, first);
            awaitCounts(out, latest, expectedCounts(first), two);
            var described = admin().describeStreamsGroups(List.of(app)).all().get(30, TimeUnit.SECONDS).get(app);
            check(described.members().size() == 2, "StreamsGroupDescribe members: " + described);
            // KIP-1331: the broker asked a member for its topology description (StreamsGroupHeartbeat v1),
            // the member pushed it (StreamsGroupTopologyDescriptionUpdate), StreamsGroupDescribe v1 returns it.
            eventually("the group's topology description is stored", TIMEOUT_MS, () -> {
                org.apache.kafka.clients.admin.StreamsGroupDescription d;
                try {
                    d = admin().describeStreamsGroups(List.of(app),
                            new org.apache.kafka.clients.admin.DescribeStreamsGroupsOptions().includeTopologyDescription(true))
                            .all().get(30, TimeUnit.SECONDS).get(app);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
                if (d.topologyDescriptionStatus() != org.apache.kafka.clients.admin.StreamsGroupTopologyDescriptionStatus.AVAILABLE) {
                    return false;
                }
                var td = d.topologyDescription().orElseThrow();
                boolean readsInput = td.subtopologies().stream().flatMap(st -> st.nodes().stream())
                        .anyMatch(n -> n instanceof org.apache.kafka.clients.admin.StreamsGroupTopologyDescription.Source src
                                && src.topics().contains(input));
                check(readsInput && td.subtopologies().size() == 2 && d.assignorName().orElse("").equals("sticky"),
                        "topology description: " + td + " assignor " + d.assignorName());
                return true;
            });

            // The first instance leaves the group: the second takes its tasks and counts on.
            one.streams().close(org.apache.kafka.streams.CloseOptions.groupMembershipOperation(
                    org.apache.kafka.streams.CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                    .withTimeout(Duration.ofSeconds(30)));
            one = null;
            eventually("the remaining instance owns all four tasks", TIMEOUT_MS, () -> {
                failIfDead(b);
                return activeTasks(b) == 4;
            });
            produceLines(input, second);
            awaitCounts(out, latest, expectedCounts(all), two);
            check(two.restored().get() > 0, "the remaining instance restored nothing for the tasks it took over");
            System.out.println("  tasks moved; restored " + two.restored().get() + " records");
        } finally {
            if (one != null) {
                one.streams().close(Duration.ofSeconds(30));
            }
            if (two != null) {
                two.streams().close(Duration.ofSeconds(30));
            }
            deleteTree(state1);
            deleteTree(state2);
        }
    }

    static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> s = Files.walk(p)) {
            for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(x);
            }
        }
    }
}
