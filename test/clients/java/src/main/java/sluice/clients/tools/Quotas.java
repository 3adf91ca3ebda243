package sluice.clients.tools;

import static sluice.clients.Harness.BOOTSTRAP;
import static sluice.clients.Harness.RUN_ID;
import static sluice.clients.Harness.check;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Client quotas: kafka-configs --entity-type clients/users (AlterClientQuotas, DescribeClientQuotas),
 * then a throttled producer and a throttled consumer next to unthrottled ones (KIP-219 throttling).
 */
final class Quotas {
    private static final String PREFIX = "tools-" + RUN_ID + "-quota";
    private static final String CONFIGS = "org.apache.kafka.tools.ConfigCommand";
    /** The byte-rate quota of the throttled clients. */
    private static final long QUOTA = 32 * 1024;
    /** How long the throttled clients run. */
    private static final long RUN_MS = 30_000; // every client runs for 30 s

    private Quotas() {}

    private static ToolRunner.Result configs(String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", BOOTSTRAP));
        all.addAll(List.of(args));
        return ToolRunner.run("kafka-configs", CONFIGS, all.toArray(String[]::new));
    }

    private static void contains(ToolRunner.Result r, String want) {
        check(r.out().contains(want), "want \"" + want + "\" in the output of " + r);
    }

    static void configsQuotas() throws Exception {
        String client = PREFIX + "-c1";
        String user = PREFIX + "-alice";
        configs("--alter", "--entity-type", "clients", "--entity-name", client, "--add-config",
                "producer_byte_rate=1024,consumer_byte_rate=2048").ok();
        configs("--alter", "--entity-type", "users", "--entity-name", user, "--add-config",
                "request_percentage=50").ok();
        configs("--alter", "--entity-type", "users", "--entity-name", user, "--entity-type", "clients",
                "--entity-name", client, "--add-config", "controller_mutation_rate=10").ok();
        ToolRunner.Result d = configs("--describe", "--entity-type", "clients", "--entity-name", client).ok();
        contains(d, "client-id '" + client + "'");
        contains(d, "producer_byte_rate=1024.0");
        contains(d, "consumer_byte_rate=2048.0");
        ToolRunner.Result u = configs("--describe", "--entity-type", "users", "--entity-name", user).ok();
        contains(u, "user-principal '" + user + "'");
        contains(u, "request_percentage=50.0");
        ToolRunner.Result all = configs("--describe", "--entity-type", "users", "--entity-type", "clients").ok();
        contains(all, "controller_mutation_rate=10.0");
        configs("--alter", "--entity-type", "clients", "--entity-name", client, "--delete-config",
                "producer_byte_rate").ok();
        ToolRunner.Result after = configs("--describe", "--entity-type", "clients", "--entity-name", client).ok();
        check(!after.out().contains("producer_byte_rate") && after.out().contains("consumer_byte_rate=2048.0"),
                "after --delete-config: " + after);
        // An ip entity (an address no client uses) takes connection_creation_rate only.
        configs("--alter", "--entity-type", "ips", "--entity-name", "10.9.9.9", "--add-config",
                "connection_creation_rate=100").ok();
        contains(configs("--describe", "--entity-type", "ips", "--entity-name", "10.9.9.9").ok(),
                "connection_creation_rate=100.0");
        configs("--alter", "--entity-type", "ips", "--entity-name", "10.9.9.9", "--delete-config",
                "connection_creation_rate").ok();
        // A value the broker refuses (a fraction for a byte rate) fails the tool.
        ToolRunner.Result bad = configs("--alter", "--entity-type", "clients", "--entity-name", client,
                "--add-config", "producer_byte_rate=1.5");
        check(bad.status() != 0, "producer_byte_rate=1.5 should be refused: " + bad);
        // Clean up: quotas outlive the scenario on a shared broker.
        configs("--alter", "--entity-type", "clients", "--entity-name", client, "--delete-config",
                "consumer_byte_rate").ok();
        configs("--alter", "--entity-type", "users", "--entity-name", user, "--delete-config",
                "request_percentage").ok();
        configs("--alter", "--entity-type", "users", "--entity-name", user, "--entity-type", "clients",
                "--entity-name", client, "--delete-config", "controller_mutation_rate").ok();
    }

    private static double metric(Map<MetricName, ? extends Metric> metrics, String name) {
        double max = 0;
        for (Map.Entry<MetricName, ? extends Metric> e : metrics.entrySet()) {
            if (e.getKey().name().equals(name) && e.getValue().metricValue() instanceof Double v && !v.isNaN()) {
                max = Math.max(max, v);
            }
        }
        return max;
    }

    private record Run(long bytes, long ms, double throttleMaxMs) {}

    private static KafkaProducer<byte[], byte[]> producer(String clientId) {
        return new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP,
                ProducerConfig.CLIENT_ID_CONFIG, clientId, ProducerConfig.ACKS_CONFIG, "1",
                ProducerConfig.LINGER_MS_CONFIG, 5, ProducerConfig.BUFFER_MEMORY_CONFIG, 64 << 10,
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false),
                new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** Produces 1 KiB random values to topic until limit bytes were acknowledged or runMs passed. */
    private static Run produce(String clientId, String topic, long limit, long runMs) throws Exception {
        byte[] value = new byte[1024];
        new Random(42).nextBytes(value);
        AtomicLong acked = new AtomicLong();
        long start = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> p = producer(clientId)) {
            long sent = 0;
            while (sent < limit && (System.nanoTime() - start) / 1_000_000 < runMs) {
                p.send(new ProducerRecord<>(topic, value), (md, err) -> {
                    if (err == null) {
                        acked.addAndGet(value.length);
                    }
                });
                sent += value.length;
            }
            p.flush();
            long ms = (System.nanoTime() - start) / 1_000_000;
            return new Run(acked.get(), ms, metric(p.metrics(), "produce-throttle-time-max"));
        }
    }

    /** Reads topic from the start until limit bytes were read or runMs passed. */
    private static Run consume(String clientId, String topic, long limit, long runMs) {
        long start = System.nanoTime();
        long bytes = 0;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP, ConsumerConfig.CLIENT_ID_CONFIG, clientId),
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            while (bytes < limit && (System.nanoTime() - start) / 1_000_000 < runMs) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    bytes += r.value().length;
                }
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            return new Run(bytes, ms, metric(c.metrics(), "fetch-throttle-time-max"));
        }
    }

    static void throttled() throws Exception {
        String slowProducer = PREFIX + "-slow-producer";
        String slowConsumer = PREFIX + "-slow-consumer";
        String data = PREFIX + "-data";
        String slowTopic = PREFIX + "-slow";
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP))) {
            admin.createTopics(List.of(new NewTopic(data, 1, (short) 1), new NewTopic(slowTopic, 1, (short) 1)))
                    .all().get(30, TimeUnit.SECONDS);
            admin.alterClientQuotas(List.of(
                    new ClientQuotaAlteration(new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, slowProducer)),
                            List.of(new ClientQuotaAlteration.Op("producer_byte_rate", (double) QUOTA))),
                    new ClientQuotaAlteration(new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, slowConsumer)),
                            List.of(new ClientQuotaAlteration.Op("consumer_byte_rate", (double) QUOTA)))))
                    .all().get(30, TimeUnit.SECONDS);
            try {
                runThrottled(data, slowTopic, slowProducer, slowConsumer);
            } finally {
                admin.alterClientQuotas(List.of(
                        new ClientQuotaAlteration(new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, slowProducer)),
                                List.of(new ClientQuotaAlteration.Op("producer_byte_rate", null))),
                        new ClientQuotaAlteration(new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, slowConsumer)),
                                List.of(new ClientQuotaAlteration.Op("consumer_byte_rate", null)))))
                        .all().get(30, TimeUnit.SECONDS);
                admin.deleteTopics(List.of(data, slowTopic)).all().get(30, TimeUnit.SECONDS);
            }
        }
    }

    private static void runThrottled(String data, String slowTopic, String slowProducer, String slowConsumer)
            throws Exception {
        // Data for the consumers, written by an unthrottled producer: 4 MiB, far above what the throttled
        // consumer may read in the run.
        long dataBytes = 4L << 20;
        Run fill = produce(PREFIX + "-fast-producer", data, dataBytes, 60_000);
        check(fill.bytes() == dataBytes, "unthrottled producer acknowledged " + fill.bytes() + " of " + dataBytes);

        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            Future<Run> slowP = pool.submit((Callable<Run>) () -> produce(slowProducer, slowTopic, Long.MAX_VALUE, RUN_MS));
            Future<Run> fastP = pool.submit((Callable<Run>) () -> produce(PREFIX + "-fast-producer-2", data, dataBytes, RUN_MS));
            Future<Run> slowC = pool.submit(() -> consume(slowConsumer, data, Long.MAX_VALUE, RUN_MS));
            Future<Run> fastC = pool.submit(() -> consume(PREFIX + "-fast-consumer", data, dataBytes, RUN_MS));
            Run sp = slowP.get(120, TimeUnit.SECONDS);
            Run fp = fastP.get(120, TimeUnit.SECONDS);
            Run sc = slowC.get(120, TimeUnit.SECONDS);
            Run fc = fastC.get(120, TimeUnit.SECONDS);
            String report = String.format("throttled producer %d B in %d ms (throttle max %.0f ms), unthrottled "
                    + "producer %d B in %d ms (%.0f ms), throttled consumer %d B in %d ms (%.0f ms), unthrottled "
                    + "consumer %d B in %d ms (%.0f ms)", sp.bytes(), sp.ms(), sp.throttleMaxMs(), fp.bytes(), fp.ms(),
                    fp.throttleMaxMs(), sc.bytes(), sc.ms(), sc.throttleMaxMs(), fc.bytes(), fc.ms(), fc.throttleMaxMs());
            System.out.println("quotas: " + report);
            // Below the quota over the run, allowing Kafka's burst of one quota window: the rate is measured
            // over quota.window.num (11) samples of 1 s, the first ones as if 10 s long, so a new client may
            // send or fetch up to the quota times the window at once, and never more than the quota times (run
            // + window) in all (a fetch that would go over it is answered without records). The producer may
            // also have one request in flight when it is throttled: 64 KiB (buffer.memory) more.
            long window = QUOTA * 11;
            long allowedP = QUOTA * sp.ms() / 1000 + window + (64 << 10);
            long allowedC = QUOTA * sc.ms() / 1000 + window;
            check(sp.bytes() <= allowedP, "throttled producer above its quota (at most " + allowedP + " B): " + report);
            check(sc.bytes() <= allowedC, "throttled consumer above its quota (at most " + allowedC + " B): " + report);
            check(sp.throttleMaxMs() > 0 && sc.throttleMaxMs() > 0, "throttled clients saw no throttle time: " + report);
            // The unthrottled clients next to them: no throttle time, and all their bytes, well above the quota.
            check(fp.throttleMaxMs() == 0 && fc.throttleMaxMs() == 0, "unthrottled clients were throttled: " + report);
            check(fp.bytes() == dataBytes && fc.bytes() >= dataBytes, "unthrottled clients did not finish: " + report);
        } finally {
            pool.shutdownNow();
        }
    }
}
