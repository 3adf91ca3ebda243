// Package config owns Sluice's configuration table: every topic-level and
// broker-level config name Sluice understands, with its type, default,
// validator, broker synonyms and documentation, following Apache Kafka 4.x
// names and semantics.
//
// DescribeConfigs, CreateTopics, AlterConfigs and IncrementalAlterConfigs all
// read this table; docs/configuration.md is generated from it
// (go generate ./internal/config).
//
// The package also parses server.properties-style files, builds the typed
// Broker configuration, resolves a topic's effective configuration (value,
// source and synonyms) and applies incremental alter operations.
//
// It must not touch storage, the network or any other package's state: it is
// pure functions over the table. Mapping environment variables and flags to
// property names belongs to cmd/sluice.
package config
