package sluice.clients;

import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * The scenario runner shared by the Java scenarios: registration, API gating, timing and the JSONL
 * results format of test/clients (one object per line in $SLUICE_RESULTS_DIR/&lt;client&gt;.jsonl). Shared by
 * every Maven profile of this project (kafka-clients 4.x and 3.9, the tools, Streams and Connect).
 */
public final class Harness {
    /** A scenario body; throws on any misbehaviour. */
    public interface Body {
        void run() throws Exception;
    }

    /** Thrown by a scenario that cannot run here (e.g. it needs the broker's data directory). */
    public static final class Skipped extends RuntimeException {
        public Skipped(String reason) {
            super(reason);
        }
    }

    private record Scenario(String name, String feature, List<String> apis, Body body) {}

    public static final String BOOTSTRAP = env("SLUICE_BOOTSTRAP", "127.0.0.1:9092");
    public static final String RUN_ID = env("SLUICE_RUN_ID", Long.toString(ProcessHandle.current().pid()));
    private static final Set<String> APIS = new HashSet<>(Arrays.asList(env("SLUICE_APIS", "").split(",")));
    /** The security listeners and credentials (scripts/test-clients.sh); empty when the broker lacks them. */
    public static final String SASL_SSL_BOOTSTRAP = env("SLUICE_SASL_SSL_BOOTSTRAP", "");
    public static final String SASL_PLAINTEXT_BOOTSTRAP = env("SLUICE_SASL_PLAINTEXT_BOOTSTRAP", "");
    public static final String CA_PEM = env("SLUICE_CA_PEM", "");
    public static final String PLAIN_USER = env("SLUICE_SASL_PLAIN_USER", "alice");
    public static final String PLAIN_PASSWORD = env("SLUICE_SASL_PLAIN_PASSWORD", "alice-secret");

    private final String client;
    private final List<Scenario> scenarios = new ArrayList<>();

    public Harness(String client) {
        this.client = client;
    }

    public static String env(String name, String def) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? def : v;
    }

    public void add(String name, String feature, List<String> apis, Body body) {
        scenarios.add(new Scenario(name, feature, apis, body));
    }

    /** Runs the scenarios named in only (all when empty); returns true when none failed. */
    public boolean runAll(String clientVersion, Set<String> only) throws IOException {
        String dir = env("SLUICE_RESULTS_DIR", ".");
        boolean ok = true;
        try (Writer out = new FileWriter(dir + "/" + client + ".jsonl", StandardCharsets.UTF_8, true)) {
            out.write("{\"client\":" + json(client) + ",\"client_version\":" + json(clientVersion) + "}\n");
            for (Scenario s : scenarios) {
                if (!only.isEmpty() && !only.contains(s.name())) {
                    continue;
                }
                List<String> missing = s.apis().stream().filter(a -> !APIS.contains(a)).toList();
                String status;
                String detail = "";
                long start = System.nanoTime();
                if (!missing.isEmpty()) {
                    status = "skip";
                    detail = "broker does not advertise " + String.join(" ", missing);
                } else {
                    try {
                        s.body().run();
                        status = "pass";
                    } catch (Skipped sk) {
                        status = "skip";
                        detail = sk.getMessage();
                    } catch (Throwable t) {
                        status = "fail";
                        detail = describe(t);
                        StringWriter sw = new StringWriter();
                        t.printStackTrace(new PrintWriter(sw));
                        System.err.print(sw);
                        ok = false;
                    }
                }
                long ms = (System.nanoTime() - start) / 1_000_000;
                out.write("{\"client\":" + json(client) + ",\"test\":" + json(s.name()) + ",\"feature\":"
                        + json(s.feature()) + ",\"status\":" + json(status) + ",\"detail\":" + json(detail)
                        + ",\"ms\":" + ms + "}\n");
                out.flush();
                System.out.println(status.toUpperCase() + " " + client + "/" + s.name()
                        + (detail.isEmpty() ? "" : ": " + detail));
            }
        }
        return ok;
    }

    /** The Kafka version of the kafka-clients jar on the classpath (a resource in that jar). */
    public static String kafkaVersion() throws IOException {
        java.util.Properties p = new java.util.Properties();
        try (var in = Harness.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) {
                p.load(in);
            }
        }
        return p.getProperty("version", "unknown");
    }

    /** The exception chain in one line: "Outer: msg <- Cause: msg". */
    public static String describe(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null && b.length() < 1500; c = c.getCause()) {
            if (b.length() > 0) {
                b.append(" <- ");
            }
            b.append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
        }
        return b.toString();
    }

    public static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    /** Skips the scenario unless the SASL_SSL listener and its CA are given. */
    public static void needSaslSsl() {
        if (SASL_SSL_BOOTSTRAP.isEmpty() || CA_PEM.isEmpty()) {
            throw new Skipped("not set: SLUICE_SASL_SSL_BOOTSTRAP or SLUICE_CA_PEM (no such listener)");
        }
    }

    /**
     * Client settings for the SASL_SSL listener (trust: the suite's CA as a PEM trust store) with a login
     * module for mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512).
     */
    public static java.util.Map<String, Object> saslSsl(String mechanism, String user, String password) {
        needSaslSsl();
        String module = mechanism.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        return java.util.Map.of(
                "bootstrap.servers", SASL_SSL_BOOTSTRAP,
                "security.protocol", "SASL_SSL",
                "sasl.mechanism", mechanism,
                "sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + password + "\";",
                "ssl.truststore.type", "PEM",
                "ssl.truststore.location", CA_PEM);
    }

    public static void check(boolean cond, String message) {
        if (!cond) {
            throw new AssertionError(message);
        }
    }

    /** Polls cond every 100 ms until it holds or timeoutMs passes. */
    public static void eventually(String what, long timeoutMs, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            if (cond.getAsBoolean()) {
                return;
            }
            Thread.sleep(100);
        }
        throw new AssertionError(what + ": not true within " + timeoutMs + " ms");
    }
}
