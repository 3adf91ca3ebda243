package sluice.clients;

import static sluice.clients.Harness.RUN_ID;
import static sluice.clients.Harness.check;
import static sluice.clients.Harness.env;
import static sluice.clients.Harness.eventually;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The authorizer with kafka-clients' Admin, producer and consumer, against the suite's second broker with the
 * authorizer on (SLUICE_ACL_BOOTSTRAP; super user SLUICE_ACL_ADMIN_USER, and SLUICE_ACL_USER-java, a user of
 * this client's own with no ACLs): every API family refused with Kafka's exception and nothing changed, then
 * allowed once Admin.createAcls grants it, then refused again after Admin.deleteAcls. Registered by Main.
 */
final class Acls {
    private static final long TIMEOUT_MS = 30_000;
    private static final String PREFIX = "java-acl-" + RUN_ID;
    private static final String ACL = env("SLUICE_ACL_BOOTSTRAP", "");
    private static final String USER = env("SLUICE_ACL_USER", "alice") + "-java";

    private Acls() {}

    static void register(Harness h) {
        h.add("security-acls", "security.acls", List.of("SASLHandshake", "SASLAuthenticate", "CreateACLs",
                "DescribeACLs", "DeleteACLs", "CreateTopics", "Metadata", "Produce", "Fetch", "ListOffsets",
                "FindCoordinator", "JoinGroup", "SyncGroup", "OffsetCommit", "OffsetFetch", "InitProducerID",
                "AddPartitionsToTxn", "EndTxn", "ListGroups"), Acls::acls);
    }

    private static Map<String, Object> login(String user, String password) {
        Map<String, Object> p = new HashMap<>();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, ACL);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "PLAIN");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                + user + "\" password=\"" + password + "\";");
        return p;
    }

    private static Admin admin(Map<String, Object> login) {
        Map<String, Object> p = new HashMap<>(login);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        return Admin.create(p);
    }

    private static KafkaProducer<String, String> producer(Map<String, Object> login, Map<String, Object> extra) {
        Properties p = new Properties();
        p.putAll(login);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) TIMEOUT_MS);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        p.putAll(extra);
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    private static KafkaConsumer<String, String> consumer(Map<String, Object> login, String group) {
        Properties p = new Properties();
        p.putAll(login);
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1_000);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    interface Action {
        void run() throws Exception;
    }

    /** action must fail with want (thrown directly or as the cause of an ExecutionException). */
    private static void refused(String what, Class<? extends Exception> want, Action action) throws Exception {
        try {
            action.run();
        } catch (Exception e) {
            Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            check(want.isInstance(t), what + ": " + Harness.describe(t) + " (want " + want.getSimpleName() + ")");
            return;
        }
        throw new AssertionError(what + ": succeeded, want " + want.getSimpleName());
    }

    private static long endOffset(Admin a, String topic) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        return a.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp)
                .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).offset();
    }

    private static void send(Map<String, Object> login, Map<String, Object> extra, String topic, String value)
            throws Exception {
        try (KafkaProducer<String, String> p = producer(login, extra)) {
            p.send(new ProducerRecord<>(topic, 0, null, value)).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        }
    }

    private static AclBinding allow(ResourceType type, String name, PatternType pattern, AclOperation op) {
        return new AclBinding(new ResourcePattern(type, name, pattern),
                new AccessControlEntry("User:" + USER, "*", op, AclPermissionType.ALLOW));
    }

    static void acls() throws Exception {
        if (ACL.isEmpty()) {
            throw new Harness.Skipped("not set: SLUICE_ACL_BOOTSTRAP (no broker with the authorizer)");
        }
        Map<String, Object> su = login(env("SLUICE_ACL_ADMIN_USER", "admin"),
                env("SLUICE_ACL_ADMIN_PASSWORD", "admin-secret"));
        Map<String, Object> al = login(USER, env("SLUICE_ACL_PASSWORD", "alice-secret"));
        String t = PREFIX, g = PREFIX + "-group", tx = PREFIX + "-tx", created = PREFIX + "-new";
        Map<String, Object> plain = Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        TopicPartition tp = new TopicPartition(t, 0);
        try (Admin sa = admin(su); Admin aa = admin(al)) {
            sa.createTopics(List.of(new NewTopic(t, Optional.of(1), Optional.empty()))).all()
                    .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            send(su, plain, t, "by-admin");

            // Without ACLs: every family refused with Kafka's exception.
            refused("alice creates a topic", TopicAuthorizationException.class, () -> aa.createTopics(
                    List.of(new NewTopic(created, Optional.of(1), Optional.empty()))).all()
                    .get(TIMEOUT_MS, TimeUnit.MILLISECONDS));
            refused("alice lists ACLs", ClusterAuthorizationException.class,
                    () -> aa.describeAcls(AclBindingFilter.ANY).values().get(TIMEOUT_MS, TimeUnit.MILLISECONDS));
            refused("alice produces", TopicAuthorizationException.class, () -> send(al, plain, t, "denied"));
            try (KafkaConsumer<String, String> c = consumer(al, null)) {
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                refused("alice fetches", TopicAuthorizationException.class, () -> {
                    long deadline = System.currentTimeMillis() + TIMEOUT_MS;
                    while (System.currentTimeMillis() < deadline) {
                        check(c.poll(Duration.ofMillis(500)).isEmpty(), "alice read records without Read");
                    }
                });
            }
            try (KafkaConsumer<String, String> c = consumer(al, g)) {
                refused("alice commits the group's offsets", GroupAuthorizationException.class,
                        () -> c.commitSync(Map.of(tp, new OffsetAndMetadata(1))));
            }
            refused("alice fetches the group's offsets", GroupAuthorizationException.class,
                    () -> aa.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata()
                            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS));
            try (KafkaProducer<String, String> p = producer(al, Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tx))) {
                refused("alice's transactional producer", TransactionalIdAuthorizationException.class,
                        p::initTransactions);
            }

            // A denied request changed nothing: no record, no topic, no group, no offset.
            check(endOffset(sa, t) == 1, "end offset after alice's denied produce: " + endOffset(sa, t));
            check(!sa.listTopics().names().get(TIMEOUT_MS, TimeUnit.MILLISECONDS).contains(created),
                    created + " exists after a denied CreateTopics");
            check(sa.listGroups().all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS).stream()
                    .noneMatch(x -> x.groupId().equals(g)), g + " exists after denied group requests");

            // ACLs created with Admin.createAcls.
            List<AclBinding> acls = List.of(
                    allow(ResourceType.TOPIC, t, PatternType.LITERAL, AclOperation.WRITE),
                    allow(ResourceType.TOPIC, t, PatternType.LITERAL, AclOperation.READ),
                    allow(ResourceType.GROUP, g, PatternType.LITERAL, AclOperation.READ),
                    allow(ResourceType.TRANSACTIONAL_ID, tx, PatternType.LITERAL, AclOperation.WRITE),
                    allow(ResourceType.TOPIC, created, PatternType.PREFIXED, AclOperation.CREATE));
            sa.createAcls(acls).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            AclBindingFilter mine = new AclBindingFilter(ResourcePatternFilter.ANY, new AccessControlEntryFilter(
                    "User:" + USER, null, AclOperation.ANY, AclPermissionType.ANY));
            Collection<AclBinding> listed = sa.describeAcls(mine).values().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            check(listed.size() == acls.size() && listed.containsAll(acls), "describeAcls: " + listed);

            aa.createTopics(List.of(new NewTopic(created, Optional.of(1), Optional.empty()))).all()
                    .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            // Idempotent (the default): Write on a topic is enough for a producer id.
            send(al, Map.of(), t, "by-alice");
            List<String> got = new ArrayList<>();
            try (KafkaConsumer<String, String> c = consumer(al, g)) {
                c.subscribe(List.of(t));
                eventually("alice's group consumer reads 2 records", 60_000, () -> {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                        got.add(r.value());
                    }
                    return got.size() >= 2;
                });
                c.commitSync();
            }
            check(got.equals(List.of("by-admin", "by-alice")), "alice's group consumer read " + got);
            Map<TopicPartition, OffsetAndMetadata> offs = aa.listConsumerGroupOffsets(g)
                    .partitionsToOffsetAndMetadata().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            check(offs.get(tp) != null && offs.get(tp).offset() == 2, "alice's committed offsets: " + offs);
            try (KafkaProducer<String, String> p = producer(al, Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tx))) {
                p.initTransactions();
                p.beginTransaction();
                p.send(new ProducerRecord<>(t, 0, null, "in-txn"));
                p.commitTransaction();
            }
            check(endOffset(sa, t) == 4, "end offset after alice's transaction: " + endOffset(sa, t));

            // Removed again: refused again.
            Collection<AclBinding> deleted = sa.deleteAcls(List.of(mine)).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            check(deleted.size() == acls.size(), "deleteAcls removed " + deleted);
            refused("alice produces after deleteAcls", TopicAuthorizationException.class,
                    () -> send(al, plain, t, "denied-again"));
        }
    }
}
