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
 * RackAwareReplicaSelector. Nodes can be stopped (SIGTERM, by process) and started again on the same
 * directory. Closing it stops every node and removes the directory.
 */
final class LocalCluster implements AutoCloseable {
    static final int NODES = 3;
    final Path dir;
    private final String bin;
    private final int[] kafkaPorts = new int[NODES];
    private final int[] controllerPorts = new int[NODES];
    private final int[] metricsPorts = new int[NODES];
    private final Process[] procs = new Process[NODES];

    private LocalCluster(String bin, Path dir) {
        this.bin = bin;
        this.dir = dir;
    }

    static LocalCluster start() throws Exception {
        String bin = Harness.env("SLUICE_BIN", "");
        if (bin.isEmpty()) {
            throw new Harness.Skipped("not set: SLUICE_BIN (the scenario starts its own three-node cluster)");
        }
        LocalCluster c = new LocalCluster(bin, Files.createTempDirectory("sluice-cluster"));
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

    String bootstrap() {
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
    void startNode(int id) throws Exception {
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
        Files.writeString(nd.resolve("server.properties"), String.join("\n",
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
                "transaction.state.log.num.partitions=3",
                ""));
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

    /** Stops node id (SIGTERM: a controlled shutdown) and waits for its process to end. */
    void stopNode(int id) throws Exception {
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

    String log(int id) throws IOException {
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
