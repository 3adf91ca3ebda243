package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

// apiSpec is one API Sluice serves (or will serve): the version range
// advertised in ApiVersions, the lowest version actually accepted, and
// whether requests may run concurrently on a connection.
type apiSpec struct {
	key         int16
	min, max    int16 // advertised in ApiVersions (Apache Kafka 4.0's ranges)
	minAccepted int16 // requests below this (but >= min) get UNSUPPORTED_VERSION via reject
	// concurrent requests may run alongside neighbouring concurrent requests
	// of the same connection; others are barriers (see wire.Dispatcher).
	concurrent bool
}

// apiTable is THE list of API keys and versions. ApiVersions is derived from
// it: a key is advertised only once a handler is registered for it.
//
// Version ranges are Apache Kafka 4.0's. Produce is advertised from v0
// because librdkafka refuses to compress unless it sees v0, but v0–v2 are
// rejected at request time with UNSUPPORTED_VERSION, exactly as Kafka 4 does.
var apiTable = []apiSpec{
	{key: 0, min: 0, max: 13, minAccepted: 3},   // Produce: barrier keeps per-connection append order (v13: topic ids)
	{key: 1, min: 4, max: 18, concurrent: true}, // Fetch (v18: a follower's HighWatermark, KIP-1166, ignored)
	{key: 2, min: 1, max: 11, concurrent: true}, // ListOffsets (v11: -6, earliest pending upload)
	{key: 3, min: 0, max: 13, concurrent: true}, // Metadata (v13: top-level ErrorCode, always 0 here)
	{key: 8, min: 2, max: 10},                   // OffsetCommit (v10: topic ids)
	{key: 9, min: 1, max: 10, concurrent: true}, // OffsetFetch (v10: topic ids)
	{key: 10, min: 0, max: 6, concurrent: true}, // FindCoordinator
	{key: 11, min: 0, max: 9},                   // JoinGroup
	{key: 12, min: 0, max: 4},                   // Heartbeat
	{key: 13, min: 0, max: 5},                   // LeaveGroup
	{key: 14, min: 0, max: 5},                   // SyncGroup
	{key: 15, min: 0, max: 6, concurrent: true}, // DescribeGroups
	{key: 16, min: 0, max: 5, concurrent: true}, // ListGroups
	{key: 17, min: 0, max: 1},                   // SaslHandshake: barrier, the wire layer reads the SASL phase after it
	{key: 18, min: 0, max: 5, concurrent: true}, // ApiVersions (v5: ClusterId/NodeId check, KIP-1242)
	{key: 19, min: 2, max: 7},                   // CreateTopics
	{key: 20, min: 1, max: 6},                   // DeleteTopics
	{key: 21, min: 0, max: 2},                   // DeleteRecords
	{key: 22, min: 0, max: 5},                   // InitProducerId
	{key: 23, min: 2, max: 4, concurrent: true}, // OffsetForLeaderEpoch
	{key: 24, min: 0, max: 5},                   // AddPartitionsToTxn: v4+ are broker-to-broker (batched, VerifyOnly; KIP-890)
	{key: 25, min: 0, max: 4},                   // AddOffsetsToTxn
	{key: 26, min: 0, max: 5},                   // EndTxn: v5 is transaction version 2 (KIP-890 part 2)
	{key: 27, min: 1, max: 2},                   // WriteTxnMarkers (kafka-transactions.sh abort; v2: TransactionVersion, KIP-1228)
	{key: 28, min: 0, max: 6},                   // TxnOffsetCommit: v5 is transaction version 2 (KIP-890 part 2), v6 topic ids
	{key: 29, min: 1, max: 3, concurrent: true}, // DescribeAcls
	{key: 30, min: 1, max: 3},                   // CreateAcls
	{key: 31, min: 1, max: 3},                   // DeleteAcls
	{key: 32, min: 1, max: 4, concurrent: true}, // DescribeConfigs
	{key: 33, min: 0, max: 2},                   // AlterConfigs
	{key: 34, min: 1, max: 2},                   // AlterReplicaLogDirs
	{key: 35, min: 1, max: 5, concurrent: true}, // DescribeLogDirs (v5: IsCordoned, false: no log dir is cordoned)
	{key: 36, min: 0, max: 2},                   // SaslAuthenticate: barrier, as SaslHandshake
	{key: 37, min: 0, max: 3},                   // CreatePartitions
	{key: 42, min: 0, max: 3},                   // DeleteGroups (v3: per-group ErrorMessage)
	{key: 43, min: 0, max: 2},                   // ElectLeaders
	{key: 44, min: 0, max: 1},                   // IncrementalAlterConfigs
	{key: 45, min: 0, max: 1},                   // AlterPartitionReassignments: v1 is KIP-860
	{key: 46, min: 0, max: 0, concurrent: true}, // ListPartitionReassignments
	{key: 47, min: 0, max: 0},                   // OffsetDelete
	{key: 48, min: 0, max: 1, concurrent: true}, // DescribeClientQuotas
	{key: 49, min: 0, max: 1},                   // AlterClientQuotas
	{key: 50, min: 0, max: 0, concurrent: true}, // DescribeUserScramCredentials
	{key: 51, min: 0, max: 0},                   // AlterUserScramCredentials
	{key: 55, min: 0, max: 2, concurrent: true}, // DescribeQuorum
	{key: 57, min: 0, max: 2},                   // UpdateFeatures
	{key: 60, min: 0, max: 2, concurrent: true}, // DescribeCluster
	{key: 61, min: 0, max: 0, concurrent: true}, // DescribeProducers
	{key: 64, min: 0, max: 0},                   // UnregisterBroker
	{key: 65, min: 0, max: 0, concurrent: true}, // DescribeTransactions
	{key: 66, min: 0, max: 2, concurrent: true}, // ListTransactions (v2: TransactionalIdPattern, KIP-1152)
	{key: 68, min: 0, max: 1},                   // ConsumerGroupHeartbeat
	{key: 69, min: 0, max: 1, concurrent: true}, // ConsumerGroupDescribe
	{key: 74, min: 0, max: 1, concurrent: true}, // ListConfigResources (KIP-1142)
	{key: 75, min: 0, max: 0, concurrent: true}, // DescribeTopicPartitions
	{key: 76, min: 1, max: 1},                   // ShareGroupHeartbeat: v0 was Kafka 4.0's early access, removed in 4.1
	{key: 77, min: 1, max: 1, concurrent: true}, // ShareGroupDescribe
	{key: 78, min: 1, max: 2},                   // ShareFetch: barrier, the share session epoch orders a connection's requests
	{key: 79, min: 1, max: 2},                   // ShareAcknowledge
	{key: 80, min: 0, max: 1},                   // AddRaftVoter (cluster nodes; raft_voters.go)
	{key: 81, min: 0, max: 0},                   // RemoveRaftVoter
	{key: 82, min: 0, max: 0},                   // UpdateRaftVoter (update_raft_voter.go)
	{key: 83, min: 0, max: 0},                   // InitializeShareGroupState (share coordinator; share_coordinator.go)
	{key: 84, min: 0, max: 0},                   // ReadShareGroupState
	{key: 85, min: 0, max: 1},                   // WriteShareGroupState
	{key: 86, min: 0, max: 0},                   // DeleteShareGroupState
	{key: 87, min: 0, max: 1},                   // ReadShareGroupStateSummary
	{key: 88, min: 0, max: 1},                   // StreamsGroupHeartbeat (KIP-1071; v1: KIP-1331's TopologyDescriptionRequired)
	{key: 89, min: 0, max: 1, concurrent: true}, // StreamsGroupDescribe (v1: topology descriptions, KIP-1331)
	{key: 90, min: 0, max: 1, concurrent: true}, // DescribeShareGroupOffsets
	{key: 91, min: 0, max: 0},                   // AlterShareGroupOffsets
	{key: 92, min: 0, max: 0},                   // DeleteShareGroupOffsets
	{key: 93, min: 0, max: 0},                   // StreamsGroupTopologyDescriptionUpdate (KIP-1331; streams_topology_description.go)
	{key: 94, min: 0, max: 0},                   // UnregisterController (Kafka 4.4; unregister_controller.go)
}

// handlerFunc is the untyped form every registered handler is wrapped into.
type handlerFunc func(b *Broker, ctx context.Context, r *wire.Request) (kmsg.Response, error)

type route struct {
	spec    apiSpec
	handle  handlerFunc
	reject  func(req kmsg.Request) kmsg.Response // answers versions below minAccepted
	enabled bool
}

// routes is indexed by API key; filled from apiTable and by register.
var routes = func() map[int16]*route {
	m := make(map[int16]*route, len(apiTable))
	for _, s := range apiTable {
		if _, dup := m[s.key]; dup {
			panic(fmt.Sprintf("broker: api key %d listed twice in apiTable", s.key))
		}
		if kmsg.RequestForKey(s.key) == nil {
			panic(fmt.Sprintf("broker: api key %d unknown to kmsg", s.key))
		}
		m[s.key] = &route{spec: s}
	}
	return m
}()

// register attaches the handler for an API key listed in apiTable. Call it
// from an init function in the handler's file:
//
//	func init() { register(kmsg.Metadata, (*Broker).handleMetadata) }
//
// Registering a key twice, or one missing from apiTable, panics at init (a
// programming error caught by any test).
func register[Req kmsg.Request](key kmsg.Key, fn func(b *Broker, ctx context.Context, r *wire.Request, req Req) (kmsg.Response, error)) {
	rt, ok := routes[int16(key)]
	if !ok {
		panic(fmt.Sprintf("broker: register(%s): key not in apiTable", key.Name()))
	}
	if rt.enabled {
		panic(fmt.Sprintf("broker: register(%s): registered twice", key.Name()))
	}
	rt.enabled = true
	rt.handle = func(b *Broker, ctx context.Context, r *wire.Request) (kmsg.Response, error) {
		req, ok := r.Body.(Req)
		if !ok {
			return nil, fmt.Errorf("broker: %s handler got %T", key.Name(), r.Body)
		}
		return fn(b, ctx, r, req)
	}
}

// registerReject sets the function answering requests whose version is
// advertised but below minAccepted (Produce v0–v2).
func registerReject(key kmsg.Key, fn func(req kmsg.Request) kmsg.Response) {
	routes[int16(key)].reject = fn
}

// supported returns the advertised range of key if a handler is registered.
func supported(key int16) (apiSpec, bool) {
	rt, ok := routes[key]
	if !ok || !rt.enabled {
		return apiSpec{}, false
	}
	return rt.spec, true
}

// dispatcher adapts a Broker to wire.Dispatcher.
type dispatcher struct{ b *Broker }

func (d dispatcher) Versions(key int16) (int16, int16, bool) {
	s, ok := supported(key)
	return s.min, s.max, ok
}

func (d dispatcher) Concurrent(key int16) bool {
	s, _ := supported(key)
	return s.concurrent
}

func (d dispatcher) Handle(ctx context.Context, r *wire.Request) (kmsg.Response, error) {
	rt := routes[r.Header.APIKey]
	if r.Header.APIVersion < rt.spec.minAccepted {
		if rt.reject == nil {
			return nil, fmt.Errorf("broker: %s v%d is not supported",
				kmsg.NameForKey(r.Header.APIKey), r.Header.APIVersion)
		}
		return rt.reject(r.Body), nil
	}
	ctx, done := d.b.quotaRequest(ctx, r) // the request quota (client_quotas.go)
	resp, err := rt.handle(d.b, ctx, r)
	return done(resp), err
}

// Produce v0–v2: answered with UNSUPPORTED_VERSION for every partition, as
// Apache Kafka 4 does (it advertises v0 only so librdkafka will compress).
func init() {
	registerReject(kmsg.Produce, func(req kmsg.Request) kmsg.Response {
		pr := req.(*kmsg.ProduceRequest)
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range pr.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.UnsupportedVersion.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if pr.Acks == 0 {
			return nil
		}
		return resp
	})
}
