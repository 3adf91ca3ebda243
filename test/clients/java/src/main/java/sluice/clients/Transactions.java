package sluice.clients;

import static sluice.clients.Harness.BOOTSTRAP;
import static sluice.clients.Harness.RUN_ID;
import static sluice.clients.Harness.check;
import static sluice.clients.Harness.eventually;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Transaction scenarios with kafka-clients: commit and abort seen through read_committed and
 * read_uncommitted consumers, consume-transform-produce with sendOffsetsToTransaction, and fencing
 * of a zombie producer. Registered by Main.
 */
final class Transactions {
    private static final long TIMEOUT_MS = 30_000;
    private static final String PREFIX = "java-txn-" + RUN_ID;
    static final List<String> APIS = List.of("CreateTopics", "Produce", "Fetch", "ListOffsets", "InitProducerID",
            "FindCoordinator", "AddPartitionsToTxn", "EndTxn");

    private Transactions() {}

    static void register(Harness h) {
        h.add("transactions-commit-abort", "transactions.commit-abort", APIS, Transactions::commitAbort);
        List<String> eos = new ArrayList<>(APIS);
        eos.addAll(List.of("AddOffsetsToTxn", "TxnOffsetCommit", "OffsetFetch", "JoinGroup", "SyncGroup"));
        h.add("transactions-consume-transform-produce", "transactions.send-offsets", eos,
                Transactions::consumeTransformProduce);
        h.add("transactions-fencing", "transactions.fencing", APIS, Transactions::fencing);
        List<String> v2 = new ArrayList<>(APIS);
        v2.remove("AddPartitionsToTxn");
        v2.addAll(List.of("ApiVersions", "DescribeTransactions"));
        h.add("transactions-v2-epoch-bump", "transactions.v2", v2, Transactions::transactionV2);
    }

    private static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        return Admin.create(p);
    }

    private static void createTopic(Admin a, String name, int partitions) throws Exception {
        a.createTopics(List.of(new NewTopic(name, Optional.of(partitions), Optional.empty())))
                .all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    }

    private static KafkaProducer<String, String> txProducer(String txnId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) TIMEOUT_MS);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        return new KafkaProducer<>(p);
    }

    private static KafkaConsumer<String, String> consumer(String isolation, String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        return new KafkaConsumer<>(p);
    }

    /** Reads the whole topic (all partitions) with the given isolation until the end offsets, values sorted. */
    private static List<String> readAll(String topic, int partitions, String isolation) throws Exception {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(isolation, null)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            // endOffsets follows the isolation level: the last stable offset for read_committed.
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + TIMEOUT_MS;
            while (System.currentTimeMillis() < deadline) {
                boolean done = true;
                for (TopicPartition tp : tps) {
                    if (c.position(tp) < end.get(tp)) {
                        done = false;
                    }
                }
                if (done) {
                    break;
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
                    values.add(r.value());
                }
            }
            for (TopicPartition tp : tps) {
                check(c.position(tp) >= end.get(tp), "consumer (" + isolation + ") of " + tp + " stuck at "
                        + c.position(tp) + " before end offset " + end.get(tp));
            }
        }
        values.sort(null);
        return values;
    }

    private static void commitAbort() throws Exception {
        String t = PREFIX + "-commit-abort";
        try (Admin a = admin()) {
            createTopic(a, t, 2);
        }
        try (KafkaProducer<String, String> p = txProducer(t + "-tx")) {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 4; i++) {
                p.send(new ProducerRecord<>(t, i % 2, "k" + i, "committed-" + i));
            }
            p.commitTransaction();
            p.beginTransaction();
            for (int i = 0; i < 3; i++) {
                p.send(new ProducerRecord<>(t, i % 2, "k" + i, "aborted-" + i));
            }
            p.flush(); // the aborted records are in the log before the abort marker
            p.abortTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(t, 1, "k9", "committed-9"));
            p.commitTransaction();
        }
        List<String> committed = readAll(t, 2, "read_committed");
        check(committed.equals(List.of("committed-0", "committed-1", "committed-2", "committed-3", "committed-9")),
                "read_committed saw " + committed);
        List<String> all = readAll(t, 2, "read_uncommitted");
        check(all.size() == 8 && all.contains("aborted-0"), "read_uncommitted should see aborted data too: " + all);
    }

    private static void consumeTransformProduce() throws Exception {
        String in = PREFIX + "-ctp-in";
        String out = PREFIX + "-ctp-out";
        String group = PREFIX + "-ctp-group";
        try (Admin a = admin()) {
            createTopic(a, in, 1);
            createTopic(a, out, 1);
        }
        try (KafkaProducer<String, String> p = txProducer(in + "-seed")) {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 6; i++) {
                p.send(new ProducerRecord<>(in, 0, "k" + i, "v" + i));
            }
            p.commitTransaction();
        }
        try (KafkaConsumer<String, String> c = consumer("read_committed", group);
                KafkaProducer<String, String> p = txProducer(group + "-tx")) {
            p.initTransactions();
            c.subscribe(List.of(in));
            int seen = 0;
            long deadline = System.currentTimeMillis() + TIMEOUT_MS;
            boolean abortedOnce = false;
            while (seen < 6 && System.currentTimeMillis() < deadline) {
                var records = c.poll(Duration.ofMillis(300));
                if (records.isEmpty()) {
                    continue;
                }
                p.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    p.send(new ProducerRecord<>(out, 0, r.key(), r.value().toUpperCase()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                p.sendOffsetsToTransaction(offsets, c.groupMetadata());
                if (!abortedOnce) {
                    // The first batch is aborted: its output disappears and its offsets are not committed,
                    // so the consumer rewinds to the last committed position and processes it again.
                    abortedOnce = true;
                    p.abortTransaction();
                    for (TopicPartition tp : c.assignment()) {
                        OffsetAndMetadata committed = c.committed(java.util.Set.of(tp)).get(tp);
                        c.seek(tp, committed == null ? 0 : committed.offset());
                    }
                    continue;
                }
                p.commitTransaction();
                seen += records.count();
            }
            check(seen == 6, "processed " + seen + " of 6 input records");
        }
        try (Admin a = admin()) {
            var offsets = a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                    .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            OffsetAndMetadata om = offsets.get(new TopicPartition(in, 0));
            check(om != null && om.offset() == 6, "group's committed offset should be 6: " + offsets);
        }
        List<String> outValues = readAll(out, 1, "read_committed");
        check(outValues.equals(List.of("V0", "V1", "V2", "V3", "V4", "V5")), "output (read_committed): " + outValues);
    }

    /**
     * Transaction version 2 (KIP-890 part 2): the broker finalizes transaction.version 2, so kafka-clients 4.x
     * adds partitions implicitly (Produce v12) and every commit or abort (EndTxn v5) bumps the producer epoch,
     * which DescribeTransactions shows.
     */
    private static void transactionV2() throws Exception {
        String t = PREFIX + "-v2";
        String txnId = t + "-tx";
        try (Admin a = admin()) {
            var features = a.describeFeatures().featureMetadata().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            var tv = features.finalizedFeatures().get("transaction.version");
            check(tv != null && tv.maxVersionLevel() == 2, "finalized transaction.version should be 2: " + features);
            createTopic(a, t, 2);
        }
        try (KafkaProducer<String, String> p = txProducer(txnId)) {
            p.initTransactions();
            for (int i = 0; i < 3; i++) {
                p.beginTransaction();
                p.send(new ProducerRecord<>(t, i % 2, "k" + i, "v" + i));
                if (i == 1) {
                    p.flush();
                    p.abortTransaction();
                } else {
                    p.commitTransaction();
                }
            }
        }
        List<String> committed = readAll(t, 2, "read_committed");
        check(committed.equals(List.of("v0", "v2")), "read_committed saw " + committed);
        try (Admin a = admin()) {
            var d = a.describeTransactions(List.of(txnId)).description(txnId).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            check(d.producerEpoch() == 3, "three EndTxn under transaction version 2 should leave epoch 3: " + d);
        }
    }

    private static void fencing() throws Exception {
        String t = PREFIX + "-fencing";
        try (Admin a = admin()) {
            createTopic(a, t, 1);
        }
        String txnId = t + "-tx";
        KafkaProducer<String, String> zombie = txProducer(txnId);
        try {
            zombie.initTransactions();
            zombie.beginTransaction();
            zombie.send(new ProducerRecord<>(t, 0, "k", "zombie")).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            try (KafkaProducer<String, String> fresh = txProducer(txnId)) {
                fresh.initTransactions(); // fences the zombie and aborts its open transaction
                fresh.beginTransaction();
                fresh.send(new ProducerRecord<>(t, 0, "k", "fresh"));
                fresh.commitTransaction();
            }
            boolean fenced = false;
            try {
                zombie.send(new ProducerRecord<>(t, 0, "k", "zombie-2")).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                zombie.commitTransaction();
            } catch (Exception e) {
                Throwable c = e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
                fenced = c instanceof ProducerFencedException || c instanceof InvalidProducerEpochException
                        || (c instanceof org.apache.kafka.common.KafkaException
                                && String.valueOf(c.getMessage()).toLowerCase().contains("fenced"));
                check(fenced, "zombie failed with an unexpected error: " + Harness.describe(c));
            }
            check(fenced, "the zombie producer committed after being fenced");
        } finally {
            zombie.close(Duration.ZERO);
        }
        List<String> committed = readAll(t, 1, "read_committed");
        check(committed.equals(List.of("fresh")), "read_committed after fencing: " + committed);
        try (Admin a = admin()) {
            eventually("kafka-clients lists the transactional id", TIMEOUT_MS, () -> {
                try {
                    for (TransactionListing l : a.listTransactions().all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                        if (l.transactionalId().equals(txnId)) {
                            return true;
                        }
                    }
                    return false;
                } catch (Exception e) {
                    return false;
                }
            });
        }
    }
}
