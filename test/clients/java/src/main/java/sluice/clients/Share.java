package sluice.clients;

import static sluice.clients.Harness.BOOTSTRAP;
import static sluice.clients.Harness.RUN_ID;
import static sluice.clients.Harness.check;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Share-group (KIP-932) scenarios with KafkaShareConsumer: implicit and explicit acknowledgement,
 * several consumers on one partition, RELEASE redelivered and REJECT not, redelivery after the
 * acquisition lock of a consumer that stopped polling expires, and the delivery-count limit.
 * Registered by Main.
 *
 * A share group starts at the latest offset (share.auto.offset.reset), so each scenario first
 * "warms up" the group: it produces marker records until a member of the group receives one, which
 * proves the share partition exists and will deliver every later record.
 */
final class Share {
    private static final long TIMEOUT_MS = 30_000;
    private static final String PREFIX = "java-share-" + RUN_ID;
    static final List<String> APIS = List.of("CreateTopics", "Produce", "FindCoordinator", "ShareGroupHeartbeat",
            "ShareFetch", "ShareAcknowledge");

    private Share() {}

    static void register(Harness h) {
        h.add("share-implicit-ack", "share.implicit", APIS, Share::implicitAck);
        h.add("share-explicit-release-reject", "share.explicit", APIS, Share::explicitReleaseReject);
        h.add("share-several-consumers", "share.several-consumers", APIS, Share::severalConsumers);
        h.add("share-delivery-count-limit", "share.delivery-limit", APIS, Share::deliveryLimit);
        h.add("share-lock-expiry", "share.lock-expiry", APIS, Share::lockExpiry);
        List<String> adminApis = new ArrayList<>(APIS);
        adminApis.addAll(List.of("ListGroups", "ShareGroupDescribe", "DeleteGroups", "DescribeShareGroupOffsets",
                "AlterShareGroupOffsets", "ListOffsets"));
        h.add("share-admin-list-describe-delete", "share.admin", adminApis, Share::adminListDescribeDelete);
    }

    private static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        return Admin.create(p);
    }

    private static void createTopic(String name) throws Exception {
        try (Admin a = admin()) {
            a.createTopics(List.of(new NewTopic(name, Optional.of(1), Optional.empty())))
                    .all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        }
    }

    /**
     * Admin: the share group is listed (type SHARE) and described with its member; once empty, its
     * offsets are listed, reset to 0 and listed again, and the group is deleted.
     */
    private static void adminListDescribeDelete() throws Exception {
        String topic = PREFIX + "-admin", group = topic + "-g";
        createTopic(topic);
        try (Admin a = admin(); KafkaProducer<String, String> p = producer()) {
            try (KafkaShareConsumer<String, String> c = consumer(group, "implicit", 500)) {
                c.subscribe(List.of(topic));
                warmUp(p, topic, false, c);
                var listed = a.listGroups(ListGroupsOptions.forShareGroups()).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                check(listed.stream().anyMatch(g -> g.groupId().equals(group) && g.type().equals(Optional.of(GroupType.SHARE))),
                        "share group not listed: " + listed);
                ShareGroupDescription d = a.describeShareGroups(List.of(group)).describedGroups().get(group)
                        .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                check(d.groupState() == GroupState.STABLE, "state " + d.groupState());
                check(d.members().size() == 1, "members " + d.members());
                var tps = d.members().iterator().next().assignment().topicPartitions();
                check(tps.equals(Set.of(new TopicPartition(topic, 0))), "assignment " + tps);
            }
            // the consumer accepted the warm-up records it received: the start offset is past the first
            TopicPartition tp = new TopicPartition(topic, 0);
            long end = a.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp)
                    .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).offset();
            var offsets = a.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                    .partitionsToOffsetInfo(group).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            SharePartitionOffsetInfo info = offsets.get(tp);
            check(info != null && info.startOffset() > 0, "share offsets " + offsets);
            check(info.lag().isEmpty() || (info.lag().get() >= 0 && info.startOffset() + info.lag().get() <= end),
                    "start offset " + info.startOffset() + " lag " + info.lag() + " end " + end);
            a.alterShareGroupOffsets(group, Map.of(tp, 0L)).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            info = a.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                    .partitionsToOffsetInfo(group).get(TIMEOUT_MS, TimeUnit.MILLISECONDS).get(tp);
            check(info.startOffset() == 0, "start offset after the reset " + info.startOffset());
            check(info.lag().isEmpty() || info.lag().get() == end, "lag after the reset " + info.lag() + ", want " + end);
            a.deleteShareGroups(List.of(group)).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            var listed = a.listGroups(ListGroupsOptions.forShareGroups()).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            check(listed.stream().noneMatch(g -> g.groupId().equals(group)), "deleted share group still listed");
        }
    }

    private static KafkaProducer<String, String> producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        return new KafkaProducer<>(p);
    }

    private static KafkaShareConsumer<String, String> consumer(String group, String mode, int maxPollRecords) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, mode);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPollRecords);
        return new KafkaShareConsumer<>(p);
    }

    private static void send(KafkaProducer<String, String> p, String topic, String... values) throws Exception {
        for (String v : values) {
            p.send(new ProducerRecord<>(topic, v)).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        }
    }

    private static int deliveries(ConsumerRecord<String, String> r) {
        return r.deliveryCount().map(Short::intValue).orElse(-1);
    }

    /**
     * Produces "warm" records until every consumer has received one (explicit consumers accept
     * theirs), so that every later record of the topic is delivered to the group.
     */
    @SafeVarargs
    private static void warmUp(KafkaProducer<String, String> p, String topic, boolean explicit,
            KafkaShareConsumer<String, String>... cs) throws Exception {
        long deadline = System.currentTimeMillis() + 2 * TIMEOUT_MS;
        Set<Integer> warm = new HashSet<>();
        while (warm.size() < cs.length) {
            check(System.currentTimeMillis() < deadline, "no warm-up record reached every share consumer");
            send(p, topic, "warm");
            for (int i = 0; i < cs.length; i++) {
                for (ConsumerRecord<String, String> r : cs[i].poll(Duration.ofMillis(300))) {
                    check(r.value().equals("warm"), "unexpected record before the test records: " + r.value());
                    warm.add(i);
                    if (explicit) {
                        cs[i].acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                }
                if (explicit) {
                    cs[i].commitSync(Duration.ofMillis(TIMEOUT_MS));
                }
            }
        }
    }

    /** Implicit acknowledgement: every record delivered once, and accepted records never return. */
    private static void implicitAck() throws Exception {
        String topic = PREFIX + "-implicit", group = topic + "-g";
        createTopic(topic);
        try (KafkaProducer<String, String> p = producer()) {
            Set<String> want = new HashSet<>();
            try (KafkaShareConsumer<String, String> c = consumer(group, "implicit", 500)) {
                c.subscribe(List.of(topic));
                warmUp(p, topic, false, c);
                for (int i = 0; i < 10; i++) {
                    want.add("v" + i);
                }
                send(p, topic, want.toArray(String[]::new));
                Set<String> got = new HashSet<>();
                long deadline = System.currentTimeMillis() + TIMEOUT_MS;
                while (!got.containsAll(want)) {
                    check(System.currentTimeMillis() < deadline, "received " + got + ", want " + want);
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                        if (r.value().equals("warm")) {
                            continue;
                        }
                        check(deliveries(r) == 1, r.value() + " delivered " + deliveries(r) + " times");
                        check(got.add(r.value()), r.value() + " received twice");
                    }
                }
                c.poll(Duration.ofMillis(100)); // acknowledges the last records (ACCEPT)
            } // close commits the acknowledgements
            try (KafkaShareConsumer<String, String> c = consumer(group, "implicit", 500)) {
                c.subscribe(List.of(topic));
                send(p, topic, "after");
                long deadline = System.currentTimeMillis() + TIMEOUT_MS;
                boolean after = false;
                while (!after) {
                    check(System.currentTimeMillis() < deadline, "the record produced after the first consumer left never came");
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                        check(!want.contains(r.value()), "accepted record " + r.value() + " delivered again");
                        after |= r.value().equals("after");
                    }
                }
            }
        }
    }

    /** Explicit acknowledgement: RELEASE comes back (delivery count 2), REJECT never does. */
    private static void explicitReleaseReject() throws Exception {
        String topic = PREFIX + "-explicit", group = topic + "-g";
        createTopic(topic);
        try (KafkaProducer<String, String> p = producer();
                KafkaShareConsumer<String, String> c = consumer(group, "explicit", 500)) {
            c.subscribe(List.of(topic));
            warmUp(p, topic, true, c);
            send(p, topic, "keep", "again", "drop");
            Map<String, Integer> seen = new HashMap<>();
            long deadline = System.currentTimeMillis() + TIMEOUT_MS;
            boolean sentEnd = false, end = false;
            while (!end) {
                check(System.currentTimeMillis() < deadline, "records seen " + seen);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    seen.merge(r.value(), 1, Integer::sum);
                    switch (r.value()) {
                        case "again" -> {
                            check(deliveries(r) == seen.get("again"), "again: delivery count " + deliveries(r));
                            c.acknowledge(r, seen.get("again") == 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT);
                        }
                        case "drop" -> c.acknowledge(r, AcknowledgeType.REJECT);
                        case "end" -> {
                            end = true;
                            c.acknowledge(r, AcknowledgeType.ACCEPT);
                        }
                        default -> c.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                }
                Map<TopicIdPartition, Optional<KafkaException>> res = c.commitSync(Duration.ofMillis(TIMEOUT_MS));
                for (var e : res.entrySet()) {
                    check(e.getValue().isEmpty(), "commitSync " + e.getKey() + ": " + e.getValue());
                }
                if (!sentEnd && seen.getOrDefault("again", 0) == 2) {
                    send(p, topic, "end"); // after the redelivery: the rejected record would come before it
                    sentEnd = true;
                }
            }
            check(seen.get("keep") == 1, "keep delivered " + seen.get("keep") + " times");
            check(seen.get("again") == 2, "released record delivered " + seen.get("again") + " times, want 2");
            check(seen.get("drop") == 1, "rejected record delivered " + seen.get("drop") + " times, want 1");
        }
    }

    /** Two consumers of one partition both receive records; every record goes to exactly one. */
    private static void severalConsumers() throws Exception {
        String topic = PREFIX + "-several", group = topic + "-g";
        createTopic(topic);
        try (KafkaProducer<String, String> p = producer();
                KafkaShareConsumer<String, String> c1 = consumer(group, "implicit", 5);
                KafkaShareConsumer<String, String> c2 = consumer(group, "implicit", 5)) {
            c1.subscribe(List.of(topic));
            c2.subscribe(List.of(topic));
            warmUp(p, topic, false, c1, c2);
            List<String> want = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                want.add("r" + i);
            }
            send(p, topic, want.toArray(String[]::new));
            Set<String> got1 = new HashSet<>(), got2 = new HashSet<>();
            long deadline = System.currentTimeMillis() + 2 * TIMEOUT_MS;
            while (got1.size() + got2.size() < want.size()) {
                check(System.currentTimeMillis() < deadline, "received " + (got1.size() + got2.size()) + " of 100");
                for (ConsumerRecord<String, String> r : c1.poll(Duration.ofMillis(200))) {
                    if (!r.value().equals("warm")) {
                        check(!got2.contains(r.value()) && got1.add(r.value()), r.value() + " delivered twice");
                    }
                }
                for (ConsumerRecord<String, String> r : c2.poll(Duration.ofMillis(200))) {
                    if (!r.value().equals("warm")) {
                        check(!got1.contains(r.value()) && got2.add(r.value()), r.value() + " delivered twice");
                    }
                }
            }
            check(!got1.isEmpty() && !got2.isEmpty(), "one consumer got everything: " + got1.size() + "/" + got2.size());
        }
    }

    /** A record released over and over is archived after group.share.delivery.count.limit (5) deliveries. */
    private static void deliveryLimit() throws Exception {
        String topic = PREFIX + "-limit", group = topic + "-g";
        createTopic(topic);
        try (KafkaProducer<String, String> p = producer();
                KafkaShareConsumer<String, String> c = consumer(group, "explicit", 500)) {
            c.subscribe(List.of(topic));
            warmUp(p, topic, true, c);
            send(p, topic, "poison");
            int count = 0;
            boolean sentEnd = false, end = false;
            long deadline = System.currentTimeMillis() + TIMEOUT_MS;
            while (!end) {
                check(System.currentTimeMillis() < deadline, "poison delivered " + count + " times, no end record");
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    if (r.value().equals("poison")) {
                        count++;
                        check(deliveries(r) == count, "poison: delivery count " + deliveries(r) + ", want " + count);
                        c.acknowledge(r, AcknowledgeType.RELEASE);
                    } else {
                        end |= r.value().equals("end");
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                }
                c.commitSync(Duration.ofMillis(TIMEOUT_MS));
                if (!sentEnd && count == 5) {
                    send(p, topic, "end");
                    sentEnd = true;
                }
            }
            check(count == 5, "poison delivered " + count + " times, want 5 (the delivery count limit)");
        }
    }

    /**
     * A consumer that stops polling keeps its records locked until the acquisition lock
     * (group.share.record.lock.duration.ms, 30 s) expires; then another consumer gets them.
     */
    private static void lockExpiry() throws Exception {
        String topic = PREFIX + "-lock", group = topic + "-g";
        createTopic(topic);
        try (KafkaProducer<String, String> p = producer();
                KafkaShareConsumer<String, String> stuck = consumer(group, "explicit", 500);
                KafkaShareConsumer<String, String> other = consumer(group, "implicit", 500)) {
            stuck.subscribe(List.of(topic));
            warmUp(p, topic, true, stuck);
            send(p, topic, "locked");
            boolean got = false;
            long deadline = System.currentTimeMillis() + TIMEOUT_MS;
            while (!got) {
                check(System.currentTimeMillis() < deadline, "the first consumer never got the record");
                for (ConsumerRecord<String, String> r : stuck.poll(Duration.ofMillis(500))) {
                    got |= r.value().equals("locked");
                }
            }
            // stuck neither acknowledges nor polls again
            other.subscribe(List.of(topic));
            deadline = System.currentTimeMillis() + 3 * TIMEOUT_MS;
            int count = -1;
            while (count < 0) {
                check(System.currentTimeMillis() < deadline, "the locked record was not redelivered after the lock expired");
                for (ConsumerRecord<String, String> r : other.poll(Duration.ofMillis(500))) {
                    if (r.value().equals("locked")) {
                        count = deliveries(r);
                    }
                }
            }
            // 2 at least: the stuck consumer's last ShareFetch may still be
            // in flight when the lock first expires and acquire the record
            // once more (into a buffer it never polls); its lock expires
            // too, so other may see delivery 3 on a loaded machine.
            check(count >= 2, "redelivered record has delivery count " + count + ", want 2 or more");
        }
    }
}
