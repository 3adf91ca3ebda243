package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/txn"
)

// A transaction marker is written for the coordinator only once the
// in-sync replicas hold it (finding 9 of docs/reliability.md: a COMMIT
// marker acknowledged while only the leader had it was truncated by the
// next leader, so the transaction was aborted on that partition).
func TestClusterTxnMarkerWaitsForReplicas(t *testing.T) {
	defer func(d time.Duration) { markerReplicationTimeout = d }(markerReplicationTimeout)
	markerReplicationTimeout = 30 * time.Second
	tc := startTestCluster(t, 3, map[string]string{"replica.lag.time.max.ms": "30000"})
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mir := "2"
	if res, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &mir}, "mk"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	md := waitCluster(t, adm, "three in-sync replicas", func(md kadm.Metadata) bool {
		ps := md.Topics["mk"].Partitions
		return len(ps) == 1 && ps[0].Leader > 0 && len(ps[0].ISR) == 3
	})
	leaderID := md.Topics["mk"].Partitions[0].Leader
	leader := tc.nodes[leaderID-1]
	b := leader.broker()
	tp := txn.TopicPartition{Topic: "mk", Partition: 0}
	// The broker that answered Metadata may be ahead of the others: wait
	// until every node has published the partition and the leader leads
	// it locally (else WriteMarker finds no leader to write to yet).
	waitImages(t, tc, "every node to know mk-0's leader and in-sync set", func(im *metadata.Image) bool {
		p, ok := im.Partition("mk", 0)
		return ok && p.Leader == leaderID && len(p.ISR) == 3
	})
	var part *replica.Partition
	waitFor(t, "the leader to lead mk-0 locally", func() bool {
		part = b.replicas.Get("mk", 0)
		return part != nil && part.Role() == replica.Leader && len(part.State().ISR) == 3
	})
	m := batch.Marker{ProducerID: 7, ProducerEpoch: 0, Type: batch.ControlCommit, Timestamp: time.Now().UnixMilli()}

	// With the followers fetching, the marker is written and below the
	// high watermark when WriteMarker returns (on a loaded machine the
	// followers' next fetch can take seconds).
	if err := (txnMarkers{b: b}).WriteMarker(tp, m); err != nil {
		t.Fatalf("marker with every replica up: %v", err)
	}
	if hw, leo := part.HighWatermark(), part.LogEndOffset(); hw != leo {
		t.Fatalf("marker acknowledged with high watermark %d below the log end %d", hw, leo)
	}

	// With the followers no longer fetching (still in the in-sync set:
	// replica.lag.time.max.ms is long), the marker is appended but not
	// acknowledged: the coordinator must keep the transaction undecided
	// and write it again.
	for _, n := range tc.nodes {
		if n != leader {
			n.broker().cluster.stopFetchers()
		}
	}
	// (Only this wait, which must time out, is shortened.)
	markerReplicationTimeout = 700 * time.Millisecond
	leo := part.LogEndOffset()
	err := (txnMarkers{b: b}).WriteMarker(tp, m)
	if err == nil {
		t.Fatalf("marker at offset %d acknowledged while no follower holds it (high watermark %d)", leo, part.HighWatermark())
	}
	if got := part.LogEndOffset(); got != leo+1 {
		t.Fatalf("log end %d after the marker, want %d (appended, then waited for)", got, leo+1)
	}
	if lso, hw := part.LastStableOffset(), part.HighWatermark(); lso > hw || hw > leo {
		t.Fatalf("last stable offset %d, high watermark %d: past the unreplicated marker at %d", lso, hw, leo)
	}
	t.Logf("unreplicated marker refused as expected: %v", err)

}
