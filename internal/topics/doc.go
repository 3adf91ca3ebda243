// Package topics owns Sluice's topic metadata: the registry of topics (name,
// topic id, partition count, config overrides) and the data directory's
// identity (cluster id, node id, directory id in meta.properties).
//
// Metadata lives in two small files at the top of the data directory:
//
//   - meta.properties — Kafka's format (version=1, cluster.id, node.id,
//     directory.id), written once when the directory is first used.
//   - sluice-topics.json — a versioned JSON document with every topic, rewritten
//     whole on each change: write to a temporary file, fsync it, rename it
//     over the old one, fsync the directory. A reader therefore sees either the
//     old or the new document, never a mix.
//
// Reads are lock-free: the registry publishes immutable snapshots (a *Topic
// is never modified after it is published; updates replace it).
//
// The package must not touch partition data (internal/log) or the network;
// reconciling metadata with the log directories on disk is the broker's job
// (it knows both).
package topics
