// A compacted topic, step by step, with Apache Kafka's Java client (kafka-clients 4.x).
//
// Create a topic with cleanup.policy=compact, write two versions of user-42 and a tombstone
// for user-7, read all three back, then wait for the cleaner and read again: user-42=v2 now
// comes first, at offset 1.
//
//   java -cp "$(cat classpath.txt)" Walkthrough.java [bootstrap] [topic]
//
// (a single-file program: any classpath with kafka-clients and its dependencies will do, for
// example the one test/clients/java writes to target/classpath.txt.) Defaults: localhost:9092 and
// walkthrough-java. SKIP_COMPACTION=1 stops after the first read; WAIT_SECONDS (default 60) bounds
// the wait for the cleaner. Exit status: 0 done, 1 a step failed, 3 the cleaner did not run in time.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class Walkthrough {
    public static void main(String[] args) throws Exception {
        String bootstrap = args.length > 0 ? args[0] : "localhost:9092";
        String topic = args.length > 1 ? args[1] : "walkthrough-java";
        int waitSeconds = Integer.parseInt(System.getenv().getOrDefault("WAIT_SECONDS", "60"));
        try {
            System.exit(run(bootstrap, topic, waitSeconds));
        } catch (Exception e) {
            System.err.println("error: " + e);
            System.exit(1);
        }
    }

    static int run(String bootstrap, String topic, int waitSeconds) throws Exception {
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);

        // 1. A compacted topic; segment.ms and min.cleanable.dirty.ratio are low so that the
        //    cleaner picks this tiny topic up within seconds.
        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(topic, Optional.of(1), Optional.empty()).configs(Map.of(
                    "cleanup.policy", "compact", "segment.ms", "1000", "min.cleanable.dirty.ratio", "0.01"))))
                    .all().get();
        }
        System.out.println("created compacted topic " + topic);

        // 2. Two versions of user-42, then a tombstone (null value) for user-7.
        Properties pp = new Properties();
        pp.putAll(common);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            producer.send(new ProducerRecord<>(topic, 0, "user-42", "v1"));
            producer.send(new ProducerRecord<>(topic, 0, "user-42", "v2"));
            producer.send(new ProducerRecord<>(topic, 0, "user-7", null)).get();
        }
        System.out.println("produced user-42=v1, user-42=v2 and a tombstone for user-7");

        // 3. All three are there before compaction.
        List<String> got = readAll(common, topic, 3);
        got.forEach(l -> System.out.println("   " + l));
        expect(got, List.of("offset 0: user-42=v1", "offset 1: user-42=v2", "offset 2: user-7=<tombstone>"));
        if ("1".equals(System.getenv("SKIP_COMPACTION"))) {
            return 0;
        }

        // 4. Wait for the cleaner: user-42=v1 goes, offsets stay as they were.
        System.out.println("waiting up to " + waitSeconds + "s for the cleaner...");
        long deadline = System.currentTimeMillis() + waitSeconds * 1000L;
        while (true) {
            got = readAll(common, topic, 2);
            if (!got.isEmpty() && got.get(0).startsWith("offset 1:")) {
                break;
            }
            if (System.currentTimeMillis() > deadline) {
                System.err.println("error: not compacted in time: the log still starts with " + got);
                return 3;
            }
            Thread.sleep(1000);
        }
        got.forEach(l -> System.out.println("   " + l));
        expect(got, List.of("offset 1: user-42=v2", "offset 2: user-7=<tombstone>"));
        return 0;
    }

    /** The first n records of partition 0 from the start of the log, as "offset N: key=value". */
    static List<String> readAll(Properties common, String topic, int n) {
        Properties cp = new Properties();
        cp.putAll(common);
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        List<String> out = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 10_000;
            while (out.size() < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    out.add("offset " + r.offset() + ": " + r.key() + "=" + (r.value() == null ? "<tombstone>" : r.value()));
                }
            }
        }
        return out.subList(0, Math.min(n, out.size()));
    }

    static void expect(List<String> got, List<String> want) {
        if (got.size() < want.size() || !got.subList(0, want.size()).equals(want)) {
            throw new IllegalStateException("want " + want + ", got " + got);
        }
    }
}
