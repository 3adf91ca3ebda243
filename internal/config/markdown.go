package config

//go:generate go run ./cmd/gendoc -o ../../docs/configuration.md

import (
	"bytes"
	"fmt"
	"strings"
)

// Markdown renders the configuration reference (docs/configuration.md) from
// the tables. The output is deterministic.
func Markdown() []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Configuration reference\n\n")
	w("<!-- Generated from internal/config by `go generate ./internal/config`. Do not edit by hand. -->\n\n")
	w("Sluice uses Apache Kafka 4.x config names, types and defaults, so existing `server.properties` files,\n")
	w("`kafka-configs.sh` and Admin clients work unchanged. Where Sluice differs, the entry says so.\n\n")
	w("- **Broker configs** are read at start-up from a `server.properties`-style file (Java properties syntax).\n")
	w("  An unknown name or an invalid value stops the broker with an error naming it. Kafka names that Sluice\n")
	w("  accepts but does not act on are marked *accepted, no effect*.\n")
	w("- **Topic configs** are per-topic overrides set with CreateTopics, AlterConfigs or IncrementalAlterConfigs\n")
	w("  (for example `kafka-configs.sh --alter --entity-type topics --add-config retention.ms=3600000`).\n")
	w("  An unknown name or invalid value is rejected with `INVALID_CONFIG` (40); a null value in CreateTopics too.\n")
	w("- **Dynamic broker configs** are set at runtime, without a restart, for one broker or as the cluster-wide\n")
	w("  default, with IncrementalAlterConfigs or AlterConfigs on a BROKER resource (for example\n")
	w("  `kafka-configs.sh --alter --entity-type brokers --entity-name 1 --add-config leader.replication.throttled.rate=1048576`,\n")
	w("  or `--entity-default` for every broker). Sluice accepts the configs marked *yes* in the \"Dynamic in Sluice\"\n")
	w("  column: the configs Kafka can change at runtime that Sluice applies at once (the broker-level defaults of\n")
	w("  topic configs, re-applied to every topic without its own override; the replication throttle rates;\n")
	w("  `unclean.leader.election.enable`; `max.connections` and `max.connections.per.ip`). Other names get `INVALID_REQUEST` (42) \"Cannot update these configs\n")
	w("  dynamically\", as Kafka answers for a static config; unknown names and bad values `INVALID_CONFIG` (40).\n")
	w("  A single node keeps them in `broker-configs.json` in its data directory; a cluster keeps them in its\n")
	w("  metadata, so every node applies them. A broker config's effective value is, in order: its dynamic value\n")
	w("  for this broker, the cluster-wide dynamic default, the properties file, the default.\n")
	w("- A topic config's effective value is, in order: the topic override; else the first of its broker\n")
	w("  synonyms set dynamically for this broker, then as a cluster-wide dynamic default, then in the properties\n")
	w("  file (`*.hours` and `*.minutes` converted to milliseconds); else the default. DescribeConfigs reports the\n")
	w("  source (`DYNAMIC_TOPIC_CONFIG`, `DYNAMIC_BROKER_CONFIG`, `DYNAMIC_DEFAULT_BROKER_CONFIG`,\n")
	w("  `STATIC_BROKER_CONFIG`, `DEFAULT_CONFIG`) and the full synonym chain, as Kafka does.\n")
	w("- The `ssl.*`, `sasl.*` and `connections.max.reauth.ms` broker configs may be given for one listener with\n")
	w("  Kafka's prefix `listener.name.<listener name in lower case>.` (for example\n")
	w("  `listener.name.sasl_ssl.ssl.keystore.location`); the prefixed value wins for that listener. JAAS configs take\n")
	w("  the mechanism too: `listener.name.sasl_ssl.plain.sasl.jaas.config`; so may the server callback handler,\n")
	w("  `connections.max.reauth.ms` and the `sasl.oauthbearer.*` configs\n")
	w("  (`listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class`). See docs/security.md.\n")
	w("  `max.connections` and `max.connection.creation.rate` take the prefix too: then they limit that listener\n")
	w("  alone, besides the broker-wide limit.\n")
	w("- Kafka 4.0 removed `message.format.version`, `message.downconversion.enable` and\n")
	w("  `message.timestamp.difference.max.ms` (and their `log.` broker forms); Sluice rejects them as unknown.\n\n")

	w("## Topic configs\n\n")
	w("| Name | Type | Default | Broker synonyms | Sluice |\n| --- | --- | --- | --- | --- |\n")
	for _, d := range topicDefs {
		w("| [`%s`](#%s) | %s | %s | %s | %s |\n", d.Name, anchor(d.Name), d.Type, mdCode(describeDefault(d.Default)),
			mdList(d.Synonyms), effectCell(d.Effect))
	}
	w("\n")
	for _, d := range topicDefs {
		writeDef(&b, d, true)
	}

	w("## Broker configs\n\n")
	w("| Name | Type | Default | Dynamic in Kafka | Dynamic in Sluice | Sluice |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, d := range brokerDefs {
		dyn, live := "no", "no"
		if !d.ReadOnly {
			dyn = "yes"
		}
		if LiveDynamic(d.Name) {
			live = "yes"
		}
		w("| [`%s`](#%s) | %s | %s | %s | %s | %s |\n", d.Name, anchor(d.Name), d.Type, mdCode(describeDefault(d.Default)),
			dyn, live, effectCell(d.Effect))
	}
	w("\n")
	w("\"Dynamic in Kafka\" is what DescribeConfigs reports as `read_only=false`; \"Dynamic in Sluice\" marks the configs\n")
	w("IncrementalAlterConfigs and AlterConfigs accept for a broker or the cluster-wide default (applied without a\n")
	w("restart).\n\n")
	for _, d := range brokerDefs {
		writeDef(&b, d, false)
	}
	return b.Bytes()
}

func writeDef(b *bytes.Buffer, d Def, topic bool) {
	fmt.Fprintf(b, "### %s\n\n%s\n\n", d.Name, d.Doc)
	fmt.Fprintf(b, "- Type: %s\n", d.Type)
	fmt.Fprintf(b, "- Default: %s\n", mdCode(describeDefault(d.Default)))
	if d.Valid != "" {
		fmt.Fprintf(b, "- Valid values: %s\n", d.Valid)
	}
	if topic {
		if len(d.Synonyms) > 0 {
			fmt.Fprintf(b, "- Broker synonyms (in precedence order): %s\n", mdList(d.Synonyms))
		} else {
			fmt.Fprintf(b, "- Broker synonyms: none\n")
		}
	}
	if d.Sensitive {
		fmt.Fprintf(b, "- Sensitive: its value is never returned by DescribeConfigs\n")
	}
	if !topic && LiveDynamic(d.Name) {
		fmt.Fprintf(b, "- Dynamic: per broker and cluster-wide (`kafka-configs --entity-type brokers`), applied without a restart\n")
	}
	if d.Effect != "" {
		fmt.Fprintf(b, "- Sluice: %s\n", d.Effect)
	}
	b.WriteString("\n")
}

// anchor is the GitHub-style heading anchor of a config name.
func anchor(name string) string { return strings.ReplaceAll(name, ".", "") }

func mdCode(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

func mdList(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = mdCode(n)
	}
	return strings.Join(parts, ", ")
}

func effectCell(e string) string {
	if e == "" {
		return "honoured"
	}
	return e
}
