package sluice.clients.tools;

import static sluice.clients.Harness.BOOTSTRAP;
import static sluice.clients.Harness.RUN_ID;
import static sluice.clients.Harness.check;
import static sluice.clients.Harness.eventually;

import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import sluice.clients.Harness;

/**
 * Kafka's own command-line tools (the kafka-tools artifact) against Sluice: kafka-topics, kafka-configs,
 * kafka-consumer-groups, kafka-console-producer/-consumer, kafka-share-groups and kafka-console-share-consumer,
 * kafka-dump-log on a Sluice segment, and a SCRAM user
 * made with kafka-configs logging in over the SASL_SSL listener (--command-config). Each
 * command is the tool's main class with the arguments its shell script would pass (see ToolRunner), all
 * in one JVM. Usage: java -cp ... sluice.clients.tools.Main [scenario...]; environment as for
 * sluice.clients.Main, plus SLUICE_CLIENTS_DATA_DIR (the broker's data directory, for kafka-dump-log).
 */
public final class Main {
    private static final String PREFIX = "tools-" + RUN_ID;
    private static final String TOPICS = "org.apache.kafka.tools.TopicCommand";
    private static final String CONFIGS = "org.apache.kafka.tools.ConfigCommand";
    private static final String GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";
    private static final String PRODUCER = "org.apache.kafka.tools.ConsoleProducer";
    private static final String CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer";
    private static final String DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments";
    private static final String GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell";
    private static final String DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand";
    private static final String ACLS = "org.apache.kafka.tools.AclCommand";
    private static final String REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand";
    private static final String LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand";
    private static final String TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand";
    private static final String FEATURES = "org.apache.kafka.tools.FeatureCommand";
    private static final String STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand";
    private static final String SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand";
    private static final String SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer";
    private static final String CLUSTER_TOOL = "org.apache.kafka.tools.ClusterTool";
    private static final long TIMEOUT_MS = 30_000;

    private static Admin admin;
    private static LocalCluster cluster;

    private Main() {}

    public static void main(String[] args) throws Exception {
        Harness h = new Harness("kafka-tools");
        List<String> topicApis = List.of("CreateTopics", "Metadata", "DescribeConfigs");
        h.add("kafka-topics-create-describe-list", "tools.topics", topicApis, Main::topicsCreateDescribeList);
        h.add("kafka-topics-alter-partitions", "tools.topics-alter-partitions",
                List.of("CreateTopics", "Metadata", "CreatePartitions"), Main::topicsAlterPartitions);
        h.add("kafka-topics-delete", "tools.topics-delete", List.of("CreateTopics", "Metadata", "DeleteTopics"),
                Main::topicsDelete);
        h.add("kafka-configs-describe", "tools.configs-describe", List.of("CreateTopics", "DescribeConfigs"),
                Main::configsDescribe);
        h.add("kafka-configs-alter", "tools.configs-alter",
                List.of("CreateTopics", "DescribeConfigs", "IncrementalAlterConfigs"), Main::configsAlter);
        h.add("kafka-console-producer-consumer", "tools.console",
                List.of("CreateTopics", "Produce", "Fetch", "ListOffsets"), Main::consoleKeys);
        h.add("kafka-consumer-groups", "tools.consumer-groups",
                List.of("CreateTopics", "Produce", "Fetch", "ListOffsets", "FindCoordinator", "JoinGroup",
                        "SyncGroup", "OffsetCommit", "OffsetFetch", "ListGroups", "DescribeGroups"),
                Main::consumerGroups);
        h.add("kafka-get-offsets-delete-records", "tools.get-offsets-delete-records",
                List.of("CreateTopics", "Produce", "ListOffsets", "DeleteRecords"), Main::offsetsAndDeleteRecords);
        h.add("kafka-dump-log", "tools.dump-log", List.of("CreateTopics", "Produce"), Main::dumpLog);
        h.add("kafka-dump-log-offsets-decoder", "tools.dump-log-offsets",
                List.of("CreateTopics", "Produce", "FindCoordinator", "OffsetCommit"), Main::dumpOffsetsLog);
        h.add("kafka-dump-log-transaction-decoder", "tools.dump-log-transactions",
                List.of("CreateTopics", "Produce", "FindCoordinator", "InitProducerID", "AddPartitionsToTxn", "EndTxn"),
                Main::dumpTransactionLog);
        h.add("kafka-share-groups-console-share-consumer", "tools.share-groups",
                List.of("CreateTopics", "Produce", "FindCoordinator", "ShareGroupHeartbeat", "ShareFetch",
                        "ShareAcknowledge", "ListGroups", "ShareGroupDescribe", "DescribeShareGroupOffsets",
                        "AlterShareGroupOffsets", "DeleteShareGroupOffsets", "DeleteGroups", "DescribeConfigs",
                        "IncrementalAlterConfigs"), Main::shareGroups);
        h.add("kafka-acls", "tools.acls", List.of("DescribeACLs", "CreateACLs"), Main::acls);
        h.add("kafka-acls-authorizer", "tools.acls-authorizer",
                List.of("SASLHandshake", "SASLAuthenticate", "CreateACLs", "DescribeACLs", "DeleteACLs", "CreateTopics",
                        "Metadata", "InitProducerID", "Produce", "FindCoordinator", "JoinGroup", "SyncGroup", "Fetch",
                        "OffsetCommit", "AddPartitionsToTxn", "EndTxn", "DescribeTransactions"),
                Main::aclsWithAuthorizer);
        h.add("kafka-configs-quotas", "tools.configs-quotas", List.of("AlterClientQuotas", "DescribeClientQuotas"),
                Quotas::configsQuotas);
        h.add("quotas-throttle", "tools.quotas-throttle",
                List.of("CreateTopics", "AlterClientQuotas", "Produce", "Fetch", "ListOffsets", "DeleteTopics"),
                Quotas::throttled);
        h.add("kafka-reassign-partitions", "tools.reassign-partitions",
                List.of("CreateTopics", "Metadata", "DescribeCluster", "DescribeLogDirs", "ListPartitionReassignments",
                        "AlterPartitionAssignments"), Main::reassignPartitions);
        h.add("kafka-reassign-partitions-log-dirs", "tools.reassign-log-dirs",
                List.of("CreateTopics", "Metadata", "DescribeCluster", "DescribeLogDirs", "AlterPartitionAssignments",
                        "ListPartitionReassignments", "AlterReplicaLogDirs"), Main::reassignLogDirs);
        h.add("kafka-configs-list-config-resources", "tools.configs-list-resources",
                List.of("CreateTopics", "DescribeConfigs", "IncrementalAlterConfigs", "ListGroups",
                        "ListConfigResources"), Main::configsListResources);
        h.add("kafka-configs-groups-consumer-share", "tools.configs-groups",
                List.of("CreateTopics", "Produce", "Fetch", "DescribeConfigs", "IncrementalAlterConfigs",
                        "FindCoordinator", "ConsumerGroupHeartbeat", "OffsetFetch"), Main::configsGroups);
        h.add("kafka-leader-election", "tools.leader-election", List.of("CreateTopics", "Metadata", "ElectLeaders"),
                Main::leaderElection);
        // Against a three-node cluster of its own (LocalCluster); the decommission scenario stays last.
        h.add("kafka-reassign-partitions-cluster", "tools.reassign-partitions-cluster",
                List.of("CreateTopics", "Produce", "Fetch", "Metadata", "AlterPartitionAssignments",
                        "ListPartitionReassignments", "IncrementalAlterConfigs"), Main::reassignOnCluster);
        h.add("kafka-configs-brokers-reassign-throttle-cluster", "tools.broker-configs-throttle-cluster",
                List.of("CreateTopics", "Produce", "DescribeConfigs", "IncrementalAlterConfigs",
                        "AlterPartitionAssignments", "ListPartitionReassignments"), Main::brokerConfigsOnCluster);
        h.add("kafka-leader-election-cluster", "tools.leader-election-cluster",
                List.of("CreateTopics", "Produce", "Metadata", "ElectLeaders"), Main::leaderElectionOnCluster);
        h.add("consumer-client-rack-follower-fetch", "cluster.follower-fetching",
                List.of("CreateTopics", "Produce", "Fetch", "Metadata", "ListOffsets"), Main::followerFetchOnCluster);
        h.add("kafka-cluster-unregister-decommission", "tools.decommission-broker",
                List.of("CreateTopics", "Metadata", "AlterPartitionAssignments", "ListPartitionReassignments",
                        "DescribeCluster", "UnregisterBroker"), Main::decommissionOnCluster);
        h.add("kafka-transactions", "tools.transactions",
                List.of("CreateTopics", "Produce", "InitProducerID", "Metadata", "FindCoordinator", "ListTransactions",
                        "DescribeTransactions", "DescribeProducers"), Main::transactions);
        h.add("kafka-features", "tools.features", List.of("ApiVersions", "UpdateFeatures"), Main::features);
        h.add("kafka-cluster-unregister-controller", "tools.unregister-controller",
                List.of("DescribeCluster", "UnregisterController"), Main::unregisterController);
        h.add("kafka-streams-groups", "tools.streams-groups",
                List.of("CreateTopics", "StreamsGroupHeartbeat", "StreamsGroupDescribe", "ListGroups", "DeleteGroups"),
                Main::streamsGroups);
        h.add("kafka-configs-scram-sasl-ssl", "security.scram-tool",
                List.of("SASLHandshake", "SASLAuthenticate", "AlterUserSCRAMCredentials", "DescribeUserSCRAMCredentials",
                        "DescribeClientQuotas", "CreateTopics", "Metadata", "Produce", "Fetch", "ListOffsets"),
                Main::scramUserOverSaslSsl);
        boolean ok;
        try {
            ok = h.runAll(Harness.kafkaVersion(), Set.of(args));
        } finally {
            if (admin != null) {
                admin.close(Duration.ofSeconds(5));
            }
            if (cluster != null) {
                cluster.close();
            }
        }
        System.exit(ok ? 0 : 1);
    }

    // ---- helpers --------------------------------------------------------------------------------

    private static Admin admin() {
        if (admin == null) {
            admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP,
                    AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS));
        }
        return admin;
    }

    private static ToolRunner.Result topics(String... args) throws Exception {
        return ToolRunner.run("kafka-topics", TOPICS, withBootstrap(args));
    }

    private static ToolRunner.Result configs(String... args) throws Exception {
        return ToolRunner.run("kafka-configs", CONFIGS, withBootstrap(args));
    }

    private static ToolRunner.Result groups(String... args) throws Exception {
        return ToolRunner.run("kafka-consumer-groups", GROUPS, withBootstrap(args));
    }

    private static ToolRunner.Result produce(String input, String... args) throws Exception {
        return ToolRunner.runWithInput("kafka-console-producer", PRODUCER, input, withBootstrap(args));
    }

    private static ToolRunner.Result consume(String... args) throws Exception {
        return ToolRunner.run("kafka-console-consumer", CONSUMER, withBootstrap(args));
    }

    private static String[] withBootstrap(String... args) {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", BOOTSTRAP));
        all.addAll(Arrays.asList(args));
        return all.toArray(String[]::new);
    }

    private static void contains(ToolRunner.Result r, String want) {
        check(r.out().contains(want), "want \"" + want + "\" in the output of " + r);
    }

    private static void contains(String out, String want) {
        check(out.contains(want), "want \"" + want + "\" in " + out);
    }

    private static String topicConfig(String topic, String name) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config c = admin().describeConfigs(List.of(res)).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS).get(res);
        return c.get(name) == null ? null : c.get(name).value();
    }

    /**
     * Waits until DescribeConfigs shows the topic's config at want: on a cluster, the broker answering may
     * publish the controller's change a moment after the broker that took the alter answered.
     */
    private static void awaitTopicConfig(String topic, String name, String want) throws Exception {
        String[] last = {null};
        try {
            eventually(name + "=" + want, TIMEOUT_MS, () -> {
                try {
                    last[0] = topicConfig(topic, name);
                } catch (Exception e) {
                    last[0] = e.toString();
                }
                return want.equals(last[0]);
            });
        } catch (AssertionError e) {
            throw new AssertionError(name + "=" + last[0] + ", want " + want, e);
        }
    }

    private static void createTopic(String topic, String... configs) throws Exception {
        List<String> args = new ArrayList<>(List.of("--create", "--topic", topic, "--partitions", "1",
                "--replication-factor", "1"));
        for (String c : configs) {
            args.add("--config");
            args.add(c);
        }
        contains(topics(args.toArray(String[]::new)).ok(), "Created topic " + topic + ".");
    }

    // ---- kafka-topics ---------------------------------------------------------------------------

    private static void topicsCreateDescribeList() throws Exception {
        String t = PREFIX + "-topics";
        createTopic(t, "cleanup.policy=compact", "min.cleanable.dirty.ratio=0.2");
        contains(topics("--list").ok(), t);
        ToolRunner.Result d = topics("--describe", "--topic", t).ok();
        contains(d, "Topic: " + t);
        contains(d, "PartitionCount: 1");
        contains(d, "ReplicationFactor: 1");
        contains(d, "cleanup.policy=compact");
        contains(d, "min.cleanable.dirty.ratio=0.2");
        check(Pattern.compile("Partition: 0\\s+Leader: \\d+\\s+Replicas: \\d+\\s+Isr: \\d+").matcher(d.out()).find(),
                "partition 0 line with a leader, replicas and ISR missing in " + d);
        // A second create of the same name is refused with Kafka's message.
        ToolRunner.Result again = topics("--create", "--topic", t, "--partitions", "1");
        check(again.status() != 0 && (again.out() + again.err()).contains("already exists"),
                "second create should fail with TopicExistsException: " + again);
        // kafka-topics validates config values itself; the broker must refuse what only it can judge.
        ToolRunner.Result bad = topics("--create", "--topic", t + "-bad", "--config", "cleanup.policy=shred");
        check(bad.status() != 0 && bad.out().contains("Invalid value shred for configuration cleanup.policy"),
                "cleanup.policy=shred should be refused: " + bad);
        // More replicas than brokers (one node, or a small cluster).
        ToolRunner.Result rf = topics("--create", "--topic", t + "-rf10", "--partitions", "1", "--replication-factor",
                "10");
        check(rf.status() != 0 && (rf.out() + rf.err()).contains("InvalidReplicationFactorException"),
                "replication factor 10 on fewer brokers should fail with InvalidReplicationFactorException: " + rf);
        check(topics("--list").ok().out().lines().noneMatch(l -> l.startsWith(t + "-")),
                "a refused create left a topic behind");
    }

    private static void topicsAlterPartitions() throws Exception {
        String t = PREFIX + "-grow";
        createTopic(t);
        topics("--alter", "--topic", t, "--partitions", "3").ok();
        eventually(t + " has 3 partitions in kafka-topics --describe", TIMEOUT_MS, () -> {
            try {
                ToolRunner.Result d = topics("--describe", "--topic", t);
                return d.out().contains("PartitionCount: 3") && d.out().contains("Partition: 2");
            } catch (Exception e) {
                return false;
            }
        });
        ToolRunner.Result shrink = topics("--alter", "--topic", t, "--partitions", "2");
        check(shrink.status() != 0 && (shrink.out() + shrink.err()).contains("InvalidPartitionsException"),
                "shrinking to 2 partitions should fail with InvalidPartitionsException: " + shrink);
    }

    private static void topicsDelete() throws Exception {
        String t = PREFIX + "-delete-me";
        createTopic(t);
        topics("--delete", "--topic", t).ok();
        eventually(t + " gone from kafka-topics --list", TIMEOUT_MS, () -> {
            try {
                return !topics("--list").ok().out().lines().anyMatch(t::equals);
            } catch (Exception e) {
                return false;
            }
        });
    }

    // ---- kafka-configs --------------------------------------------------------------------------

    private static void configsDescribe() throws Exception {
        String t = PREFIX + "-configs";
        createTopic(t, "cleanup.policy=compact");
        ToolRunner.Result d = configs("--entity-type", "topics", "--entity-name", t, "--describe").ok();
        contains(d, "Dynamic configs for topic " + t + " are:");
        contains(d, "cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact");
        ToolRunner.Result all = configs("--entity-type", "topics", "--entity-name", t, "--describe", "--all").ok();
        contains(all, "All configs for topic " + t + " are:");
        contains(all, "segment.bytes=1073741824");
        contains(all, "min.compaction.lag.ms=0");
        String node = String.valueOf(admin().describeCluster().controller().get(TIMEOUT_MS, TimeUnit.MILLISECONDS).id());
        ToolRunner.Result b = configs("--entity-type", "brokers", "--entity-name", node, "--describe", "--all").ok();
        contains(b, "All configs for broker " + node + " are:");
        contains(b, "log.cleaner.enable=");
        contains(b, "log.cleanup.policy=delete");
    }

    private static void configsAlter() throws Exception {
        String t = PREFIX + "-alter";
        createTopic(t);
        configs("--entity-type", "topics", "--entity-name", t, "--alter", "--add-config", "cleanup.policy=compact")
                .ok();
        awaitTopicConfig(t, "cleanup.policy", "compact");
        // A list value in kafka-configs' bracket syntax, and a second config in the same call.
        configs("--entity-type", "topics", "--entity-name", t, "--alter", "--add-config",
                "cleanup.policy=[compact,delete],retention.ms=3600000").ok();
        awaitTopicConfig(t, "cleanup.policy", "compact,delete");
        awaitTopicConfig(t, "retention.ms", "3600000");
        ToolRunner.Result d = configs("--entity-type", "topics", "--entity-name", t, "--describe").ok();
        contains(d, "cleanup.policy=compact,delete");
        configs("--entity-type", "topics", "--entity-name", t, "--alter", "--delete-config",
                "cleanup.policy,retention.ms").ok();
        awaitTopicConfig(t, "cleanup.policy", "delete");
        ToolRunner.Result bad = configs("--entity-type", "topics", "--entity-name", t, "--alter", "--add-config",
                "cleanup.policy=shred");
        check(bad.status() != 0 && (bad.out() + bad.err()).contains("InvalidConfigurationException"),
                "cleanup.policy=shred should be refused: " + bad);
    }

    // ---- console producer / consumer -------------------------------------------------------------

    private static void consoleKeys() throws Exception {
        String t = PREFIX + "-console";
        createTopic(t, "cleanup.policy=compact");
        produce("user-42:v1\nuser-42:v2\nuser-7:NULL\nuser-9:hello world\n", "--topic", t,
                "--reader-property", "parse.key=true", "--reader-property", "key.separator=:",
                "--reader-property", "null.marker=NULL").ok();
        ToolRunner.Result c = consume("--topic", t, "--from-beginning", "--max-messages", "4", "--timeout-ms",
                String.valueOf(TIMEOUT_MS), "--formatter-property", "print.key=true",
                "--formatter-property", "print.offset=true", "--formatter-property", "key.separator=|").ok();
        List<String> lines = c.out().lines().filter(l -> !l.isBlank()).toList();
        List<String> want = List.of("Offset:0|user-42|v1", "Offset:1|user-42|v2", "Offset:2|user-7|null",
                "Offset:3|user-9|hello world");
        check(lines.equals(want), "console consumer printed " + lines + ", want " + want + " (" + c + ")");
        check(c.err().contains("Processed a total of 4 messages"), "consumer summary: " + c);
        // One partition, offset and an explicit starting offset, as operators read a single partition.
        ToolRunner.Result p = consume("--topic", t, "--partition", "0", "--offset", "2", "--max-messages", "2",
                "--timeout-ms", String.valueOf(TIMEOUT_MS), "--formatter-property", "print.key=true").ok();
        List<String> tail = p.out().lines().filter(l -> !l.isBlank()).toList();
        check(tail.equals(List.of("user-7\tnull", "user-9\thello world")), "from offset 2: " + tail + " (" + p + ")");
    }

    // ---- kafka-get-offsets / kafka-delete-records ------------------------------------------------

    private static String offsets(String topic, String time) throws Exception {
        return ToolRunner.run("kafka-get-offsets", GET_OFFSETS, withBootstrap("--topic", topic, "--time", time)).ok()
                .out().strip();
    }

    private static void offsetsAndDeleteRecords() throws Exception {
        String t = PREFIX + "-offsets-shell";
        createTopic(t);
        StringBuilder in = new StringBuilder();
        for (int i = 0; i < 10; i++) {
            in.append("v").append(i).append('\n');
        }
        produce(in.toString(), "--topic", t).ok();
        check(offsets(t, "-1").equals(t + ":0:10"), "latest: " + offsets(t, "-1"));
        check(offsets(t, "-2").equals(t + ":0:0"), "earliest: " + offsets(t, "-2"));
        check(offsets(t, "-3").matches(Pattern.quote(t) + ":0:\\d"), "max-timestamp: " + offsets(t, "-3"));

        java.nio.file.Path json = java.nio.file.Files.createTempFile("sluice-delete-records", ".json");
        try {
            java.nio.file.Files.writeString(json, "{\"partitions\":[{\"topic\":\"" + t
                    + "\",\"partition\":0,\"offset\":4}],\"version\":1}");
            ToolRunner.Result d = ToolRunner.run("kafka-delete-records", DELETE_RECORDS,
                    withBootstrap("--offset-json-file", json.toString())).ok();
            check(Pattern.compile("partition: " + Pattern.quote(t) + "-0\\s+low_watermark: 4").matcher(d.out()).find(),
                    "kafka-delete-records: " + d);
        } finally {
            java.nio.file.Files.deleteIfExists(json);
        }
        check(offsets(t, "-2").equals(t + ":0:4"), "earliest after delete-records: " + offsets(t, "-2"));
        check(offsets(t, "-1").equals(t + ":0:10"), "latest after delete-records: " + offsets(t, "-1"));
        ToolRunner.Result c = consume("--topic", t, "--from-beginning", "--max-messages", "6", "--timeout-ms",
                String.valueOf(TIMEOUT_MS)).ok();
        List<String> got = c.out().lines().filter(l -> !l.isBlank()).toList();
        check(got.equals(List.of("v4", "v5", "v6", "v7", "v8", "v9")), "read after delete-records: " + got);
    }

    // ---- cluster admin tools: kafka-acls, kafka-reassign-partitions, kafka-leader-election, ----------
    // ---- kafka-transactions -------------------------------------------------------------------------

    /** Runs a tool, checks it exited with status, and returns its stdout and stderr together. */
    private static String tool(int status, String script, String mainClass, String... args) throws Exception {
        ToolRunner.Result r = ToolRunner.run(script, mainClass, withBootstrap(args));
        check(r.status() == status, "want exit " + status + " from " + r);
        return r.out() + r.err();
    }

    private static void acls() throws Exception {
        // No authorizer: Kafka's tools report SECURITY_DISABLED with Kafka's own message, and fail.
        String list = tool(1, "kafka-acls", ACLS, "--list");
        check(list.contains("SecurityDisabledException: No Authorizer is configured on the broker"),
                "kafka-acls --list should report SecurityDisabledException: " + list);
        String add = tool(1, "kafka-acls", ACLS, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                "--topic", PREFIX + "-acl");
        check(add.contains("SecurityDisabledException"), "kafka-acls --add should report SecurityDisabledException: "
                + add);
    }

    /**
     * kafka-acls against a broker with the authorizer on (its own, started from SLUICE_BIN): alice is refused
     * until the super user grants her --producer and --consumer ACLs, then produces and consumes; an
     * unauthorized group and the removed ACLs refuse her again.
     */
    private static void aclsWithAuthorizer() throws Exception {
        try (AuthorizedBroker b = AuthorizedBroker.start()) {
            String admin = b.clientConfig("admin");
            String alice = b.clientConfig("alice");
            String t = PREFIX + "-acl-topic";
            String g = PREFIX + "-acl-group";
            String tx = PREFIX + "-acl-tx";
            java.util.function.BiFunction<String, String[], ToolRunner.Result> as = (cfg, args) -> {
                List<String> all = new ArrayList<>(List.of("--bootstrap-server", b.bootstrap, "--command-config", cfg));
                all.addAll(Arrays.asList(args));
                try {
                    return ToolRunner.run("kafka-acls", ACLS, all.toArray(new String[0]));
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            };
            ToolRunner.Result denied = as.apply(alice, new String[] {"--list"});
            check(denied.status() != 0 && (denied.out() + denied.err()).contains("ClusterAuthorizationException"),
                    "kafka-acls --list as alice (no ACL): " + denied);
            ToolRunner.Result create = ToolRunner.run("kafka-topics", TOPICS, "--bootstrap-server", b.bootstrap,
                    "--command-config", alice, "--create", "--topic", t, "--partitions", "1");
            check(create.status() != 0 && (create.out() + create.err()).contains("TopicAuthorizationException"),
                    "kafka-topics --create as alice (no ACL): " + create);
            java.util.function.Supplier<ToolRunner.Result> describeTx = () -> {
                try {
                    return ToolRunner.run("kafka-transactions", TRANSACTIONS, "--bootstrap-server", b.bootstrap,
                            "--command-config", alice, "describe", "--transactional-id", tx);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            };
            ToolRunner.Result txDenied = describeTx.get();
            // The tool's words for the TransactionalIdAuthorizationException of FindCoordinator.
            String txRefused = "failed due to authorization failure";
            check(txDenied.status() != 0 && (txDenied.out() + txDenied.err()).contains(txRefused),
                    "kafka-transactions describe as alice (no ACL): " + txDenied);
            try {
                commitOne(b.bootstrap, alice, tx, t, "denied");
                throw new AssertionError("alice's transactional producer initialized without an ACL");
            } catch (org.apache.kafka.common.errors.TransactionalIdAuthorizationException expected) {
                // Kafka's error for InitProducerId without Write on the transactional id.
            }

            as.apply(admin, new String[] {"--add", "--allow-principal", "User:alice", "--producer", "--topic", t,
                    "--transactional-id", tx}).ok();
            as.apply(admin, new String[] {"--add", "--allow-principal", "User:alice", "--consumer", "--topic", t,
                    "--group", g}).ok();
            ToolRunner.Result list = as.apply(admin, new String[] {"--list", "--topic", t}).ok();
            for (String op : List.of("WRITE", "CREATE", "DESCRIBE", "READ")) {
                contains(list, "(principal=User:alice, host=*, operation=" + op + ", permissionType=ALLOW)");
            }
            ToolRunner.Result txList = as.apply(admin, new String[] {"--list", "--transactional-id", tx}).ok();
            for (String op : List.of("WRITE", "DESCRIBE")) {
                contains(txList, "(principal=User:alice, host=*, operation=" + op + ", permissionType=ALLOW)");
            }

            contains(ToolRunner.run("kafka-topics", TOPICS, "--bootstrap-server", b.bootstrap, "--command-config",
                    alice, "--create", "--topic", t, "--partitions", "1").ok(), "Created topic " + t + ".");
            ToolRunner.runWithInput("kafka-console-producer", PRODUCER, "a\nb\n", "--bootstrap-server", b.bootstrap,
                    "--command-config", alice, "--topic", t).ok();
            ToolRunner.Result c = ToolRunner.run("kafka-console-consumer", CONSUMER, "--bootstrap-server", b.bootstrap,
                    "--command-config", alice, "--topic", t, "--group", g, "--from-beginning", "--max-messages", "2",
                    "--timeout-ms", String.valueOf(TIMEOUT_MS)).ok();
            List<String> got = c.out().lines().filter(l -> !l.isBlank()).toList();
            check(got.equals(List.of("a", "b")), "alice consumed " + got + " (" + c + ")");
            ToolRunner.Result otherGroup = ToolRunner.run("kafka-console-consumer", CONSUMER, "--bootstrap-server",
                    b.bootstrap, "--command-config", alice, "--topic", t, "--group", g + "-other", "--from-beginning",
                    "--max-messages", "1", "--timeout-ms", String.valueOf(TIMEOUT_MS));
            // The tool logs the GroupAuthorizationException and ends without a record; the broker says why.
            check(otherGroup.out().isBlank(), "console consumer in a group alice may not use: " + otherGroup);
            check(b.log().contains("resource_type=GROUP resource=" + g + "-other"),
                    "the broker logged no GROUP denial for " + g + "-other");

            commitOne(b.bootstrap, alice, tx, t, "in-txn");
            ToolRunner.Result txDescribed = describeTx.get().ok();
            contains(txDescribed, "CompleteCommit");

            as.apply(admin, new String[] {"--remove", "--allow-principal", "User:alice", "--producer", "--topic", t,
                    "--transactional-id", tx, "--force"}).ok();
            as.apply(admin, new String[] {"--remove", "--allow-principal", "User:alice", "--consumer", "--topic", t,
                    "--group", g, "--force"}).ok();
            ToolRunner.Result after = as.apply(admin, new String[] {"--list", "--topic", t}).ok();
            check(!after.out().contains("User:alice"), "ACLs left after --remove: " + after);
            ToolRunner.Result hidden = ToolRunner.run("kafka-topics", TOPICS, "--bootstrap-server", b.bootstrap,
                    "--command-config", alice, "--list").ok();
            check(!hidden.out().contains(t), "alice still lists " + t + " without ACLs: " + hidden);
            // Without the ACLs: her producer and a consumer without a group are refused the topic.
            ToolRunner.Result produceAgain = ToolRunner.runWithInput("kafka-console-producer", PRODUCER, "c\n",
                    "--bootstrap-server", b.bootstrap, "--command-config", alice, "--topic", t);
            check((produceAgain.out() + produceAgain.err()).contains("TopicAuthorizationException"),
                    "kafka-console-producer as alice after --remove: " + produceAgain);
            ToolRunner.Result consumeAgain = ToolRunner.run("kafka-console-consumer", CONSUMER, "--bootstrap-server",
                    b.bootstrap, "--command-config", alice, "--topic", t, "--partition", "0", "--offset", "earliest",
                    "--max-messages", "1", "--timeout-ms", String.valueOf(TIMEOUT_MS));
            check(consumeAgain.out().isBlank() && (consumeAgain.out() + consumeAgain.err()).contains(
                    "TopicAuthorizationException"), "kafka-console-consumer as alice after --remove: " + consumeAgain);
            ToolRunner.Result txAgain = describeTx.get();
            check(txAgain.status() != 0 && (txAgain.out() + txAgain.err()).contains(txRefused),
                    "kafka-transactions describe as alice after --remove: " + txAgain);
            check(b.log().contains("authorization denied"), "the broker logged no denial");
        }
    }

    /** One committed transaction of one record, as the client config file (--command-config) logs in. */
    private static void commitOne(String bootstrap, String config, String txId, String topic, String value)
            throws Exception {
        Properties p = new Properties();
        try (var in = java.nio.file.Files.newInputStream(java.nio.file.Path.of(config))) {
            p.load(in);
        }
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txId);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) TIMEOUT_MS);
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            pr.initTransactions();
            pr.beginTransaction();
            pr.send(new ProducerRecord<>(topic, value));
            pr.commitTransaction();
        }
    }

    private static void reassignPartitions() throws Exception {
        String t = PREFIX + "-reassign";
        createTopic(t);
        contains(ToolRunner.run("kafka-reassign-partitions", REASSIGN, withBootstrap("--list")).ok(),
                "No partition reassignments found.");
        int node = replicaOf(t);
        File plan = File.createTempFile("reassign", ".json");
        plan.deleteOnExit();
        java.nio.file.Files.writeString(plan.toPath(), "{\"version\":1,\"partitions\":[{\"topic\":\"" + t
                + "\",\"partition\":0,\"replicas\":[" + node + "]}]}");
        // The current assignment (on a single node the only one it can take): accepted, nothing moves.
        contains(ToolRunner.run("kafka-reassign-partitions", REASSIGN,
                withBootstrap("--reassignment-json-file", plan.getPath(), "--execute")).ok(),
                "Successfully started partition reassignment for " + t + "-0");
        contains(ToolRunner.run("kafka-reassign-partitions", REASSIGN, withBootstrap("--list")).ok(),
                "No partition reassignments found.");
    }

    /**
     * kafka-reassign-partitions with "log_dirs" (AlterReplicaLogDirs): a move to the directory the replica is in
     * completes at once; a move to a directory the broker does not have fails with LogDirNotFoundException.
     */
    private static void reassignLogDirs() throws Exception {
        String t = PREFIX + "-log-dirs";
        createTopic(t);
        int node = replicaOf(t);
        TopicPartition tp = new TopicPartition(t, 0);
        String dir = null;
        for (Map.Entry<String, LogDirDescription> e : admin().describeLogDirs(List.of(node)).descriptions().get(node)
                .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).entrySet()) {
            if (e.getValue().replicaInfos().containsKey(tp)) {
                dir = e.getKey();
            }
        }
        check(dir != null, "kafka-log-dirs: no log dir of broker " + node + " holds " + tp);
        String replica = t + "-0-" + node;
        File plan = logDirsPlan(t, node, dir);
        contains(tool(0, "kafka-reassign-partitions", REASSIGN, "--reassignment-json-file", plan.getPath(), "--execute"),
                "Successfully started moving log directory to " + dir + " for replica " + t + "-0 with broker " + node);
        // Already in that directory: the move is complete at once.
        String verify = tool(0, "kafka-reassign-partitions", REASSIGN, "--reassignment-json-file", plan.getPath(),
                "--verify");
        contains(verify, "Reassignment of replica " + replica + " completed successfully.");
        contains(verify, "Reassignment of partition " + tp + " is completed.");
        File bad = logDirsPlan(t, node, dir + "-not-configured");
        String failed = tool(1, "kafka-reassign-partitions", REASSIGN, "--reassignment-json-file", bad.getPath(),
                "--execute");
        check(failed.contains("Failed to alter dir for " + replica) && failed.contains("LogDirNotFoundException"),
                "a move to a directory the broker does not have should fail with LogDirNotFoundException: " + failed);
    }

    /** The broker holding partition 0's (only) replica: on a cluster, not necessarily the first one listed. */
    private static int replicaOf(String topic) throws Exception {
        int[] node = {-1};
        // Right after the create, the broker answering may not have published the new topic yet.
        eventually("a replica of " + topic + "-0 known", TIMEOUT_MS, () -> {
            try {
                var ps = admin().describeTopics(List.of(topic)).allTopicNames().get(TIMEOUT_MS, TimeUnit.MILLISECONDS)
                        .get(topic).partitions();
                if (!ps.isEmpty() && !ps.get(0).replicas().isEmpty()) {
                    node[0] = ps.get(0).replicas().get(0).id();
                }
            } catch (Exception e) {
                // not known yet
            }
            return node[0] >= 0;
        });
        return node[0];
    }

    private static File logDirsPlan(String topic, int node, String dir) throws Exception {
        File plan = File.createTempFile("log-dirs", ".json");
        plan.deleteOnExit();
        java.nio.file.Files.writeString(plan.toPath(), "{\"version\":1,\"partitions\":[{\"topic\":\"" + topic
                + "\",\"partition\":0,\"replicas\":[" + node + "],\"log_dirs\":[\""
                + dir.replace("\\", "\\\\").replace("\"", "\\\"") + "\"]}]}");
        return plan;
    }

    /**
     * kafka-configs --describe --entity-type groups without a name lists the groups that only have configs
     * (ListConfigResources, KIP-1142), and Admin#listConfigResources lists topics, brokers and groups.
     */
    private static void configsListResources() throws Exception {
        String t = PREFIX + "-listed";
        createTopic(t);
        String g = PREFIX + "-configured-group"; // no member ever joins: only its configs make it known
        configs("--alter", "--entity-type", "groups", "--entity-name", g, "--add-config",
                "share.auto.offset.reset=earliest").ok();
        String all = configs("--describe", "--entity-type", "groups").ok().out();
        contains(all, "Dynamic configs for group " + g + " are:");
        contains(all, "share.auto.offset.reset=earliest");
        configs("--describe", "--entity-type", "client-metrics").ok();
        int node = admin().describeCluster().nodes().get(TIMEOUT_MS, TimeUnit.MILLISECONDS).iterator().next().id();
        Collection<ConfigResource> listed = admin().listConfigResources(
                Set.of(ConfigResource.Type.TOPIC, ConfigResource.Type.BROKER, ConfigResource.Type.GROUP),
                new ListConfigResourcesOptions()).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        for (ConfigResource want : List.of(new ConfigResource(ConfigResource.Type.TOPIC, t),
                new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(node)),
                new ConfigResource(ConfigResource.Type.GROUP, g))) {
            check(listed.contains(want), "listConfigResources: " + want + " missing from " + listed);
        }
        configs("--alter", "--entity-type", "groups", "--entity-name", g, "--delete-config",
                "share.auto.offset.reset").ok();
        Collection<ConfigResource> after = admin().listConfigResources(Set.of(ConfigResource.Type.GROUP),
                new ListConfigResourcesOptions()).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        check(!after.contains(new ConfigResource(ConfigResource.Type.GROUP, g)),
                "a group whose configs were all deleted is still listed: " + after);
    }

    /**
     * kafka-configs --alter --entity-type groups sets Kafka 4.4's consumer-group (KIP-848) and share-group
     * configs of a group, --describe shows them, a value outside the broker's group.consumer.min/max bounds
     * is refused with Kafka's message, --delete-config removes one; then a consumer-protocol consumer of the
     * group (which runs with the group's session timeout and heartbeat interval) joins and reads.
     */
    private static void configsGroups() throws Exception {
        String g = PREFIX + "-configured-consumers";
        String t = PREFIX + "-configured-consumers";
        createTopic(t);
        configs("--alter", "--entity-type", "groups", "--entity-name", g, "--add-config",
                "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000,"
                        + "share.delivery.count.limit=3,share.renew.acknowledge.enable=false").ok();
        String out = configs("--describe", "--entity-type", "groups", "--entity-name", g).ok().out();
        for (String want : List.of("consumer.session.timeout.ms=50000", "consumer.heartbeat.interval.ms=6000",
                "share.delivery.count.limit=3", "share.renew.acknowledge.enable=false")) {
            contains(out, want);
        }
        ToolRunner.Result bad = configs("--alter", "--entity-type", "groups", "--entity-name", g, "--add-config",
                "consumer.heartbeat.interval.ms=60000");
        check(bad.status() != 0 && (bad.out() + bad.err()).contains(
                "consumer.heartbeat.interval.ms must be in the range"), "an out-of-bounds value was not refused: " + bad);
        configs("--alter", "--entity-type", "groups", "--entity-name", g, "--delete-config",
                "share.renew.acknowledge.enable").ok();
        out = configs("--describe", "--entity-type", "groups", "--entity-name", g).ok().out();
        check(!out.contains("share.renew.acknowledge.enable") && out.contains("consumer.heartbeat.interval.ms=6000"),
                "after --delete-config: " + out);
        try (KafkaProducer<String, String> p = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                BOOTSTRAP, ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName(),
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName()))) {
            p.send(new ProducerRecord<>(t, "k", "v")).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        }
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, g);
        cp.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of(t));
            int[] got = {0};
            eventually("the consumer of the configured group to read the record", TIMEOUT_MS, () -> {
                got[0] += c.poll(Duration.ofMillis(200)).count();
                return got[0] >= 1;
            });
        }
    }

    private static void leaderElection() throws Exception {
        String t = PREFIX + "-elect";
        createTopic(t);
        for (String type : List.of("preferred", "unclean")) {
            String out = tool(0, "kafka-leader-election", LEADER_ELECTION, "--election-type", type, "--topic", t,
                    "--partition", "0");
            check(out.contains("Valid replica already elected for partitions " + t + "-0"),
                    type + " election should need none: " + out);
        }
        String missing = tool(1, "kafka-leader-election", LEADER_ELECTION, "--election-type", "preferred",
                "--topic", t, "--partition", "7");
        check(missing.contains("UnknownTopicOrPartitionException"),
                "election on a missing partition should fail with UnknownTopicOrPartitionException: " + missing);
        tool(0, "kafka-leader-election", LEADER_ELECTION, "--election-type", "preferred", "--all-topic-partitions");
    }

    // ---- replication on a three-node cluster: kafka-reassign-partitions, kafka-leader-election, ----------
    // ---- kafka-cluster unregister ---------------------------------------------------------------------

    private static LocalCluster cluster() throws Exception {
        if (cluster == null) {
            cluster = LocalCluster.start();
        }
        return cluster;
    }

    /** Runs a tool against the cluster (its bootstrap first). */
    private static ToolRunner.Result onCluster(String script, String mainClass, String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", cluster().bootstrap()));
        all.addAll(Arrays.asList(args));
        return ToolRunner.run(script, mainClass, all.toArray(String[]::new));
    }

    /** Runs a tool against the cluster, checks it exited with status, and returns its stdout and stderr. */
    private static String clusterTool(int status, String script, String mainClass, String... args) throws Exception {
        ToolRunner.Result r = onCluster(script, mainClass, args);
        check(r.status() == status, "want exit " + status + " from " + r);
        return r.out() + r.err();
    }

    /** kafka-topics --describe of topic on the cluster. */
    private static String describeOnCluster(String topic) {
        try {
            ToolRunner.Result r = onCluster("kafka-topics", TOPICS, "--describe", "--topic", topic);
            return r.out() + r.err();
        } catch (Exception e) {
            return e.toString();
        }
    }

    /**
     * Waits until broker id's kafka_server_replicamanager_underreplicatedpartitions gauge is above 0 (under) or
     * 0 (not under).
     */
    private static void waitUnderReplicated(LocalCluster lc, int id, boolean under) throws Exception {
        Pattern gauge = Pattern.compile("(?m)^kafka_server_replicamanager_underreplicatedpartitions (\\S+)$");
        String[] last = {""};
        try {
            eventually("broker " + id + (under ? " reports under-replicated partitions" : " reports none under-replicated"),
                    60_000, () -> {
                        try {
                            Matcher m = gauge.matcher(lc.metrics(id));
                            if (!m.find()) {
                                last[0] = "no gauge";
                                return false;
                            }
                            last[0] = m.group();
                            return (Double.parseDouble(m.group(1)) > 0) == under;
                        } catch (Exception e) {
                            last[0] = e.toString();
                            return false;
                        }
                    });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; last: " + last[0], e);
        }
    }

    private static void waitDescribe(String topic, String regex) throws Exception {
        Pattern p = Pattern.compile(regex);
        String[] last = {""};
        try {
            eventually(topic + " described as /" + regex + "/", 60_000,
                    () -> p.matcher(last[0] = describeOnCluster(topic)).find());
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; last: " + last[0], e);
        }
    }

    private static File planFile(String topic, int... replicas) throws Exception {
        File plan = File.createTempFile("reassign", ".json");
        plan.deleteOnExit();
        String reps = Arrays.stream(replicas).mapToObj(String::valueOf).collect(java.util.stream.Collectors.joining(","));
        java.nio.file.Files.writeString(plan.toPath(), "{\"version\":1,\"partitions\":[{\"topic\":\"" + topic
                + "\",\"partition\":0,\"replicas\":[" + reps + "]}]}");
        return plan;
    }

    /** Executes a reassignment plan and runs --verify until it reports the partition completed. */
    private static void reassignAndVerify(String topic, int... replicas) throws Exception {
        File plan = planFile(topic, replicas);
        contains(onCluster("kafka-reassign-partitions", REASSIGN, "--reassignment-json-file", plan.getPath(), "--execute")
                .ok(), "Successfully started partition reassignment for " + topic + "-0");
        String[] last = {""};
        try {
            eventually("--verify reports " + topic + "-0 completed", 60_000, () -> {
                try {
                    ToolRunner.Result v = onCluster("kafka-reassign-partitions", REASSIGN, "--reassignment-json-file",
                            plan.getPath(), "--verify");
                    last[0] = v.toString();
                    return v.status() == 0 && v.out().contains("Reassignment of partition " + topic + "-0 is completed.");
                } catch (Exception e) {
                    last[0] = e.toString();
                    return false;
                }
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; last --verify: " + last[0], e);
        }
    }

    /**
     * A partition with 100 records on brokers 1 and 2 moves to 2 and 3 with kafka-reassign-partitions
     * --execute/--verify: broker 3 gets the data, broker 1's copy is deleted, a consumer reads every record.
     */
    private static void reassignOnCluster() throws Exception {
        String t = PREFIX + "-move";
        contains(onCluster("kafka-topics", TOPICS, "--create", "--topic", t, "--replica-assignment", "1:2").ok(),
                "Created topic " + t + ".");
        StringBuilder in = new StringBuilder();
        for (int i = 0; i < 100; i++) {
            in.append("m").append(i).append('\n');
        }
        ToolRunner.runWithInput("kafka-console-producer", PRODUCER, in.toString(), "--bootstrap-server",
                cluster().bootstrap(), "--topic", t).ok();
        contains(onCluster("kafka-reassign-partitions", REASSIGN, "--list").ok(), "No partition reassignments found.");
        reassignAndVerify(t, 2, 3);
        waitDescribe(t, "Partition: 0\\s+Leader: [23]\\s+Replicas: 2,3\\s+Isr: (2,3|3,2)");
        java.nio.file.Path gone = cluster().dataDir(1).resolve(t + "-0");
        eventually("broker 1 deletes its copy " + gone, 30_000, () -> !java.nio.file.Files.exists(gone));
        check(java.nio.file.Files.isDirectory(cluster().dataDir(3).resolve(t + "-0")), "broker 3 has no copy of " + t);
        ToolRunner.Result c = ToolRunner.run("kafka-console-consumer", CONSUMER, "--bootstrap-server",
                cluster().bootstrap(), "--topic", t, "--from-beginning", "--max-messages", "100", "--timeout-ms",
                String.valueOf(TIMEOUT_MS)).ok();
        List<String> got = c.out().lines().filter(l -> !l.isBlank()).toList();
        check(got.size() == 100 && got.get(0).equals("m0") && got.get(99).equals("m99"),
                "consumed after the move: " + got.size() + " records "
                        + (got.isEmpty() ? "" : got.get(0) + ".." + got.get(got.size() - 1)));
    }

    /**
     * Dynamic broker configs on the cluster: kafka-configs sets a broker's own config and a cluster-wide
     * default (each described with its dynamic source by the broker it concerns), then
     * kafka-reassign-partitions --execute --throttle sets the replication throttle rates on the brokers of the
     * move and the throttled replicas on the topic, and --verify removes both once the move is done.
     */
    private static void brokerConfigsOnCluster() throws Exception {
        String t = PREFIX + "-throttled";
        contains(clusterConfigs("--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config",
                "log.retention.ms=86400000"), "Completed updating config for broker 1.");
        contains(clusterConfigs("--entity-type", "brokers", "--entity-name", "1", "--describe"),
                "log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=86400000");
        contains(clusterConfigs("--entity-type", "brokers", "--entity-default", "--alter", "--add-config",
                "log.retention.ms=172800000"), "Completed updating default config for brokers in the cluster.");
        // The describe may reach a broker that has not applied the new default yet: ask again.
        eventually("the cluster default is described", 30_000, () -> {
            try {
                return clusterConfigs("--entity-type", "brokers", "--entity-default", "--describe").contains(
                        "log.retention.ms=172800000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=172800000");
            } catch (Exception e) {
                return false;
            }
        });
        eventually("broker 2 describes the cluster default", 30_000, () -> {
            try {
                return clusterConfigs("--entity-type", "brokers", "--entity-name", "2", "--describe", "--all")
                        .contains("log.retention.ms=172800000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:");
            } catch (Exception e) {
                return false;
            }
        });
        ToolRunner.Result stat = onCluster("kafka-configs", CONFIGS, "--entity-type", "brokers", "--entity-name", "1",
                "--alter", "--add-config", "log.dirs=/elsewhere");
        check(stat.status() != 0 && (stat.out() + stat.err()).contains("Cannot update these configs dynamically"),
                "a static config should be refused: " + stat);
        clusterConfigs("--entity-type", "brokers", "--entity-name", "1", "--alter", "--delete-config", "log.retention.ms");
        clusterConfigs("--entity-type", "brokers", "--entity-default", "--alter", "--delete-config", "log.retention.ms");

        contains(onCluster("kafka-topics", TOPICS, "--create", "--topic", t, "--replica-assignment", "1:2").ok(),
                "Created topic " + t + ".");
        ToolRunner.runWithInput("kafka-console-producer", PRODUCER, "a\nb\nc\n", "--bootstrap-server",
                cluster().bootstrap(), "--topic", t).ok();
        File plan = planFile(t, 2, 3);
        ToolRunner.Result ex = onCluster("kafka-reassign-partitions", REASSIGN, "--reassignment-json-file",
                plan.getPath(), "--execute", "--throttle", "50000000").ok();
        contains(ex, "The inter-broker throttle limit was set to 50000000 B/s");
        String during = clusterConfigs("--entity-type", "brokers", "--entity-name", "3", "--describe");
        String topicDuring = clusterConfigs("--entity-type", "topics", "--entity-name", t, "--describe");
        String[] last = {""};
        try {
            eventually("--verify reports " + t + "-0 completed", 60_000, () -> {
                try {
                    ToolRunner.Result v = onCluster("kafka-reassign-partitions", REASSIGN, "--reassignment-json-file",
                            plan.getPath(), "--verify");
                    last[0] = v.toString();
                    return v.status() == 0 && v.out().contains("Reassignment of partition " + t + "-0 is completed.");
                } catch (Exception e) {
                    last[0] = e.toString();
                    return false;
                }
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; last --verify: " + last[0], e);
        }
        // Checked after --verify so that a failure above still clears the throttles.
        check(during.contains("follower.replication.throttled.rate=50000000")
                && during.contains("leader.replication.throttled.rate=50000000"), "broker 3 during the move: " + during);
        check(topicDuring.contains("leader.replication.throttled.replicas=")
                && topicDuring.contains("follower.replication.throttled.replicas="), "topic during the move: " + topicDuring);
        String after = clusterConfigs("--entity-type", "brokers", "--entity-name", "3", "--describe");
        check(!after.contains("replication.throttled.rate"), "broker 3 after --verify: " + after);
        String topicAfter = clusterConfigs("--entity-type", "topics", "--entity-name", t, "--describe");
        check(!topicAfter.contains("throttled.replicas"), "topic after --verify: " + topicAfter);
    }

    /** kafka-configs against the cluster; checks it succeeded and returns stdout and stderr. */
    private static String clusterConfigs(String... args) throws Exception {
        ToolRunner.Result r = onCluster("kafka-configs", CONFIGS, args);
        check(r.status() == 0, "kafka-configs " + String.join(" ", args) + ": " + r);
        return r.out() + r.err();
    }

    /**
     * Preferred election after the preferred replica came back, and unclean election of an out-of-sync replica
     * when the only in-sync one is down (the topic keeps unclean.leader.election.enable=false, so the
     * partition stays offline until kafka-leader-election --election-type unclean). The new cluster has
     * eligible leader replicas (KIP-966) on: the fenced last in-sync replica is listed as Elr. kafka-topics --describe and the new leader's under-replicated gauge show
     * the in-sync set shrink when a broker stops and grow when it returns.
     */
    private static void leaderElectionOnCluster() throws Exception {
        LocalCluster lc = cluster();
        String t = PREFIX + "-pref";
        String u = PREFIX + "-uncl";
        contains(onCluster("kafka-topics", TOPICS, "--create", "--topic", t, "--replica-assignment", "1:2").ok(),
                "Created topic " + t + ".");
        waitDescribe(t, "Leader: 1\\s+Replicas: 1,2\\s+Isr: (1,2|2,1)");
        lc.stopNode(1);
        waitDescribe(t, "Leader: 2\\s+Replicas: 1,2\\s+Isr: 2\\b");
        waitUnderReplicated(lc, 2, true);
        lc.startNode(1);
        waitDescribe(t, "Leader: 2\\s+Replicas: 1,2\\s+Isr: (1,2|2,1)");
        waitUnderReplicated(lc, 2, false);
        String out = clusterTool(0, "kafka-leader-election", LEADER_ELECTION, "--election-type", "preferred",
                "--topic", t, "--partition", "0");
        check(out.contains("Successfully completed leader election (PREFERRED) for partitions " + t + "-0"),
                "preferred election: " + out);
        waitDescribe(t, "Leader: 1\\s+Replicas: 1,2");

        // u: broker 2 stops (ISR {1}), then broker 1 (no quorum until 2 is back), then broker 2 returns.
        contains(onCluster("kafka-topics", TOPICS, "--create", "--topic", u, "--replica-assignment", "1:2").ok(),
                "Created topic " + u + ".");
        waitDescribe(u, "Leader: 1\\s+Replicas: 1,2\\s+Isr: (1,2|2,1)");
        lc.stopNode(2);
        waitDescribe(u, "Leader: 1\\s+Replicas: 1,2\\s+Isr: 1\\b");
        lc.stopNode(1);
        lc.startNode(2);
        // Broker 1, fenced, leaves the in-sync set and stays an eligible leader replica; broker 2 never was one.
        waitDescribe(u, "Leader: none\\s+Replicas: 1,2\\s+Isr: \\s*Elr: 1\\b");
        out = clusterTool(0, "kafka-leader-election", LEADER_ELECTION, "--election-type", "unclean",
                "--topic", u, "--partition", "0");
        check(out.contains("Successfully completed leader election (UNCLEAN) for partitions " + u + "-0"),
                "unclean election: " + out);
        waitDescribe(u, "Leader: 2\\s+Replicas: 1,2\\s+Isr: 2\\b");
        check(lc.log(2).contains("UNCLEAN leader election") || lc.log(3).contains("UNCLEAN leader election"),
                "the controller did not log the unclean election");
        lc.startNode(1);
        waitDescribe(u, "Leader: 2\\s+Replicas: 1,2\\s+Isr: (1,2|2,1)");
    }

    /**
     * Follower fetching (KIP-392): a consumer with client.rack=rack-3 reading a partition led by broker 1 (rack-1)
     * with replicas on every broker is sent to broker 3, whose metrics show the bytes it served as a follower.
     */
    private static void followerFetchOnCluster() throws Exception {
        LocalCluster lc = cluster();
        String t = PREFIX + "-rack";
        contains(onCluster("kafka-topics", TOPICS, "--create", "--topic", t, "--replica-assignment", "1:2:3").ok(),
                "Created topic " + t + ".");
        waitDescribe(t, "Leader: 1\\s+Replicas: 1,2,3\\s+Isr: [123],[123],[123]");
        StringBuilder in = new StringBuilder();
        for (int i = 0; i < 50; i++) {
            in.append("r").append(i).append('\n');
        }
        ToolRunner.runWithInput("kafka-console-producer", PRODUCER, in.toString(), "--bootstrap-server", lc.bootstrap(),
                "--topic", t).ok();
        Properties props = new Properties();
        props.put("bootstrap.servers", lc.bootstrap());
        props.put("client.rack", "rack-3");
        props.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        props.put("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        List<String> got = new ArrayList<>();
        try (var consumer = new org.apache.kafka.clients.consumer.KafkaConsumer<String, String>(props)) {
            TopicPartition tp = new TopicPartition(t, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + TIMEOUT_MS;
            while (got.size() < 50 && System.currentTimeMillis() < deadline) {
                consumer.poll(Duration.ofMillis(500)).forEach(r -> got.add(r.value()));
            }
        }
        check(got.size() == 50 && got.get(0).equals("r0") && got.get(49).equals("r49"), "consumed " + got);
        Pattern follower = Pattern.compile("(?m)^sluice_consumer_fetch_bytes_total\\{role=\"follower\"\\} (\\S+)$");
        Matcher m = follower.matcher(lc.metrics(3));
        check(m.find() && Double.parseDouble(m.group(1)) > 0, "broker 3 (rack-3) served nothing as a follower: "
                + (m.find(0) ? m.group() : "no metric"));
    }

    /**
     * Decommissioning broker 3: its partition is reassigned away (--execute/--verify), it is stopped, and
     * kafka-cluster unregister removes its registration; a second unregister is refused.
     */
    private static void decommissionOnCluster() throws Exception {
        LocalCluster lc = cluster();
        String t = PREFIX + "-decom";
        contains(onCluster("kafka-topics", TOPICS, "--create", "--topic", t, "--replica-assignment", "3:1").ok(),
                "Created topic " + t + ".");
        waitDescribe(t, "Leader: 3\\s+Replicas: 3,1\\s+Isr: (1,3|3,1)");
        reassignAndVerify(t, 1, 2);
        waitDescribe(t, "Replicas: 1,2\\s+Isr: (1,2|2,1)");
        lc.stopNode(3);
        ToolRunner.Result un = ToolRunner.run("kafka-cluster", CLUSTER_TOOL, "unregister", "--bootstrap-server",
                lc.bootstrap(), "--id", "3");
        check(un.status() == 0, "want exit 0 from " + un);
        String out = un.out() + un.err();
        check(out.contains("Broker 3 is no longer registered."), "kafka-cluster unregister: " + out);
        ToolRunner.Result again = ToolRunner.run("kafka-cluster", CLUSTER_TOOL, "unregister", "--bootstrap-server",
                lc.bootstrap(), "--id", "3");
        check(again.status() != 0 && (again.out() + again.err()).contains("BrokerIdNotRegisteredException"),
                "second unregister: " + again);
        try (Admin a = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, lc.bootstrap()))) {
            var ids = a.describeCluster().nodes().get(TIMEOUT_MS, TimeUnit.MILLISECONDS).stream()
                    .map(n -> n.id()).sorted().toList();
            check(ids.equals(List.of(1, 2)), "brokers after decommissioning 3: " + ids);
        }
    }

    private static void transactions() throws Exception {
        String t = PREFIX + "-txn";
        createTopic(t);
        // The console producer is idempotent: three records, sequences 0..2.
        produce("a\nb\nc\n", "--topic", t).ok();
        String list = tool(0, "kafka-transactions", TRANSACTIONS, "list");
        check(list.contains("TransactionalId") && list.lines().noneMatch(l -> l.contains("Ongoing")),
                "kafka-transactions list should print only its header: " + list);
        String producers = tool(0, "kafka-transactions", TRANSACTIONS, "describe-producers", "--topic", t,
                "--partition", "0");
        check(Pattern.compile("(?m)^\\d+\\s+0\\s+-1\\s+2\\s+\\d+\\s+None\\b").matcher(producers).find(),
                "describe-producers should show one producer, epoch 0, last sequence 2: " + producers);
        String described = tool(1, "kafka-transactions", TRANSACTIONS, "describe", "--transactional-id",
                PREFIX + "-no-such-txn");
        check(described.contains("could not be found"), "describe of an unknown transactional id: " + described);
    }

    // ---- kafka-cluster unregister-controller ------------------------------------------------------

    /**
     * kafka-cluster unregister-controller (UnregisterController, Kafka 4.4) against the suite's broker: the
     * active controller cannot unregister itself, and an id with no controller registration is refused with
     * Kafka's errors; Admin.unregisterController gets the same answers.
     */
    private static void unregisterController() throws Exception {
        int self = admin().describeCluster().controller().get(TIMEOUT_MS, TimeUnit.MILLISECONDS).id();
        java.util.function.Function<Integer, String> unregister = id -> {
            try {
                ToolRunner.Result r = ToolRunner.run("kafka-cluster", CLUSTER_TOOL, "unregister-controller",
                        "--bootstrap-server", BOOTSTRAP, "--id", String.valueOf(id));
                check(r.status() == 1, "want exit 1 from " + r);
                return r.out() + r.err();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        };
        String own = unregister.apply(self);
        check(own.contains("InvalidRequestException: Controller cannot unregister itself while it is active."),
                "unregister-controller of the active controller: " + own);
        String unknown = unregister.apply(4242);
        check(unknown.contains("ControllerIdNotRegisteredException: Controller ID 4242 is not currently registered."),
                "unregister-controller of an unknown id: " + unknown);
        try {
            admin().unregisterController(4242).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            check(false, "Admin.unregisterController(4242) succeeded");
        } catch (java.util.concurrent.ExecutionException e) {
            check(e.getCause() instanceof org.apache.kafka.common.errors.ControllerIdNotRegisteredException,
                    "Admin.unregisterController(4242): " + e.getCause());
        }
    }

    // ---- kafka-features -------------------------------------------------------------------------

    private static void features() throws Exception {
        String d = tool(0, "kafka-features", FEATURES, "describe");
        for (String f : List.of("metadata.version", "transaction.version", "group.version", "share.version")) {
            check(d.contains("Feature: " + f), "kafka-features describe should list " + f + ": " + d);
        }
        check(Pattern.compile("Feature: transaction.version\\s+SupportedMinVersion: 0\\s+SupportedMaxVersion: 2\\s+"
                + "FinalizedVersionLevel: 2").matcher(d).find(), "transaction.version 0-2, finalized 2: " + d);
        // Upgrading to the current level succeeds; a dry-run downgrade is validated only; an unknown feature fails.
        tool(0, "kafka-features", FEATURES, "upgrade", "--feature", "group.version=1");
        tool(0, "kafka-features", FEATURES, "downgrade", "--feature", "transaction.version=0", "--dry-run");
        String after = tool(0, "kafka-features", FEATURES, "describe");
        check(Pattern.compile("Feature: transaction.version\\s+SupportedMinVersion: 0\\s+SupportedMaxVersion: 2\\s+"
                + "FinalizedVersionLevel: 2").matcher(after).find(), "a dry run changed transaction.version: " + after);
        String bad = tool(1, "kafka-features", FEATURES, "upgrade", "--feature", "no.such.version=1");
        check(bad.contains("no.such.version"), "an unknown feature should be refused: " + bad);
    }

    // ---- kafka-streams-groups ---------------------------------------------------------------------

    /** kafka-streams-groups on a running Kafka Streams application with group.protocol=streams (KIP-1071). */
    private static void streamsGroups() throws Exception {
        String in = PREFIX + "-sg-in";
        String out = PREFIX + "-sg-out";
        String app = PREFIX + "-sg-app";
        createTopic(in);
        createTopic(out);
        org.apache.kafka.streams.StreamsBuilder b = new org.apache.kafka.streams.StreamsBuilder();
        b.stream(in).to(out);
        Properties p = new Properties();
        p.put("application.id", app);
        p.put("bootstrap.servers", BOOTSTRAP);
        p.put("group.protocol", "streams");
        p.put("default.key.serde", org.apache.kafka.common.serialization.Serdes.StringSerde.class.getName());
        p.put("default.value.serde", org.apache.kafka.common.serialization.Serdes.StringSerde.class.getName());
        p.put("state.dir", java.nio.file.Files.createTempDirectory("sluice-tools-streams").toString());
        org.apache.kafka.streams.KafkaStreams streams = new org.apache.kafka.streams.KafkaStreams(b.build(), p);
        try {
            streams.start();
            eventually("the Streams application to reach RUNNING", TIMEOUT_MS,
                    () -> streams.state() == org.apache.kafka.streams.KafkaStreams.State.RUNNING);
            String list = tool(0, "kafka-streams-groups", STREAMS_GROUPS, "--list");
            check(list.contains(app), "kafka-streams-groups --list should show " + app + ": " + list);
            eventually("kafka-streams-groups --describe --state shows " + app + " Stable", TIMEOUT_MS, () -> {
                try {
                    ToolRunner.Result st = ToolRunner.run("kafka-streams-groups", STREAMS_GROUPS,
                            withBootstrap("--describe", "--group", app, "--state"));
                    return st.status() == 0 && st.out().contains(app) && st.out().contains("Stable");
                } catch (Exception e) {
                    return false;
                }
            });
            String members = tool(0, "kafka-streams-groups", STREAMS_GROUPS, "--describe", "--group", app, "--members");
            check(members.contains(app) && members.contains("0:[0]"),
                    "kafka-streams-groups --describe --members should show the member with task 0_0: " + members);
        } finally {
            streams.close(org.apache.kafka.streams.CloseOptions.groupMembershipOperation(
                    org.apache.kafka.streams.CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                    .withTimeout(Duration.ofSeconds(30)));
        }
        String del = tool(0, "kafka-streams-groups", STREAMS_GROUPS, "--delete", "--group", app);
        check(del.toLowerCase().contains("deleted") || del.contains(app), "kafka-streams-groups --delete: " + del);
    }

    // ---- kafka-consumer-groups ------------------------------------------------------------------

    private static void consumerGroups() throws Exception {
        String t = PREFIX + "-groups";
        String g = PREFIX + "-group";
        createTopic(t);
        StringBuilder in = new StringBuilder();
        for (int i = 0; i < 10; i++) {
            in.append("k").append(i).append(":v").append(i).append('\n');
        }
        produce(in.toString(), "--topic", t, "--reader-property", "parse.key=true", "--reader-property", "key.separator=:").ok();
        ToolRunner.Result c = consume("--topic", t, "--group", g, "--from-beginning", "--max-messages", "10",
                "--timeout-ms", String.valueOf(TIMEOUT_MS)).ok();
        check(c.out().lines().filter(l -> l.startsWith("v")).count() == 10, "group consumer read: " + c);
        TopicPartition tp = new TopicPartition(t, 0);
        eventually("group " + g + " committed offset 10", TIMEOUT_MS, () -> committed(g, tp) == 10);

        contains(groups("--list").ok(), g);
        ToolRunner.Result typed = groups("--list", "--type").ok();
        check(Pattern.compile("(?m)^" + Pattern.quote(g) + "\\s+Classic\\b").matcher(typed.out()).find(),
                "--list --type should show " + g + " as a Classic group: " + typed);
        ToolRunner.Result d = groups("--describe", "--group", g).ok();
        check(Pattern.compile(Pattern.quote(g) + "\\s+" + Pattern.quote(t) + "\\s+0\\s+10\\s+10\\s+0\\b")
                .matcher(d.out()).find(), "want GROUP TOPIC 0 10 10 0 (current, log end, lag) in " + d);
        // The console consumer left the group when it closed; offsets can only be reset in an inactive group.
        eventually("kafka-consumer-groups --describe --state shows " + g + " Empty", TIMEOUT_MS, () -> {
            try {
                return groups("--describe", "--group", g, "--state").ok().out().contains("Empty");
            } catch (Exception e) {
                return false;
            }
        });

        // Dry run changes nothing; --execute moves the committed offset.
        ToolRunner.Result dry = groups("--reset-offsets", "--group", g, "--topic", t, "--to-earliest", "--dry-run")
                .ok();
        check(Pattern.compile(Pattern.quote(t) + "\\s+0\\s+0\\b").matcher(dry.out()).find(),
                "dry run should plan NEW-OFFSET 0: " + dry);
        check(committed(g, tp) == 10, "a dry run moved the offset to " + committed(g, tp));
        groups("--reset-offsets", "--group", g, "--topic", t, "--to-earliest", "--execute").ok();
        check(committed(g, tp) == 0, "after --to-earliest: " + committed(g, tp));
        groups("--reset-offsets", "--group", g, "--topic", t, "--to-offset", "7", "--execute").ok();
        check(committed(g, tp) == 7, "after --to-offset 7: " + committed(g, tp));
        groups("--reset-offsets", "--group", g, "--topic", t + ":0", "--shift-by", "-2", "--execute").ok();
        check(committed(g, tp) == 5, "after --shift-by -2: " + committed(g, tp));
        ToolRunner.Result lag = groups("--describe", "--group", g).ok();
        check(Pattern.compile(Pattern.quote(t) + "\\s+0\\s+5\\s+10\\s+5\\b").matcher(lag.out()).find(),
                "want current 5, log end 10, lag 5 in " + lag);
        // The group resumes where the reset put it.
        ToolRunner.Result resumed = consume("--topic", t, "--group", g, "--max-messages", "5", "--timeout-ms",
                String.valueOf(TIMEOUT_MS)).ok();
        List<String> got = resumed.out().lines().filter(l -> !l.isBlank()).toList();
        check(got.equals(List.of("v5", "v6", "v7", "v8", "v9")), "after the reset the group read " + got);
        groups("--delete", "--group", g).ok();
        eventually(g + " gone from --list", TIMEOUT_MS, () -> {
            try {
                return !groups("--list").ok().out().lines().anyMatch(g::equals);
            } catch (Exception e) {
                return false;
            }
        });
    }

    private static long committed(String group, TopicPartition tp) {
        try {
            Map<TopicPartition, OffsetAndMetadata> m = admin().listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            OffsetAndMetadata om = m.get(tp);
            return om == null ? -1 : om.offset();
        } catch (Exception e) {
            return -2;
        }
    }

    // ---- kafka-dump-log -------------------------------------------------------------------------

    private static File dataDir() {
        String d = Harness.env("SLUICE_CLIENTS_DATA_DIR", "");
        if (d.isEmpty()) {
            throw new Harness.Skipped("the broker's data directory is unknown (SLUICE_CLIENTS_DATA_DIR unset: "
                    + "an external broker)");
        }
        return new File(d);
    }

    private static File[] segmentFiles(File dir, String suffix) {
        File[] fs = dir.listFiles((x, name) -> name.endsWith(suffix));
        if (fs == null) {
            return new File[0];
        }
        Arrays.sort(fs);
        return fs;
    }

    /** The lines of kafka-dump-log's stderr that report an inconsistency between a log and its indexes. */
    private static void noIndexErrors(ToolRunner.Result r) {
        for (String bad : List.of("Mismatches in", "Non-consecutive offsets", "mismatch", "out of order",
                "not found", "Exception", "corrupt")) {
            check(!r.err().contains(bad) && !r.out().contains(bad), "kafka-dump-log reported \"" + bad + "\": " + r);
        }
    }

    private static void dumpLog() throws Exception {
        File data = dataDir();
        String t = PREFIX + "-dump";
        // segment.ms rolls the active segment soon after the writes; index.interval.bytes=1 indexes every
        // batch after a segment's first (as Kafka does).
        createTopic(t, "segment.ms=3000", "index.interval.bytes=1");
        StringBuilder in = new StringBuilder();
        for (int i = 0; i < 5; i++) {
            in.append("key-").append(i).append(":value-").append(i).append('\n');
        }
        // --sync with a short linger: one batch per record, written within milliseconds.
        produce(in.toString(), "--topic", t, "--sync", "--timeout", "5", "--reader-property", "parse.key=true",
                "--reader-property", "key.separator=:").ok();
        File dir = new File(data, t + "-0");
        eventually(dir + ": the segment holding offsets 0-4 is rolled (segment.ms=3000)", TIMEOUT_MS,
                () -> new File(dir, "00000000000000000005.log").exists());
        List<File> rolled = new ArrayList<>();
        for (File f : segmentFiles(dir, ".log")) {
            if (!f.getName().equals("00000000000000000005.log")) {
                rolled.add(f);
            }
        }
        check(!rolled.isEmpty() && rolled.get(0).getName().equals("00000000000000000000.log"),
                "rolled segments " + rolled);

        List<String> logs = rolled.stream().map(File::getPath).toList();
        ToolRunner.Result log = ToolRunner.run("kafka-dump-log", DUMP_LOG, "--files", String.join(",", logs),
                "--print-data-log").ok();
        noIndexErrors(log);
        for (int i = 0; i < 5; i++) {
            Pattern batch = Pattern.compile("baseOffset: " + i + " lastOffset: " + i + " count: 1 .*isTransactional: "
                    + "false .*magic: 2 .*crc: \\d+ isvalid: true");
            check(batch.matcher(log.out()).find(), "no valid batch line for offset " + i + " in " + log);
            Pattern rec = Pattern.compile("\\| offset: " + i + " CreateTime: \\d+ keySize: 5 valueSize: 7 .*key: key-"
                    + i + " payload: value-" + i);
            check(rec.matcher(log.out()).find(), "no record line for offset " + i + " in " + log);
        }

        List<String> indexes = new ArrayList<>();
        for (File f : rolled) {
            String base = f.getPath().substring(0, f.getPath().length() - ".log".length());
            indexes.add(base + ".index");
            indexes.add(base + ".timeindex");
        }
        ToolRunner.Result idx = ToolRunner.run("kafka-dump-log", DUMP_LOG, "--files", String.join(",", indexes))
                .ok();
        noIndexErrors(idx);
        Matcher m = Pattern.compile("(?m)^offset: (\\d+) position: (\\d+)$").matcher(idx.out());
        List<Long> indexed = new ArrayList<>();
        while (m.find()) {
            indexed.add(Long.parseLong(m.group(1)));
        }
        // Every batch but a segment's first is indexed: at least offsets 1-4 when one segment holds them all.
        check(!indexed.isEmpty() || rolled.size() == 5, "no offset index entries in " + idx);
        check(indexed.stream().allMatch(o -> o >= 0 && o <= 4) && indexed.stream().distinct().count() == indexed.size(),
                "offset index entries " + indexed + " in " + idx);
        check(Pattern.compile("(?m)^timestamp: \\d+ offset: 4$").matcher(idx.out()).find(),
                "no time index entry for offset 4 (the rolled segment's largest timestamp): " + idx);

        ToolRunner.Result sanity = ToolRunner.run("kafka-dump-log", DUMP_LOG, "--files", String.join(",", indexes),
                "--index-sanity-check").ok();
        noIndexErrors(sanity);
        for (String f : indexes) {
            check(sanity.out().contains(f + " passed sanity check.") || sanity.out().contains(f + " is empty."),
                    f + " not checked: " + sanity);
        }
        ToolRunner.Result verify = ToolRunner.run("kafka-dump-log", DUMP_LOG, "--files", String.join(",", indexes),
                "--verify-index-only").ok();
        noIndexErrors(verify);
    }

    /** Kafka's offsets decoder reads Sluice's __consumer_offsets records (Kafka's own record formats). */
    private static void dumpOffsetsLog() throws Exception {
        File data = dataDir();
        String t = PREFIX + "-offsets";
        String g = PREFIX + "-dumped-group";
        createTopic(t);
        produce("a:1\nb:2\nc:3\n", "--topic", t, "--reader-property", "parse.key=true", "--reader-property", "key.separator=:")
                .ok();
        consume("--topic", t, "--group", g, "--from-beginning", "--max-messages", "3", "--timeout-ms",
                String.valueOf(TIMEOUT_MS)).ok();
        TopicPartition tp = new TopicPartition(t, 0);
        eventually("group " + g + " committed offset 3", TIMEOUT_MS, () -> committed(g, tp) == 3);
        File[] dirs = data.listFiles((x, name) -> name.startsWith("__consumer_offsets-"));
        check(dirs != null && dirs.length > 0, "no __consumer_offsets partitions under " + data);
        List<String> logs = new ArrayList<>();
        for (File d : dirs) {
            for (File f : segmentFiles(d, ".log")) {
                if (f.length() > 0) {
                    logs.add(f.getPath());
                }
            }
        }
        check(!logs.isEmpty(), "every __consumer_offsets segment is empty");
        eventually("kafka-dump-log --offsets-decoder shows " + g + "'s commit of offset 3", TIMEOUT_MS, () -> {
            try {
                ToolRunner.Result r = ToolRunner.run("kafka-dump-log", DUMP_LOG, "--files", String.join(",", logs),
                        "--offsets-decoder");
                if (r.status() != 0 || r.err().contains("Exception")) {
                    throw new AssertionError("kafka-dump-log --offsets-decoder: " + r);
                }
                return r.out().lines().anyMatch(l -> l.contains("\"group\":\"" + g + "\"")
                        && l.contains("\"topic\":\"" + t + "\"") && l.contains("\"offset\":3"));
            } catch (AssertionError e) {
                throw e;
            } catch (Exception e) {
                return false;
            }
        });
    }

    // ---- kafka-share-groups / kafka-console-share-consumer --------------------------------------

    private static ToolRunner.Result shareGroups(String... args) throws Exception {
        return ToolRunner.run("kafka-share-groups", SHARE_GROUPS, withBootstrap(args));
    }

    /**
     * A share group made with kafka-share-groups --reset-offsets (it starts at the earliest offset),
     * read with kafka-console-share-consumer, described (start offset and lag), its state decoded by
     * kafka-dump-log --share-group-state-decoder from __share_group_state; a second group set to start
     * at the earliest offset with kafka-configs --entity-type groups; then the first group's offsets and
     * the group deleted.
     */
    private static void shareGroups() throws Exception {
        String t = PREFIX + "-share";
        String g = PREFIX + "-share-group";
        createTopic(t);
        produce("a\nb\nc\n", "--topic", t).ok();
        ToolRunner.Result reset = shareGroups("--reset-offsets", "--group", g, "--topic", t, "--to-earliest",
                "--execute").ok();
        check(reset.out().lines().anyMatch(l -> l.contains(g) && l.contains(t) && l.strip().endsWith(" 0")),
                "reset to earliest: " + reset);
        ToolRunner.Result c = ToolRunner.run("kafka-console-share-consumer", SHARE_CONSUMER,
                withBootstrap("--topic", t, "--group", g, "--max-messages", "3", "--timeout-ms",
                        String.valueOf(TIMEOUT_MS))).ok();
        List<String> lines = c.out().lines().filter(l -> !l.isBlank()).sorted().toList();
        check(lines.equals(List.of("a", "b", "c")), "console share consumer printed " + lines + " (" + c + ")");
        contains(shareGroups("--list").ok(), g);
        // the console consumer accepted the three records when it closed
        eventually("kafka-share-groups --describe shows start offset 3, lag 0", TIMEOUT_MS, () -> {
            try {
                return shareGroups("--describe", "--group", g).ok().out().lines()
                        .anyMatch(l -> l.matches("\\s*" + Pattern.quote(g) + "\\s+" + Pattern.quote(t) + "\\s+0\\s+3\\s+0\\s*"));
            } catch (Exception e) {
                return false;
            }
        });
        File[] dirs = dataDir().listFiles((x, name) -> name.startsWith("__share_group_state-"));
        check(dirs != null && dirs.length > 0, "no __share_group_state partitions");
        List<String> logs = new ArrayList<>();
        for (File d : dirs) {
            for (File f : segmentFiles(d, ".log")) {
                if (f.length() > 0) {
                    logs.add(f.getPath());
                }
            }
        }
        ToolRunner.Result dump = ToolRunner.run("kafka-dump-log", DUMP_LOG, "--files", String.join(",", logs),
                "--share-group-state-decoder");
        check(dump.status() == 0 && !dump.err().contains("Exception"), "kafka-dump-log --share-group-state-decoder: " + dump);
        check(dump.out().lines().anyMatch(l -> l.contains("\"groupId\":\"" + g + "\"") && l.contains("\"startOffset\":3")),
                "no snapshot of " + g + " at start offset 3 in " + dump);
        // a second group told to start at the earliest offset by a group config (kafka-configs)
        String g2 = g + "-2";
        configs("--alter", "--entity-type", "groups", "--entity-name", g2, "--add-config",
                "share.auto.offset.reset=earliest").ok();
        contains(configs("--describe", "--entity-type", "groups", "--entity-name", g2).ok(),
                "share.auto.offset.reset=earliest");
        ToolRunner.Result c2 = ToolRunner.run("kafka-console-share-consumer", SHARE_CONSUMER,
                withBootstrap("--topic", t, "--group", g2, "--max-messages", "3", "--timeout-ms",
                        String.valueOf(TIMEOUT_MS))).ok();
        List<String> lines2 = c2.out().lines().filter(l -> !l.isBlank()).sorted().toList();
        check(lines2.equals(List.of("a", "b", "c")), "group with share.auto.offset.reset=earliest read " + lines2);
        contains(shareGroups("--delete-offsets", "--group", g, "--topic", t).ok(), "Successful");
        contains(shareGroups("--delete", "--group", g).ok(), "was successful");
        check(shareGroups("--list").ok().out().lines().noneMatch(l -> l.strip().equals(g)), "deleted share group still listed");
    }

    /** Kafka's transaction-log decoder reads Sluice's __transaction_state records (Kafka's own formats). */
    private static void dumpTransactionLog() throws Exception {
        File data = dataDir();
        String t = PREFIX + "-txn-dump";
        String txnId = PREFIX + "-dumped-txn";
        createTopic(t);
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) TIMEOUT_MS);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(t, 0, "k", "v"));
            producer.commitTransaction();
        }
        eventually("kafka-dump-log --transaction-log-decoder shows " + txnId, TIMEOUT_MS, () -> {
            File[] dirs = data.listFiles((x, name) -> name.startsWith("__transaction_state-"));
            List<String> logs = new ArrayList<>();
            for (File d : dirs == null ? new File[0] : dirs) {
                for (File f : segmentFiles(d, ".log")) {
                    if (f.length() > 0) {
                        logs.add(f.getPath());
                    }
                }
            }
            if (logs.isEmpty()) {
                return false;
            }
            try {
                ToolRunner.Result r = ToolRunner.run("kafka-dump-log", DUMP_LOG, "--files", String.join(",", logs),
                        "--transaction-log-decoder");
                if (r.status() != 0 || r.err().contains("Exception") || r.out().contains("Exception")) {
                    throw new AssertionError("kafka-dump-log --transaction-log-decoder: " + r);
                }
                // The decoded key names the id; the decoded value carries the producer and the partitions.
                return r.out().lines().anyMatch(l -> l.contains(txnId) && l.contains("producerId")
                        && l.contains(t));
            } catch (AssertionError e) {
                throw e;
            } catch (Exception e) {
                return false;
            }
        });
    }

    // ---- security: kafka-configs SCRAM users, then the tools over SASL_SSL -------------------------

    private static void scramUserOverSaslSsl() throws Exception {
        Harness.needSaslSsl();
        String user = PREFIX + "-scram-user";
        String password = "tool-secret";
        // kafka-configs through the PLAINTEXT listener, as an operator creates the first SCRAM users.
        contains(configs("--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=" + password + "]",
                "--entity-type", "users", "--entity-name", user).ok(), "Completed updating config for user " + user);
        contains(configs("--describe", "--entity-type", "users", "--entity-name", user).ok(),
                "SCRAM credential configs for user-principal '" + user + "' are SCRAM-SHA-256=iterations=8192");

        File props = File.createTempFile("sluice-scram-client", ".properties");
        try {
            java.nio.file.Files.writeString(props.toPath(), String.join("\n",
                    "security.protocol=SASL_SSL",
                    "sasl.mechanism=SCRAM-SHA-256",
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                            + user + "\" password=\"" + password + "\";",
                    "ssl.truststore.type=PEM",
                    "ssl.truststore.location=" + Harness.CA_PEM, ""));
            String ssl = Harness.SASL_SSL_BOOTSTRAP;
            String cfg = props.getAbsolutePath();
            String t = PREFIX + "-scram-console";
            contains(ToolRunner.run("kafka-topics", TOPICS, "--bootstrap-server", ssl, "--command-config", cfg,
                    "--create", "--topic", t, "--partitions", "1").ok(), "Created topic " + t + ".");
            ToolRunner.runWithInput("kafka-console-producer", PRODUCER, "a:1\nb:2\n", "--bootstrap-server", ssl,
                    "--command-config", cfg, "--topic", t, "--reader-property", "parse.key=true",
                    "--reader-property", "key.separator=:").ok();
            ToolRunner.Result c = ToolRunner.run("kafka-console-consumer", CONSUMER, "--bootstrap-server", ssl,
                    "--command-config", cfg, "--topic", t, "--from-beginning", "--max-messages", "2", "--timeout-ms",
                    String.valueOf(TIMEOUT_MS), "--formatter-property", "print.key=true",
                    "--formatter-property", "key.separator=|").ok();
            List<String> lines = c.out().lines().filter(l -> !l.isBlank()).toList();
            check(lines.equals(List.of("a|1", "b|2")), "console consumer over SASL_SSL printed " + lines + " (" + c + ")");
            // A wrong password in the same client config is refused.
            java.nio.file.Files.writeString(props.toPath(),
                    java.nio.file.Files.readString(props.toPath()).replace(password, "not-" + password));
            ToolRunner.Result bad = ToolRunner.run("kafka-topics", TOPICS, "--bootstrap-server", ssl,
                    "--command-config", cfg, "--list");
            check(bad.status() != 0 && (bad.out() + bad.err()).contains("SaslAuthenticationException"),
                    "kafka-topics --list with a wrong SCRAM password: " + bad);
        } finally {
            java.nio.file.Files.deleteIfExists(props.toPath());
        }
    }
}
