package sluice.clients;

import static sluice.clients.Harness.BOOTSTRAP;
import static sluice.clients.Harness.PLAIN_PASSWORD;
import static sluice.clients.Harness.PLAIN_USER;
import static sluice.clients.Harness.RUN_ID;
import static sluice.clients.Harness.SASL_SSL_BOOTSTRAP;
import static sluice.clients.Harness.check;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Security scenarios with kafka-clients on the suite's SASL_SSL listener (scripts/test-clients.sh; the CA is
 * a PEM trust store): PLAIN, SCRAM-SHA-512 with a user made by Admin.alterUserScramCredentials through the
 * PLAINTEXT listener, and wrong passwords refused with SaslAuthenticationException. Each skips when
 * SLUICE_SASL_SSL_BOOTSTRAP is not set. Registered by Main.
 */
final class Security {
    private static final long TIMEOUT_MS = 30_000;
    private static final String PREFIX = "java-sec-" + RUN_ID;
    private static final List<String> SASL = List.of("SASLHandshake", "SASLAuthenticate");
    private static final List<String> DATA = List.of("SASLHandshake", "SASLAuthenticate", "CreateTopics",
            "Metadata", "Produce", "Fetch", "ListOffsets");

    private Security() {}

    static void register(Harness h) {
        h.add("security-sasl-plain-ssl", "security.sasl-plain-ssl", DATA, Security::plainSsl);
        List<String> scram = new ArrayList<>(DATA);
        scram.addAll(List.of("AlterUserSCRAMCredentials", "DescribeUserSCRAMCredentials"));
        h.add("security-scram-sha-512-ssl", "security.scram", scram, Security::scramSha512);
        List<String> wrong = new ArrayList<>(SASL);
        wrong.add("DescribeCluster");
        h.add("security-wrong-password", "security.wrong-password", wrong, Security::wrongPassword);
    }

    /** An admin client on the PLAINTEXT listener, or with the given settings on another one. */
    private static Admin admin(Map<String, Object> security) {
        Map<String, Object> p = new HashMap<>();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        p.putAll(security);
        return Admin.create(p);
    }

    /** Creates topic through the PLAINTEXT listener, produces three records and reads them back with security. */
    static void roundTrip(String topic, Map<String, Object> security) throws Exception {
        try (Admin a = admin(Map.of())) {
            a.createTopics(List.of(new NewTopic(topic, Optional.of(1), Optional.empty()))).all()
                    .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, TIMEOUT_MS);
        pp.putAll(security);
        List<String> values = List.of("v0", "v1", "over " + security.get("sasl.mechanism"));
        List<Long> offsets = new ArrayList<>();
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (int i = 0; i < values.size(); i++) {
                acks.add(p.send(new ProducerRecord<>(topic, 0, "k" + i, values.get(i))));
            }
            p.flush();
            for (Future<RecordMetadata> f : acks) {
                offsets.add(f.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).offset());
            }
        }
        check(offsets.equals(List.of(0L, 1L, 2L)), "offsets " + offsets);

        Properties cp = new Properties();
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cp.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        cp.putAll(security);
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + TIMEOUT_MS;
            while (got.size() < values.size() && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    got.add(r.value());
                }
            }
        }
        check(got.equals(values), "read " + got + ", want " + values);
    }

    private static void plainSsl() throws Exception {
        Map<String, Object> sec = Harness.saslSsl("PLAIN", PLAIN_USER, PLAIN_PASSWORD);
        roundTrip(PREFIX + "-plain", sec);
        // A client on the SASL_SSL listener is told that listener's address.
        try (Admin a = admin(sec)) {
            List<String> nodes = a.describeCluster().nodes().get(TIMEOUT_MS, TimeUnit.MILLISECONDS).stream()
                    .map(n -> n.host() + ":" + n.port()).toList();
            check(nodes.equals(List.of(SASL_SSL_BOOTSTRAP)), "SASL_SSL listener advertises " + nodes);
        }
    }

    private static void scramSha512() throws Exception {
        Harness.needSaslSsl();
        String user = PREFIX + "-scram512";
        String password = "scram-512-secret";
        try (Admin a = admin(Map.of())) {
            a.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password)))
                    .all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            UserScramCredentialsDescription d = a.describeUserScramCredentials(List.of(user)).description(user)
                    .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            List<String> infos = d.credentialInfos().stream().map(i -> i.mechanism() + "/" + i.iterations()).toList();
            check(infos.equals(List.of("SCRAM_SHA_512/8192")), "described credentials of " + user + ": " + infos);
        }
        roundTrip(PREFIX + "-scram512", Harness.saslSsl("SCRAM-SHA-512", user, password));
    }

    private static void wrongPassword() throws Exception {
        Map<String, String> logins = Map.of(
                "PLAIN", PLAIN_USER,
                // SCRAM does not tell an unknown user from a wrong password.
                "SCRAM-SHA-512", PREFIX + "-nobody");
        for (Map.Entry<String, String> e : logins.entrySet()) {
            Map<String, Object> sec = new HashMap<>(Harness.saslSsl(e.getKey(), e.getValue(), "not-" + PLAIN_PASSWORD));
            sec.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
            sec.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
            try (Admin a = admin(sec)) {
                java.util.Collection<Node> nodes = a.describeCluster().nodes().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                throw new AssertionError(e.getKey() + " login of " + e.getValue()
                        + " with a wrong password succeeded: " + nodes);
            } catch (ExecutionException ex) {
                check(ex.getCause() instanceof SaslAuthenticationException,
                        e.getKey() + ": want SaslAuthenticationException, got " + Harness.describe(ex.getCause()));
                check(ex.getCause().getMessage().contains("Authentication failed"),
                        e.getKey() + ": message " + ex.getCause().getMessage());
            }
        }
    }
}
