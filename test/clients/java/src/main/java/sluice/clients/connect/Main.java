package sluice.clients.connect;

import static sluice.clients.Harness.BOOTSTRAP;
import static sluice.clients.Harness.RUN_ID;
import static sluice.clients.Harness.check;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.connect.cli.ConnectDistributed;
import org.apache.kafka.connect.runtime.Connect;
import sluice.clients.Harness;

/**
 * Kafka Connect in distributed mode on Sluice, in this JVM: the worker is started the way
 * ConnectDistributed's main starts it (startConnect with the worker properties), with its REST API on a
 * loopback port. It must create its config, offset and status topics compacted and start; a
 * FileStreamSource → topic → FileStreamSink pipeline, configured over REST, must copy a file's lines; after
 * the worker is stopped and started again, lines appended meanwhile must arrive exactly once (the source
 * resumes from its offsets in the offset topic, the sink from its group's committed offsets). The second
 * scenario runs the same with exactly.once.source.support=enabled (KIP-618: transactional source tasks,
 * zombie fencing) and a read_committed sink.
 * Usage: java -cp ... sluice.clients.connect.Main [scenario...].
 */
public final class Main {
    private static final String PREFIX = "connect-" + RUN_ID;
    private static final long TIMEOUT_MS = 90_000;
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private Main() {}

    public static void main(String[] args) throws Exception {
        Harness h = new Harness("kafka-connect");
        List<String> apis = List.of("CreateTopics", "Metadata", "DescribeConfigs", "DescribeCluster", "Produce",
                "Fetch", "ListOffsets", "FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup",
                "OffsetCommit", "OffsetFetch");
        h.add("distributed-file-pipeline", "connect.distributed", apis, () -> pipeline(false));
        List<String> eos = new ArrayList<>(apis);
        eos.addAll(List.of("InitProducerID", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit"));
        h.add("distributed-exactly-once-source", "connect.exactly-once", eos, () -> pipeline(true));
        // On a three-node cluster of its own, internal topics at RF 3, a broker killed mid-run (ClusterResilience).
        h.add("distributed-cluster-broker-killed", "connect.distributed-cluster", apis,
                ClusterResilience::brokerKilled);
        List<String> eosCluster = new ArrayList<>(eos);
        eosCluster.addAll(List.of("ListTransactions", "DescribeTransactions"));
        h.add("distributed-exactly-once-cluster-broker-killed", "connect.exactly-once-cluster", eosCluster,
                ClusterResilience::exactlyOnceBrokerKilled);
        boolean ok = h.runAll(Harness.kafkaVersion(), Set.of(args));
        System.exit(ok ? 0 : 1);
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static Map<String, String> workerProps(int port, boolean eos) {
        String prefix = PREFIX + (eos ? "-eos" : "");
        Map<String, String> p = new HashMap<>();
        p.put("bootstrap.servers", BOOTSTRAP);
        p.put("group.id", prefix + "-cluster");
        p.put("config.storage.topic", prefix + "-configs");
        p.put("offset.storage.topic", prefix + "-offsets");
        p.put("status.storage.topic", prefix + "-status");
        if (eos) {
            // KIP-618: source tasks write records and offsets in one transaction, the leader writes the
            // config topic transactionally and fences zombie tasks; the sink reads only committed data.
            p.put("exactly.once.source.support", "enabled");
            p.put("consumer.isolation.level", "read_committed");
        }
        p.put("config.storage.replication.factor", "1");
        p.put("offset.storage.replication.factor", "1");
        p.put("status.storage.replication.factor", "1");
        p.put("offset.storage.partitions", "5");
        p.put("status.storage.partitions", "1");
        p.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        p.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
        p.put("offset.flush.interval.ms", "500");
        p.put("scheduled.rebalance.max.delay.ms", "1000");
        p.put("listeners", "http://127.0.0.1:" + port);
        p.put("rest.advertised.host.name", "127.0.0.1");
        p.put("rest.advertised.port", String.valueOf(port));
        // Kafka's own plugins carry ServiceLoader manifests; no reflective classpath scan needed.
        p.put("plugin.discovery", "service_load");
        return p;
    }

    static Connect<?> startWorker(Map<String, String> props) {
        return new ConnectDistributed().startConnect(props);
    }

    static void stopWorker(Connect<?> c) {
        c.stop();
        c.awaitStop();
    }

    record Http(int status, String body) {}

    static Http http(String method, String url, String json) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30));
        if (json != null) {
            b.header("Content-Type", "application/json")
                    .method(method, HttpRequest.BodyPublishers.ofString(json, StandardCharsets.UTF_8));
        } else {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        }
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        return new Http(r.statusCode(), r.body());
    }

    /** Polls until cond holds; a failed request counts as "not yet". The last observation goes in the error. */
    interface Probe {
        String observe() throws Exception;
    }

    static void await(String what, Probe probe, java.util.function.Predicate<String> done)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        String last = "";
        while (System.currentTimeMillis() < deadline) {
            try {
                last = probe.observe();
                if (done.test(last)) {
                    return;
                }
            } catch (AssertionError e) {
                throw e;
            } catch (Exception e) {
                last = Harness.describe(e);
            }
            Thread.sleep(200);
        }
        throw new AssertionError(what + ": not true within " + TIMEOUT_MS + " ms; last seen: " + last);
    }

    static void connector(String rest, String name, Map<String, String> config) throws Exception {
        StringBuilder json = new StringBuilder("{\"name\":" + Harness.json(name) + ",\"config\":{");
        boolean firstEntry = true;
        for (var e : config.entrySet()) {
            json.append(firstEntry ? "" : ",").append(Harness.json(e.getKey())).append(':')
                    .append(Harness.json(e.getValue()));
            firstEntry = false;
        }
        json.append("}}");
        await("POST /connectors " + name, () -> {
            Http r = http("POST", rest + "/connectors", json.toString());
            if (r.status() == 409) { // rebalance in progress: retry
                return "409 " + r.body();
            }
            if (r.status() != 201) {
                throw new AssertionError("POST /connectors " + name + ": HTTP " + r.status() + " " + r.body());
            }
            return "created";
        }, "created"::equals);
    }

    static void awaitRunning(String rest, String name) throws InterruptedException {
        await(name + " and its task RUNNING", () -> http("GET", rest + "/connectors/" + name + "/status", null).body(),
                body -> {
                    if (body.contains("\"FAILED\"")) {
                        throw new AssertionError(name + " failed: " + body);
                    }
                    return body.contains("\"connector\":{\"state\":\"RUNNING\"")
                            && body.matches("(?s).*\"tasks\":\\[\\{[^\\]]*\"state\":\"RUNNING\".*");
                });
    }

    static List<String> lines(Path p) throws IOException {
        return Files.exists(p) ? Files.readAllLines(p, StandardCharsets.UTF_8) : List.of();
    }

    static void append(Path p, List<String> lines) throws IOException {
        Files.write(p, lines, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    /** Waits until the sink file holds exactly want; a line too many or out of place fails at once. */
    private static void awaitSinkFile(Path sink, List<String> want) throws InterruptedException {
        await("the sink file holds the " + want.size() + " source lines", () -> {
            List<String> got = lines(sink);
            if (got.size() > want.size() || !want.subList(0, got.size()).equals(got)) {
                throw new AssertionError("sink file is not a prefix of the source lines (duplicates or disorder): "
                        + got);
            }
            return got.size() + " of " + want.size() + " lines";
        }, s -> s.equals(want.size() + " of " + want.size() + " lines"));
    }

    private static void pipeline(boolean eos) throws Exception {
        Path dir = Files.createTempDirectory("sluice-connect");
        Path source = dir.resolve("source.txt");
        Path sink = dir.resolve("sink.txt");
        String topic = PREFIX + (eos ? "-eos" : "") + "-lines";
        int port = freePort();
        String rest = "http://127.0.0.1:" + port;
        Map<String, String> props = workerProps(port, eos);
        List<String> want = new ArrayList<>();
        for (int i = 1; i <= 10; i++) {
            want.add("line " + i + " of the source file");
        }
        append(source, want);

        Connect<?> worker = startWorker(props);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP))) {
            await("the worker's REST API answers", () -> String.valueOf(http("GET", rest + "/", null).status()),
                    "200"::equals);
            for (String t : List.of(props.get("config.storage.topic"), props.get("offset.storage.topic"),
                    props.get("status.storage.topic"))) {
                // The REST API may answer before the worker has created its topics: wait for each.
                ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
                await("Connect's internal topic " + t + " exists", () -> {
                    Config c = admin.describeConfigs(List.of(r)).all().get(30, TimeUnit.SECONDS).get(r);
                    return c.get("cleanup.policy").value();
                }, policy -> {
                    check("compact".equals(policy), "Connect's internal topic " + t + " has cleanup.policy=" + policy);
                    return true;
                });
            }
            connector(rest, "file-source", Map.of("connector.class",
                    "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max", "1",
                    "file", source.toString(), "topic", topic));
            connector(rest, "file-sink", Map.of("connector.class",
                    "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max", "1",
                    "file", sink.toString(), "topics", topic));
            awaitRunning(rest, "file-source");
            awaitRunning(rest, "file-sink");
            awaitSinkFile(sink, want);

            // Stop the worker; lines written while it is down must arrive once it is back, and only they.
            stopWorker(worker);
            worker = null;
            List<String> more = List.of("line 11 written while the worker was down", "line 12", "line 13");
            append(source, more);
            want.addAll(more);
            worker = startWorker(props);
            await("the restarted worker's REST API lists both connectors",
                    () -> http("GET", rest + "/connectors", null).body(),
                    b -> b.contains("\"file-source\"") && b.contains("\"file-sink\""));
            awaitRunning(rest, "file-source");
            awaitRunning(rest, "file-sink");
            awaitSinkFile(sink, want);
            List<String> last = List.of("line 14 after the restart");
            append(source, last);
            want.addAll(last);
            awaitSinkFile(sink, want);
        } finally {
            if (worker != null) {
                stopWorker(worker);
            }
            for (Path p : List.of(source, sink, dir)) {
                Files.deleteIfExists(p);
            }
        }
    }
}
