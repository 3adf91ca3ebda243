package sluice.clients.streams;

import static sluice.clients.Harness.check;
import static sluice.clients.Harness.eventually;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.streams.StreamsConfig;
import sluice.clients.Harness;

/**
 * The Streams rebalance protocol (KIP-1071) when an instance dies: the group's streams configs are set
 * first (IncrementalAlterConfigs on the GROUP resource: streams.session.timeout.ms 10 s,
 * streams.heartbeat.interval.ms 1 s, streams.num.standby.replicas 1); instance A runs in a JVM of its own,
 * instance B in this one; they share the four tasks of a word count, each the standby of the other's
 * stateful task. Once the first input is counted and committed, A's JVM is killed (SIGKILL: no LeaveGroup)
 * and a replacement C joins; after the group's session timeout the broker removes A, B and C take its tasks,
 * restore their state from the changelog, and the counts of all the input are complete and exact.
 */
final class InstanceKilled {
    private static final long TIMEOUT_MS = 60_000;

    private InstanceKilled() {}

    static void run() throws Exception {
        String prefix = "streams-" + Harness.RUN_ID;
        String app = prefix + "-wordcount-killed";
        String input = prefix + "-lines-killed";
        String output = prefix + "-counts-killed";
        String repartition = app + "-words-repartition";
        Main.admin().createTopics(List.of(new NewTopic(input, Optional.of(2), Optional.empty()),
                new NewTopic(output, Optional.of(1), Optional.empty()))).all().get(30, TimeUnit.SECONDS);
        setGroupConfigs(app);

        List<String> first = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            first.add("red green blue " + (i % 4 == 0 ? "cyan" : "magenta") + " tone" + i % 9);
        }
        List<String> second = List.of("red again", "green green", "yellow appears", "tone3 tone4");
        List<String> all = new ArrayList<>(first);
        all.addAll(second);

        Path stateA = Files.createTempDirectory("sluice-streams-ka");
        Path stateB = Files.createTempDirectory("sluice-streams-kb");
        Path stateC = Files.createTempDirectory("sluice-streams-kc");
        File logA = File.createTempFile("sluice-streams-ka", ".log");
        Map<String, Long> latest = new ConcurrentHashMap<>();
        Process a = null;
        Main.Instance b = null;
        Main.Instance c = null;
        try (KafkaConsumer<String, Long> out = Main.outputReader(output, StreamsConfig.AT_LEAST_ONCE)) {
            a = startProcess(app, input, output, stateA, logA);
            Process pa = a;
            eventually("instance A (own JVM) reaches RUNNING", TIMEOUT_MS, () -> {
                check(pa.isAlive(), "instance A exited: " + read(logA));
                return read(logA).contains("STATE RUNNING");
            });
            Properties pb = Main.streamsProps(app, stateB, StreamsConfig.AT_LEAST_ONCE);
            pb.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
            b = Main.start(Main.topology(input, output), pb);
            Main.Instance bb = b;
            String processA = await("A and B share the four tasks, each with a standby task", () -> {
                Main.failIfDead(bb);
                check(pa.isAlive(), "instance A exited: " + read(logA));
                StreamsGroupDescription d = describe(app);
                if (d.members().size() != 2 || Main.activeTasks(bb) != 2) {
                    return null;
                }
                for (StreamsGroupMemberDescription m : d.members()) {
                    if (count(m.assignment().activeTasks()) != 2 || count(m.assignment().standbyTasks()) != 1) {
                        return null;
                    }
                }
                String bClient = bb.streams().metadataForLocalThreads().iterator().next().consumerClientId();
                return d.members().stream().filter(m -> !m.clientId().equals(bClient))
                        .map(StreamsGroupMemberDescription::processId).findFirst().orElse(null);
            });

            Main.produceLines(input, first);
            Main.awaitCounts(out, latest, Main.expectedCounts(first), b);
            // Everything A and B read is committed: A dies with nothing to reprocess (at-least-once would
            // count twice what it read but had not committed).
            awaitCommitted(app, List.of(new TopicPartition(input, 0), new TopicPartition(input, 1),
                    new TopicPartition(repartition, 0), new TopicPartition(repartition, 1)));

            a.destroyForcibly(); // SIGKILL
            check(a.waitFor(30, TimeUnit.SECONDS), "instance A did not die");
            System.out.println("  killed instance A (pid " + a.pid() + ", process " + processA + ")");
            a = null;

            Properties pc = Main.streamsProps(app, stateC, StreamsConfig.AT_LEAST_ONCE);
            pc.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
            c = Main.start(Main.topology(input, output), pc);
            Main.Instance cc = c;
            eventually("A is removed after its session timeout; B and C own the four tasks", TIMEOUT_MS, () -> {
                Main.failIfDead(bb);
                Main.failIfDead(cc);
                StreamsGroupDescription d = describe(app);
                boolean aGone = d.members().stream().noneMatch(m -> m.processId().equals(processA));
                return aGone && d.members().size() == 2 && Main.activeTasks(cc) >= 1
                        && Main.activeTasks(bb) + Main.activeTasks(cc) == 4;
            });
            Main.produceLines(input, second);
            Main.awaitCounts(out, latest, Main.expectedCounts(all), c);
            Main.failIfDead(b);
            System.out.println("  replacement C owns " + Main.activeTasks(c) + " task(s); B restored "
                    + b.restored().get() + ", C restored " + c.restored().get() + " records");
        } finally {
            if (a != null) {
                a.destroyForcibly();
                a.waitFor(30, TimeUnit.SECONDS);
            }
            if (b != null) {
                b.streams().close(java.time.Duration.ofSeconds(30));
            }
            if (c != null) {
                c.streams().close(java.time.Duration.ofSeconds(30));
            }
            Main.deleteTree(stateA);
            Main.deleteTree(stateB);
            Main.deleteTree(stateC);
            Files.deleteIfExists(logA.toPath());
        }
    }

    /**
     * The group's streams configs, set before the group exists. A broker whose group.streams.min.* bounds
     * refuse the short timeouts (Kafka's defaults: 45 s, 5 s) gets the standby count only, and the scenario
     * waits out the broker's session timeout instead.
     */
    private static void setGroupConfigs(String app) throws Exception {
        ConfigResource g = new ConfigResource(ConfigResource.Type.GROUP, app);
        List<AlterConfigOp> ops = List.of(set("streams.num.standby.replicas", "1"),
                set("streams.session.timeout.ms", "10000"), set("streams.heartbeat.interval.ms", "1000"));
        try {
            Main.admin().incrementalAlterConfigs(Map.of(g, ops)).all().get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof InvalidConfigurationException)) {
                throw e;
            }
            System.out.println("  short session timeout refused (" + e.getCause().getMessage()
                    + "); using the broker's");
            Main.admin().incrementalAlterConfigs(Map.of(g, ops.subList(0, 1))).all().get(30, TimeUnit.SECONDS);
        }
        var described = Main.admin().describeConfigs(List.of(g)).all().get(30, TimeUnit.SECONDS).get(g);
        ConfigEntry standbys = described.get("streams.num.standby.replicas");
        check(standbys != null && "1".equals(standbys.value())
                && standbys.source() == ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG,
                "streams.num.standby.replicas of " + app + ": " + standbys);
    }

    private static AlterConfigOp set(String name, String value) {
        return new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET);
    }

    private static Process startProcess(String app, String input, String output, Path state, File log)
            throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        ProcessBuilder pb = new ProcessBuilder(java, "-Xms32m", "-Xmx256m", "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                WordCountProcess.class.getName(), app, input, output, state.toString());
        pb.redirectErrorStream(true);
        pb.redirectOutput(log);
        return pb.start();
    }

    private static String read(File f) {
        try {
            return Files.readString(f.toPath());
        } catch (Exception e) {
            return "";
        }
    }

    private static StreamsGroupDescription describe(String app) {
        try {
            return Main.admin().describeStreamsGroups(List.of(app)).all().get(30, TimeUnit.SECONDS).get(app);
        } catch (Exception e) {
            throw new AssertionError("describeStreamsGroups " + app + ": " + Harness.describe(e), e);
        }
    }

    private static int count(Collection<StreamsGroupMemberAssignment.TaskIds> tasks) {
        return tasks.stream().mapToInt(t -> t.partitions().size()).sum();
    }

    /** Waits until the group's committed offsets of tps are their end offsets. */
    private static void awaitCommitted(String app, List<TopicPartition> tps) throws Exception {
        eventually("the group commits everything it read", TIMEOUT_MS, () -> {
            try {
                Map<TopicPartition, OffsetAndMetadata> committed = Main.admin()
                        .listStreamsGroupOffsets(Map.of(app, new ListStreamsGroupOffsetsSpec()))
                        .partitionsToOffsetAndMetadata(app).get(30, TimeUnit.SECONDS);
                Map<TopicPartition, OffsetSpec> latest = new java.util.HashMap<>();
                tps.forEach(tp -> latest.put(tp, OffsetSpec.latest()));
                var ends = Main.admin().listOffsets(latest).all().get(30, TimeUnit.SECONDS);
                for (TopicPartition tp : tps) {
                    OffsetAndMetadata o = committed.get(tp); // none for a partition never read from
                    if ((o == null ? 0 : o.offset()) != ends.get(tp).offset()) {
                        return false;
                    }
                }
                return true;
            } catch (Exception e) {
                throw new AssertionError("committed offsets of " + app + ": " + Harness.describe(e), e);
            }
        });
    }

    /** Polls supplier until it returns non-null (at most TIMEOUT_MS). */
    private static <T> T await(String what, java.util.function.Supplier<T> supplier) throws Exception {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (System.currentTimeMillis() < deadline) {
            T v = supplier.get();
            if (v != null) {
                return v;
            }
            Thread.sleep(200);
        }
        throw new AssertionError("timed out after " + TIMEOUT_MS + " ms waiting for: " + what);
    }
}
