package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// clientNames are the matrix's column headings, in column order; a client
// not listed here gets a column after these, named by its id.
var clientNames = []struct{ id, name string }{
	{"kcat", "kcat (librdkafka)"},
	{"python", "confluent-kafka Python (librdkafka)"},
	{"kafka-python", "kafka-python"},
	{"aiokafka", "aiokafka"},
	{"java", "Java kafka-clients"},
	{"java39", "Java kafka-clients"},
	{"kafkajs", "kafkajs"},
	{"go", "franz-go"},
	{"kafka-tools", "Kafka CLI tools"},
	{"kafka-streams", "Kafka Streams"},
	{"kafka-connect", "Kafka Connect"},
}

// appClients are the Kafka applications and tools (as opposed to client
// libraries); compat gives them a table of their own.
var appClients = []string{"kafka-tools", "kafka-streams", "kafka-connect"}

// featureNames are the matrix's rows, in row order; a feature not listed
// here gets a row after these, named by its id.
var featureNames = []struct{ id, name string }{
	{"metadata", "Metadata / topic listing"},
	{"admin.describe-cluster", "Describe cluster"},
	{"admin.create-topic", "Create topic with configs"},
	{"admin.invalid-config", "Invalid config refused (INVALID_CONFIG)"},
	{"admin.describe-configs", "Describe configs"},
	{"admin.alter-configs", "IncrementalAlterConfigs"},
	{"admin.alter-configs-legacy", "AlterConfigs (legacy)"},
	{"admin.delete-topic", "Delete topic"},
	{"produce", "Produce"},
	{"produce.tombstone", "Produce tombstones (null values)"},
	{"produce.idempotent", "Idempotent producer"},
	{"compression.gzip", "Compression: gzip"},
	{"compression.snappy", "Compression: snappy"},
	{"compression.lz4", "Compression: lz4"},
	{"compression.zstd", "Compression: zstd"},
	{"consume.from-beginning", "Consume from the beginning"},
	{"group.classic", "Consumer group (classic protocol)"},
	{"group.consumer", "Consumer group (KIP-848 consumer protocol)"},
	{"group.manual-commit", "Manual offset commits"},
	{"admin.groups", "List / describe groups"},
	{"transactions.commit-abort", "Transactions: commit and abort, read_committed vs read_uncommitted"},
	{"transactions.send-offsets", "Transactions: consume-transform-produce, offsets committed in the transaction"},
	{"transactions.fencing", "Transactions: a second producer with the same transactional.id fences the first"},
	{"transactions.v2", "Transactions: transaction version 2 (KIP-890 part 2: implicit partition adds, an epoch bump per EndTxn)"},
	{"security.sasl-plain-ssl", "SASL/PLAIN over TLS (SASL_SSL listener, CA as PEM): produce and consume"},
	{"security.scram", "SASL/SCRAM-SHA-256 or -512, user created with AlterUserScramCredentials: produce and consume"},
	{"security.wrong-password", "Wrong SASL password refused with an authentication error"},
	{"security.oauthbearer-unsecured", "SASL/OAUTHBEARER with unsecured (unsigned, development) tokens: produce and consume"},
	{"security.oauthbearer-oidc", "SASL/OAUTHBEARER with a client-credentials login at an OAuth token endpoint, JWT checked against the JWKS: produce and consume"},
	{"security.reauthentication", "KIP-368 re-authentication: sessions of 5 s renewed on the same connections while producing"},
	{"security.acls", "Authorizer on: produce, fetch, groups, transactions and admin refused without ACLs (Kafka's errors; nothing changed), allowed after the client's admin API creates ACLs, refused again after it deletes them"},
	{"security.scram-tool", "kafka-configs --alter / --describe a SCRAM user, then the tools over SASL_SSL (--command-config)"},
	{"example.compacted-topics", "Compacted-topics walkthrough (example)"},
	{"example.compaction", "Walkthrough after compaction (example)"},
	{"tools.topics", "kafka-topics: create with configs, list, describe, refusals"},
	{"tools.topics-alter-partitions", "kafka-topics --alter --partitions"},
	{"tools.topics-delete", "kafka-topics --delete"},
	{"tools.configs-describe", "kafka-configs --describe (topic, broker)"},
	{"tools.configs-alter", "kafka-configs --alter cleanup.policy (--add-config, --delete-config)"},
	{"tools.console", "kafka-console-producer / -consumer with keys and a tombstone"},
	{"tools.consumer-groups", "kafka-consumer-groups --list, --describe, --reset-offsets, --delete"},
	{"tools.get-offsets-delete-records", "kafka-get-offsets (earliest, latest, max timestamp) and kafka-delete-records"},
	{"tools.dump-log", "kafka-dump-log on a Sluice segment (.log, .index, .timeindex)"},
	{"tools.dump-log-offsets", "kafka-dump-log --offsets-decoder on __consumer_offsets"},
	{"tools.dump-log-transactions", "kafka-dump-log --transaction-log-decoder on __transaction_state"},
	{"tools.acls", "kafka-acls --list, --add: SECURITY_DISABLED (no authorizer), as Kafka without one"},
	{"tools.acls-authorizer", "kafka-acls with the authorizer on: --add --producer (with --transactional-id)/--consumer, --list, --remove; denials and grants (topics, groups, transactions) over SASL_PLAINTEXT"},
	{"tools.configs-quotas", "kafka-configs --alter / --describe client quotas (--entity-type clients, users, both)"},
	{"tools.quotas-throttle", "Throttled producer and consumer (client-id quotas) stay below their byte rate and see throttle time; unthrottled clients next to them are not throttled"},
	{"tools.reassign-partitions", "kafka-reassign-partitions --list, --execute with the current assignment"},
	{"tools.reassign-log-dirs", "kafka-reassign-partitions --execute/--verify with log_dirs (AlterReplicaLogDirs): the replica's own directory, and one the broker does not have (LogDirNotFoundException)"},
	{"tools.configs-list-resources", "kafka-configs --describe --entity-type groups lists a group that only has configs; Admin listConfigResources (ListConfigResources, KIP-1142)"},
	{"tools.configs-groups", "kafka-configs --alter / --describe / --delete-config of a group's consumer.* and share.* group configs (bounds refused with Kafka's message); a consumer-protocol consumer of the group reads"},
	{"tools.leader-election", "kafka-leader-election (preferred, unclean, all partitions, missing partition)"},
	{"tools.reassign-partitions-cluster", "Three-node cluster: kafka-reassign-partitions --execute/--verify moves a partition with data to a new broker; the old copy is deleted"},
	{"tools.leader-election-cluster", "Three-node cluster: kafka-leader-election preferred (leader back to the first replica) and unclean (offline partition, out-of-sync replica)"},
	{"cluster.follower-fetching", "Three-node cluster: a Java consumer with client.rack reads from its rack's follower (KIP-392), seen in that broker's metrics"},
	{"tools.decommission-broker", "Three-node cluster: decommission a broker (reassign away, stop, kafka-cluster unregister)"},
	{"tools.unregister-controller", "kafka-cluster unregister-controller: refusals for the active controller and an unknown id (UnregisterController)"},
	{"tools.transactions", "kafka-transactions list, describe-producers, describe (unknown id)"},
	{"tools.features", "kafka-features describe, upgrade, downgrade --dry-run, an unknown feature"},
	{"tools.streams-groups", "kafka-streams-groups --list, --describe --state/--members, --delete on a group.protocol=streams application"},
	{"streams.ktable-restore", "Streams word count: KTable, compacted changelog, restore after restart"},
	{"streams.exactly-once", "Streams word count with processing.guarantee=exactly_once_v2 (transactional changelog and output)"},
	{"streams.exactly-once-cluster", "Streams exactly_once_v2 on a three-node cluster, internal topics at RF 3, the transaction coordinator's broker killed (SIGKILL) mid-run: each count exactly once"},
	{"streams.rebalance-protocol", "Streams word count with group.protocol=streams (KIP-1071): two instances share the tasks, one leaves, its tasks move"},
	{"streams.rebalance-protocol-killed", "Streams word count with group.protocol=streams and per-group streams configs (session timeout, heartbeat interval, one standby): an instance's JVM killed (SIGKILL), a replacement joins, the counts are complete and exact"},
	{"connect.distributed", "Connect distributed: compacted internal topics, file source → sink, restart without duplicates"},
	{"connect.distributed-cluster", "Connect distributed on a three-node cluster, internal topics at their default RF 3, a partition leader killed (SIGKILL) mid-run and restarted: every line reaches the topic and the sink"},
	{"connect.exactly-once-cluster", "Connect with exactly.once.source.support=enabled on a three-node cluster, the source task's transaction coordinator killed (SIGKILL) mid-run: every line exactly once"},
	{"connect.exactly-once", "Connect with exactly.once.source.support=enabled (transactional source tasks, read_committed sink)"},
}

// cmdMatrix prints the client × feature table of a results.json as Markdown.
func cmdMatrix(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "test/clients/results.json", "the suite's JSON report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	data, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	_, err = io.WriteString(stdout, renderMatrix(rep))
	return err
}

// cell folds the results of one client × feature: any failure wins, then
// any pass; only skips give "skip".
func cell(rs []Result) string {
	if len(rs) == 0 {
		return "—"
	}
	st := statusSkip
	for _, r := range rs {
		if r.Status == statusFail {
			return "**fail**"
		}
		if r.Status == statusPass {
			st = statusPass
		}
	}
	return st
}

func renderMatrix(rep Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Generated from test/clients/results.json (%s", rep.GeneratedAt)
	if rep.BrokerVersion != "" {
		fmt.Fprintf(&b, ", broker %s", rep.BrokerVersion)
	}
	fmt.Fprintf(&b, "): %s.\n\n", rep.Summary.Line())
	b.WriteString(renderTable(rep, func(string) bool { return true }))
	b.WriteString(renderNotes(rep))
	b.WriteString("\n" + rubyCSharpNote + "\n")
	return b.String()
}

const rubyCSharpNote = "Ruby and C# clients wrap librdkafka (covered above through kcat and Python) and cannot be " +
	"fetched from the registries this suite installs from, so they are not tested directly."

// renderNotes lists every result that did not pass, with its detail.
func renderNotes(rep Report) string {
	var notes []string
	for _, r := range rep.Results {
		if r.Status != statusPass {
			notes = append(notes, fmt.Sprintf("- %s %s/%s: %s", r.Status, r.Client, r.Test, escapeCell(r.Detail)))
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return "\nNot passing:\n\n" + strings.Join(notes, "\n") + "\n"
}

// renderTable is the feature × client table of the clients that include
// accepts; features no such client reported are left out.
func renderTable(rep Report, include func(client string) bool) string {
	versions := map[string]string{}
	for _, c := range rep.Clients {
		versions[c.ID] = c.Version
	}
	type key struct{ client, feature string }
	byCell := map[key][]Result{}
	var clientIDs, featureIDs []string
	for _, r := range rep.Results {
		if !include(r.Client) {
			continue
		}
		k := key{r.Client, r.Feature}
		byCell[k] = append(byCell[k], r)
		if !slices.Contains(clientIDs, r.Client) {
			clientIDs = append(clientIDs, r.Client)
		}
		if !slices.Contains(featureIDs, r.Feature) {
			featureIDs = append(featureIDs, r.Feature)
		}
	}
	var cols, rows []struct{ id, name string }
	for _, c := range clientNames {
		if slices.Contains(clientIDs, c.id) {
			cols = append(cols, c)
		}
	}
	for _, id := range clientIDs {
		if !slices.ContainsFunc(clientNames, func(c struct{ id, name string }) bool { return c.id == id }) {
			cols = append(cols, struct{ id, name string }{id, id})
		}
	}
	for _, f := range featureNames {
		if slices.Contains(featureIDs, f.id) {
			rows = append(rows, f)
		}
	}
	for _, id := range featureIDs {
		if !slices.ContainsFunc(featureNames, func(f struct{ id, name string }) bool { return f.id == id }) {
			rows = append(rows, struct{ id, name string }{id, id})
		}
	}

	if len(cols) == 0 {
		return "(not run)\n"
	}
	var b strings.Builder
	b.WriteString("| Feature |")
	for _, c := range cols {
		name := c.name
		if v := versions[c.id]; v != "" {
			name += " " + v
		}
		fmt.Fprintf(&b, " %s |", escapeCell(name))
	}
	b.WriteString("\n| --- |")
	for range cols {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, f := range rows {
		fmt.Fprintf(&b, "| %s |", escapeCell(f.name))
		for _, c := range cols {
			fmt.Fprintf(&b, " %s |", cell(byCell[key{c.id, f.id}]))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func escapeCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
