package sluice.clients.streams;

import static sluice.clients.Harness.RUN_ID;
import static sluice.clients.Harness.check;
import static sluice.clients.Harness.eventually;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;
import sluice.clients.Harness;
import sluice.clients.tools.LocalCluster;

/**
 * Kafka Streams exactly_once_v2 on a three-node Sluice cluster (LocalCluster: default.replication.factor=3,
 * min.insync.replicas=2) with a broker killed mid-run. A count per word (one word per input record, so the
 * repartition topic and the changelog carry every update) runs with replication.factor=-1: Streams' internal
 * topics take the broker default, checked to be 3 replicas. While input flows, the broker coordinating the
 * application's transactions is killed with SIGKILL (by pid), later restarted. The output, read
 * read_committed, must hold for every word exactly the updates 1, 2, ..., n: a duplicate (a count twice) or
 * a gap (a count missing) fails.
 */
final class ClusterResilience {
    private static final String PREFIX = "streams-" + RUN_ID + "-cluster";
    private static final long TIMEOUT_MS = 90_000;
    private static final int WORDS = 7;

    private ClusterResilience() {}

    static void exactlyOnceBrokerKilled() throws Exception {
        String app = PREFIX + "-eos";
        String input = PREFIX + "-words";
        String output = PREFIX + "-counts";
        Path state = Files.createTempDirectory("sluice-streams-cluster");
        try (LocalCluster cluster = LocalCluster.start(Map.of("default.replication.factor", "3",
                "min.insync.replicas", "2", "group.initial.rebalance.delay.ms", "0"));
                Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(),
                        AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000))) {
            String bootstrap = cluster.bootstrap();
            admin.createTopics(List.of(new NewTopic(input, Optional.of(2), Optional.empty()),
                    new NewTopic(output, Optional.of(1), Optional.empty()))).all().get(30, TimeUnit.SECONDS);

            StreamsBuilder b = new StreamsBuilder();
            b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                    .groupBy((k, w) -> w, Grouped.with("words", Serdes.String(), Serdes.String()))
                    .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("counts"))
                            .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                    .toStream().to(output, Produced.with(Serdes.String(), Serdes.Long()));
            Properties p = new Properties();
            p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
            p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
            p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
            p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, -1);
            p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
            p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
            p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6_000);
            p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 10_000);

            KafkaStreams streams = new KafkaStreams(b.build(), p);
            AtomicReference<Throwable> died = new AtomicReference<>();
            AtomicInteger replaced = new AtomicInteger();
            streams.setUncaughtExceptionHandler(t -> {
                // A stream thread may die of a broker's death (a timeout it gave up on); exactly-once must
                // still hold with a replacement thread, which is what the check below is about.
                died.compareAndSet(null, t);
                replaced.incrementAndGet();
                return StreamThreadExceptionResponse.REPLACE_THREAD;
            });
            Map<String, List<Long>> seen = new TreeMap<>();
            Map<String, Long> want = new TreeMap<>();
            try (KafkaProducer<String, String> producer = producer(bootstrap);
                    KafkaConsumer<String, Long> out = outputReader(bootstrap, output)) {
                streams.start();
                eventually("the Streams application to reach RUNNING", TIMEOUT_MS,
                        () -> streams.state() == KafkaStreams.State.RUNNING);
                int next = produce(producer, input, 0, 60, want);
                awaitOutput(out, seen, want, streams);
                for (String t : List.of(app + "-counts-changelog", app + "-words-repartition")) {
                    TopicDescription d = admin.describeTopics(List.of(t)).allTopicNames().get(30, TimeUnit.SECONDS).get(t);
                    d.partitions().forEach(pi -> check(pi.replicas().size() == 3,
                            t + " partition " + pi.partition() + " has replicas " + pi.replicas() + ", want 3"));
                }

                int victim = transactionCoordinator(admin, app);
                System.out.println("  killing broker " + victim + " (pid " + cluster.pid(victim)
                        + "), the coordinator of " + app + "'s transactions");
                next = produce(producer, input, next, 30, want);
                cluster.killNode(victim);
                next = produce(producer, input, next, 60, want);
                awaitOutput(out, seen, want, streams);
                cluster.startNode(victim);
                next = produce(producer, input, next, 30, want);
                awaitOutput(out, seen, want, streams);
                System.out.println("  " + next + " input records, " + seen.values().stream().mapToInt(List::size).sum()
                        + " committed updates, each word's counts 1..n exactly once; stream threads replaced: "
                        + replaced.get() + (died.get() == null ? "" : " (first: " + Harness.describe(died.get()) + ")"));
            } finally {
                streams.close(Duration.ofSeconds(30));
            }
        } finally {
            try (Stream<Path> s = Files.walk(state)) {
                for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(x);
                }
            }
        }
    }

    /** The broker coordinating the application's transactional id(s), as DescribeTransactions reports it. */
    private static int transactionCoordinator(Admin admin, String app) throws Exception {
        AtomicInteger coordinator = new AtomicInteger(-1);
        eventually("a transaction of " + app + " is listed with its coordinator", TIMEOUT_MS, () -> {
            try {
                for (TransactionListing l : admin.listTransactions().all().get(10, TimeUnit.SECONDS)) {
                    if (l.transactionalId().startsWith(app)) {
                        coordinator.set(admin.describeTransactions(List.of(l.transactionalId())).all()
                                .get(10, TimeUnit.SECONDS).get(l.transactionalId()).coordinatorId());
                        return true;
                    }
                }
                return false;
            } catch (Exception e) {
                return false;
            }
        });
        return coordinator.get();
    }

    /** Produces n one-word records (word "w" + i % WORDS), acks=all and idempotent; counts them in want. */
    private static int produce(KafkaProducer<String, String> producer, String topic, int from, int n,
            Map<String, Long> want) throws Exception {
        List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
        for (int i = from; i < from + n; i++) {
            String w = "w" + (i % WORDS);
            sent.add(producer.send(new ProducerRecord<>(topic, "k" + i, w)));
            want.merge(w, 1L, Long::sum);
        }
        for (var f : sent) {
            f.get(60, TimeUnit.SECONDS);
        }
        return from + n;
    }

    private static KafkaProducer<String, String> producer(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    private static KafkaConsumer<String, Long> outputReader(String bootstrap, String output) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
        KafkaConsumer<String, Long> c = new KafkaConsumer<>(p);
        TopicPartition tp = new TopicPartition(output, 0);
        c.assign(List.of(tp));
        c.seekToBeginning(List.of(tp));
        return c;
    }

    /**
     * Reads committed output until every word's updates are 1..want; an update out of sequence (a duplicate or
     * a gap) fails at once, as does a Streams application that is no longer running.
     */
    private static void awaitOutput(KafkaConsumer<String, Long> out, Map<String, List<Long>> seen,
            Map<String, Long> want, KafkaStreams streams) throws Exception {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (System.currentTimeMillis() < deadline) {
            KafkaStreams.State st = streams.state();
            check(st != KafkaStreams.State.ERROR && st != KafkaStreams.State.NOT_RUNNING
                    && st != KafkaStreams.State.PENDING_ERROR, "Streams application is " + st);
            for (ConsumerRecord<String, Long> r : out.poll(Duration.ofMillis(200))) {
                List<Long> l = seen.computeIfAbsent(r.key(), k -> new ArrayList<>());
                check(r.value() == l.size() + 1, "word " + r.key() + ": committed count " + r.value() + " after "
                        + l + " (at offset " + r.offset() + "): a duplicate or a gap");
                l.add(r.value());
            }
            boolean done = want.entrySet().stream()
                    .allMatch(e -> seen.getOrDefault(e.getKey(), List.of()).size() == e.getValue());
            if (done) {
                return;
            }
        }
        Map<String, Integer> got = new TreeMap<>();
        seen.forEach((k, v) -> got.put(k, v.size()));
        throw new AssertionError("committed output has " + got + " updates per word, want " + want);
    }
}
