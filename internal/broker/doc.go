// Package broker owns the Kafka API surface of Sluice: the Broker state
// (configuration, log manager, topic registry, identity, metrics), the single
// registry of served API keys and versions (registry.go, from which
// ApiVersions is derived), one handler per API in its own file, and the
// embeddable Server (Start/Addr/Close) that cmd/sluice and the tests run.
//
// It must not touch: framing, headers and connection handling (package
// wire), on-disk formats (package log), record-batch bytes (package batch),
// or the config table itself (package config) — it calls them.
//
// # Adding a handler
//
//  1. The API key and its Apache Kafka 4.x version range must be listed in
//     apiTable (registry.go). Most keys Sluice will serve are already there;
//     the entry also says whether requests of that key may run concurrently
//     with other requests of the same connection (reads: yes; anything that
//     changes state or whose order matters, such as Produce: no — it becomes
//     a barrier, so a connection's writes apply in request order).
//
//  2. Create one file named for the API (list_offsets.go), opening with a
//     comment saying what it does, which versions, and where it differs from
//     Kafka — followed by a blank line before "package broker", so that it
//     stays out of the package documentation (this file is the package doc).
//     Register the handler from init:
//
//     func init() { register(kmsg.ListOffsets, (*Broker).handleListOffsets) }
//
//     func (b *Broker) handleListOffsets(ctx context.Context, r *wire.Request,
//     req *kmsg.ListOffsetsRequest) (kmsg.Response, error) {
//     resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
//     ...
//     return resp, nil
//     }
//
//     ApiVersions advertises the key as soon as it is registered. The
//     response's version is set by the wire layer; build it with
//     req.ResponseKind() and kmsg.NewXxx constructors (they fill Kafka's
//     defaults, e.g. -1 for unknown offsets).
//
//  3. Return values: a response (the normal case, errors inside it as Kafka
//     error codes); the literal nil for "no response" (acks=0 produce — never
//     a typed nil pointer); or a non-nil error, which logs and closes the
//     connection (only for requests that cannot be answered at all). A panic
//     is recovered by the wire layer and closes that connection only.
//     ctx is cancelled when the connection closes or the server shuts down:
//     long-polls should return what they have; writes must never be
//     abandoned half-way.
//
//  4. Versions advertised but not accepted (Produce v0–v2) are answered by
//     the reject function registered with registerReject.
//
// # What a handler can reach
//
//   - b.partition(topic, partition) → (*replica.Partition, *topics.Topic,
//     errCode): the partition (or UNKNOWN_TOPIC_OR_PARTITION). Data reaches a
//     handler only through it: p.CheckLeader(currentLeaderEpoch) answers
//     NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH,
//     p.AppendAsLeader, p.Read, p.HighWatermark (kept apart from the log end
//     offset), p.State() (leader, epoch, replicas, in-sync set).
//     b.topicByID(id) for topic-id requests; b.topics (*topics.Registry) for
//     metadata, whose topics are immutable snapshots; b.logs (*log.Manager)
//     only for creating and deleting logs (topic_admin.go, partitions.go).
//   - b.cfg (*config.Broker): static broker config; b.logConfig(overrides)
//     resolves a topic's effective log.Config.
//   - The cluster (cluster.go): b.liveBrokers(r), b.brokerByID(r, id),
//     b.controllerID(), b.self() — never a node id constant. b.clusterID,
//     b.endpoint(r) (the advertised address of the listener the request came
//     through), b.logger (slog), b.metrics,
//     b.dataDir. r.Conn (wire.ConnState): listener, security protocol,
//     principal, TLS state (listeners.go, sasl_*.go).
//   - Errors: errorCode(err) maps any error that has KafkaCode() (ours,
//     config, log, batch) to its code, else UNKNOWN_SERVER_ERROR;
//     errorMessage(err) gives the *string for error_message fields;
//     errorf(kerr.X, ...) builds an *Error with a code and message.
//   - Lifecycle: add state fields to Broker (marked section in broker.go);
//     initialise them from a step of startServices (server.go: an explicit,
//     ordered list run after the logs are open, before listeners accept) and
//     flush them with b.onClose. Partition roles are events: b.replicas.Listen
//     hears became-leader / became-follower / removed for each partition
//     (coordinators load and unload their internal partitions on them).
//
// Tests: testutil_test.go has startTestBroker(t, testOptions{Props, DataDir,
// MetricsListen, Quiet}) → an in-process server on 127.0.0.1:<free port>
// (offsets.topic.num.partitions defaults to 1 there, for speed), with
// tb.client() (kgo), tb.admin() (kadm), tb.request(req), tb.restart() (same
// data dir), tb.broker() (white-box access), tb.raw() (byte-level requests:
// send/recv/expectClosed) and tb.logs.text() (the broker's log output).
package broker
