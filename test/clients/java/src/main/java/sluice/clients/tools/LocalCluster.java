package sluice.clients.tools;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import sluice.clients.Harness;

/**
 * A three-node Sluice cluster of the suite's binary (SLUICE_BIN) for the replication scenarios of Kafka's
 * tools (kafka-reassign-partitions, kafka-leader-election, kafka-cluster unregister, follower fetching):
 * combined broker and controller nodes 1..3 on free loopback ports, each with its own data directory,
 * log and metrics endpoint, short session and election timeouts, rack "rack-N" and Kafka's
 * RackAwareReplicaSelector. Nodes can be stopped (SIGTERM, by process) or killed (SIGKILL, by process) and
 * started again on the same directory. Closing it stops every node and removes the directory. Public for the
 * Streams and Connect scenarios on a cluster (their Maven profiles compile this file too); extra
 * server.properties lines (e.g. default.replication.factor=3) go to {@link #start(Map)}.
 */
public final class LocalCluster implements AutoCloseable {
    static final int NODES = 3;
    final Path dir;
    private final String bin;
    private final int[] kafkaPorts = new int[NODES];
    private final int[] controllerPorts = new int[NODES];
    private final int[] metricsPorts = new int[NODES];
    private final Process[] procs = new Process[NODES];
    private final java.util.Map<String, String> extra;

    private LocalCluster(String bin, Path dir, java.util.Map<String, String> extra) {
        this.bin = bin;
        this.dir = dir;
        this.extra = extra;
    }

    static LocalCluster start() throws Exception {
        return start(java.util.Map.of());
    }

    /** Starts the cluster with these server.properties lines added to (or overriding) the defaults below. */
    public static LocalCluster start(java.util.Map<String, String> extraProps) throws Exception {
        String bin = Harness.env("SLUICE_BIN", "");
        if (bin.isEmpty()) {
            throw new Harness.Skipped("not set: SLUICE_BIN (the scenario starts its own three-node cluster)");
        }
        LocalCluster c = new LocalCluster(bin, Files.createTempDirectory("sluice-cluster"),
                new java.util.TreeMap<>(extraProps));
        List<ServerSocket> held = new ArrayList<>();
        try {
            for (int i = 0; i < NODES; i++) {
                for (int[] ports : new int[][] {c.kafkaPorts, c.controllerPorts, c.metricsPorts}) {
                    ServerSocket s = new ServerSocket(0);
                    held.add(s);
                    ports[i] = s.getLocalPort();
                }
            }
        } finally {
            for (ServerSocket s : held) {
                s.close();
            }
        }
        try {
            // A node serves clients once the metadata quorum has formed: launch them all, then wait.
            for (int id = 1; id <= NODES; id++) {
                c.launch(id);
            }
            for (int id = 1; id <= NODES; id++) {
                c.awaitListening(id);
            }
            for (int id = 1; id <= NODES; id++) {
                c.awaitLive(id);
            }
        } catch (Throwable t) {
            c.close();
            throw t;
        }
        return c;
    }

    public String bootstrap() {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < NODES; i++) {
            out.add("127.0.0.1:" + kafkaPorts[i]);
        }
        return String.join(",", out);
    }

    Path dataDir(int id) {
        return dir.resolve("node-" + id).resolve("data");
    }

    /** The node's Prometheus metrics text. */
    String metrics(int id) throws Exception {
        var conn = (java.net.HttpURLConnection) new java.net.URL("http://127.0.0.1:" + metricsPorts[id - 1] + "/metrics")
                .openConnection();
        conn.setConnectTimeout(2000);
        conn.setReadTimeout(5000);
        try (var in = conn.getInputStream()) {
            return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
    }

    /** Starts node id (again) and waits until it is a live (registered, unfenced) broker. */
    public void startNode(int id) throws Exception {
        launch(id);
        awaitListening(id);
        awaitLive(id);
    }

    /** Waits until DescribeCluster through any node lists broker id (registered and unfenced). */
    void awaitLive(int id) throws Exception {
        try (org.apache.kafka.clients.admin.Admin a = org.apache.kafka.clients.admin.Admin.create(java.util.Map.of(
                org.apache.kafka.clients.admin.AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap(),
                org.apache.kafka.clients.admin.AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5000,
                org.apache.kafka.clients.admin.AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 3000))) {
            Harness.eventually("broker " + id + " live in the cluster", 60_000, () -> {
                try {
                    return a.describeCluster().nodes().get(5, TimeUnit.SECONDS).stream().anyMatch(n -> n.id() == id);
                } catch (Exception e) {
                    return false;
                }
            });
        }
    }

    private void launch(int id) throws Exception {
        Path nd = dir.resolve("node-" + id);
        Files.createDirectories(nd);
        String voters = java.util.stream.IntStream.range(0, NODES)
                .mapToObj(i -> (i + 1) + "@127.0.0.1:" + controllerPorts[i]).collect(Collectors.joining(","));
        java.util.Map<String, String> props = new java.util.LinkedHashMap<>();
        for (String line : List.of(
                "node.id=" + id,
                "process.roles=broker,controller",
                "controller.quorum.voters=" + voters,
                "listeners=PLAINTEXT://127.0.0.1:" + kafkaPorts[id - 1] + ",CONTROLLER://127.0.0.1:"
                        + controllerPorts[id - 1],
                "controller.listener.names=CONTROLLER",
                "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "broker.rack=rack-" + id,
                "replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector",
                "controller.quorum.election.timeout.ms=1000",
                "broker.session.timeout.ms=3000",
                "broker.heartbeat.interval.ms=300",
                "replica.lag.time.max.ms=5000",
                "auto.leader.rebalance.enable=false",
                "offsets.topic.num.partitions=3",
                "transaction.state.log.num.partitions=3")) {
            int eq = line.indexOf('=');
            props.put(line.substring(0, eq), line.substring(eq + 1));
        }
        props.putAll(extra);
        StringBuilder text = new StringBuilder();
        props.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        Files.writeString(nd.resolve("server.properties"), text.toString());
        procs[id - 1] = new ProcessBuilder(bin, "--config", nd.resolve("server.properties").toString(),
                "--data-dir", dataDir(id).toString(), "--metrics-listen", "127.0.0.1:" + metricsPorts[id - 1])
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(nd.resolve("sluice.log").toFile()))
                .start();
    }

    private void awaitListening(int id) throws Exception {
        Process p = procs[id - 1];
        int port = kafkaPorts[id - 1];
        try {
            Harness.eventually("cluster node " + id + " listens on " + port, 30_000, () -> {
                if (!p.isAlive()) {
                    return true; // reported below
                }
                try (Socket s = new Socket("127.0.0.1", port)) {
                    return true;
                } catch (IOException e) {
                    return false;
                }
            });
            if (!p.isAlive()) {
                throw new AssertionError("cluster node " + id + " exited with status " + p.exitValue());
            }
        } catch (AssertionError e) {
            String log = log(id);
            throw new AssertionError(e.getMessage() + "; its log ends: "
                    + log.substring(Math.max(0, log.length() - 1500)), e);
        }
    }

    /** The process id of node id, or -1 when it is not running. */
    public long pid(int id) {
        Process p = procs[id - 1];
        return p == null ? -1 : p.pid();
    }

    /** Kills node id with SIGKILL (its own process, by pid: no shutdown at all) and waits for it to end. */
    public void killNode(int id) throws Exception {
        Process p = procs[id - 1];
        if (p == null) {
            return;
        }
        new ProcessBuilder("kill", "-KILL", Long.toString(p.pid())).inheritIO().start().waitFor(10, TimeUnit.SECONDS);
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        procs[id - 1] = null;
    }

    /** Stops node id (SIGTERM: a controlled shutdown) and waits for its process to end. */
    public void stopNode(int id) throws Exception {
        Process p = procs[id - 1];
        if (p == null) {
            return;
        }
        p.destroy();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        procs[id - 1] = null;
    }

    public String log(int id) throws IOException {
        return Files.readString(dir.resolve("node-" + id).resolve("sluice.log"));
    }

    @Override
    public void close() throws Exception {
        for (int id = 1; id <= NODES; id++) {
            stopNode(id);
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        }
    }
}
