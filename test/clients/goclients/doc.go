// Package goclients is Sluice's conformance suite for the Go Kafka clients
// that the rest of the project does not use itself: IBM/sarama,
// segmentio/kafka-go and confluent-kafka-go (librdkafka through cgo).
//
// Every test starts a broker in-process on 127.0.0.1 with a fresh data
// directory and drives it only through the client under test: admin
// (create topics, compacted ones too, describe and alter configs), keyed
// produce with a tombstone, consume from the beginning, a consumer group
// that commits and resumes after its consumer restarts, each compression
// codec and the idempotent producer where the client has them.
//
// The package holds tests only. It must not touch the broker's internals
// beyond starting and stopping a Server (package broker) with a config
// (package config); broker bugs found here are written up in the project
// notes, not fixed from here.
package goclients
