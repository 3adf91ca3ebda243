package sluice.clients;

import static sluice.clients.Harness.RUN_ID;
import static sluice.clients.Harness.SASL_PLAINTEXT_BOOTSTRAP;
import static sluice.clients.Harness.check;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * SASL/OAUTHBEARER scenarios with kafka-clients (scripts/test-clients.sh): the unsecured login module on the
 * SASL_PLAINTEXT listener (Kafka's development mode, unsigned tokens), the OAuth client-credentials login against
 * the harness's token endpoint on the OAUTH listener (signed JWTs validated by the broker against the harness's
 * JWKS), and KIP-368 re-authentication on the OAUTH listener, whose sessions last SLUICE_OAUTH_REAUTH_MS. Each
 * skips when its listener is not given. Registered by Main.
 */
final class OAuth {
    private static final long TIMEOUT_MS = 30_000;
    private static final String PREFIX = "java-oauth-" + RUN_ID;
    private static final List<String> DATA = List.of("SASLHandshake", "SASLAuthenticate", "CreateTopics",
            "Metadata", "Produce", "Fetch", "ListOffsets");
    static final String OAUTH_BOOTSTRAP = env("SLUICE_OAUTH_BOOTSTRAP");
    static final String TOKEN_URL = env("SLUICE_OAUTH_TOKEN_URL");
    static final String CLIENT_ID = env("SLUICE_OAUTH_CLIENT_ID");
    static final String CLIENT_SECRET = env("SLUICE_OAUTH_CLIENT_SECRET");
    static final long REAUTH_MS = Long.parseLong(System.getenv().getOrDefault("SLUICE_OAUTH_REAUTH_MS", "0"));
    private static final String MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

    private OAuth() {}

    private static String env(String name) {
        return System.getenv().getOrDefault(name, "");
    }

    static void register(Harness h) {
        h.add("security-oauthbearer-unsecured", "security.oauthbearer-unsecured", DATA, OAuth::unsecured);
        h.add("security-oauthbearer-oidc", "security.oauthbearer-oidc", DATA, OAuth::clientCredentials);
        h.add("security-reauthentication", "security.reauthentication", DATA, OAuth::reauthentication);
    }

    private static void unsecured() throws Exception {
        if (SASL_PLAINTEXT_BOOTSTRAP.isEmpty()) {
            throw new Harness.Skipped("not set: SLUICE_SASL_PLAINTEXT_BOOTSTRAP (no such listener)");
        }
        Map<String, Object> sec = Map.of(
                "bootstrap.servers", SASL_PLAINTEXT_BOOTSTRAP,
                "security.protocol", "SASL_PLAINTEXT",
                "sasl.mechanism", "OAUTHBEARER",
                "sasl.jaas.config", MODULE + " required unsecuredLoginStringClaim_sub=\"alice\";");
        Security.roundTrip(PREFIX + "-unsecured", sec);
    }

    /** Client-credentials login settings for the OAUTH listener (skips without it). */
    private static Map<String, Object> oidc(String secret) {
        if (OAUTH_BOOTSTRAP.isEmpty() || TOKEN_URL.isEmpty()) {
            throw new Harness.Skipped("not set: SLUICE_OAUTH_BOOTSTRAP or SLUICE_OAUTH_TOKEN_URL (no OAuth listener)");
        }
        // Kafka 4.x fetches tokens only from URLs the JVM allows.
        System.setProperty("org.apache.kafka.sasl.oauthbearer.allowed.urls", TOKEN_URL);
        Map<String, Object> sec = new HashMap<>();
        sec.put("bootstrap.servers", OAUTH_BOOTSTRAP);
        sec.put("security.protocol", "SASL_PLAINTEXT");
        sec.put("sasl.mechanism", "OAUTHBEARER");
        sec.put("sasl.oauthbearer.token.endpoint.url", TOKEN_URL);
        sec.put("sasl.login.callback.handler.class",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler");
        sec.put("sasl.jaas.config", MODULE + " required clientId=\"" + CLIENT_ID + "\" clientSecret=\"" + secret + "\";");
        return sec;
    }

    private static void clientCredentials() throws Exception {
        Security.roundTrip(PREFIX + "-oidc", oidc(CLIENT_SECRET));
        // A wrong client secret gets no token: the client cannot log in.
        Map<String, Object> bad = new HashMap<>(oidc("not-" + CLIENT_SECRET));
        bad.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10_000);
        bad.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
        bad.put("sasl.login.retry.backoff.max.ms", 200);
        try (Admin a = Admin.create(bad)) {
            a.describeCluster().nodes().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            throw new AssertionError("login with a wrong client secret succeeded");
        } catch (AssertionError e) {
            throw e;
        } catch (Exception e) {
            System.out.println("    wrong client secret refused: " + Harness.describe(e));
        }
    }

    private static double metric(KafkaProducer<?, ?> p, String name) {
        double sum = 0;
        for (Map.Entry<MetricName, ? extends Metric> e : p.metrics().entrySet()) {
            if (e.getKey().name().equals(name) && e.getKey().group().equals("producer-metrics")) {
                sum += ((Number) e.getValue().metricValue()).doubleValue();
            }
        }
        return sum;
    }

    /**
     * A producer on the OAUTH listener keeps sending while its sessions (SLUICE_OAUTH_REAUTH_MS) run out: it
     * re-authenticates at least twice (the client's successful-reauthentication-total), without failures and
     * without opening a connection after its first re-authentication, and every record is acknowledged.
     */
    private static void reauthentication() throws Exception {
        Map<String, Object> sec = oidc(CLIENT_SECRET);
        if (REAUTH_MS <= 0) {
            throw new Harness.Skipped("not set: SLUICE_OAUTH_REAUTH_MS (connections.max.reauth.ms of the OAuth listener)");
        }
        String topic = PREFIX + "-reauth";
        try (Admin a = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, Harness.BOOTSTRAP))) {
            a.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic(topic, 1, (short) 1))).all()
                    .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        pp.putAll(sec);
        long deadline = System.currentTimeMillis() + 10 * REAUTH_MS + TIMEOUT_MS;
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            double opened = -1;
            int sent = 0;
            while (metric(p, "successful-reauthentication-total") < 3) {
                check(System.currentTimeMillis() < deadline, "re-authentications: "
                        + metric(p, "successful-reauthentication-total") + " after " + sent + " records");
                p.send(new ProducerRecord<>(topic, "k", "v" + sent)).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                sent++;
                if (opened < 0 && metric(p, "successful-reauthentication-total") >= 1) {
                    opened = metric(p, "connection-creation-total");
                }
                Thread.sleep(200);
            }
            double failed = metric(p, "failed-reauthentication-total");
            check(failed == 0, "failed re-authentications: " + failed);
            double now = metric(p, "connection-creation-total");
            check(now == opened, "connections opened after the first re-authentication: " + opened + " -> " + now);
            System.out.println("    " + sent + " records, " + metric(p, "successful-reauthentication-total")
                    + " re-authentications, " + now + " connections");
        }
    }
}
