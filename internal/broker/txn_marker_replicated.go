package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/replica"
)

// markerReplicationTimeout bounds how long a transaction marker's append
// waits for the in-sync replicas (Kafka's WriteTxnMarkers appends with
// acks=all and request.timeout.ms); on timeout the coordinator retries the
// marker against the partition's current leader. A variable for tests.
var markerReplicationTimeout = coordinatorWriteTimeout

// appendMarkerReplicated appends the transaction marker m to part as its
// leader with acks=all semantics, as Apache Kafka's WriteTxnMarkers does:
// NOT_ENOUGH_REPLICAS before anything is written when the in-sync set is
// smaller than minISR (min.insync.replicas), and success only once the high
// watermark is past the marker. Until then the marker is not written for
// the coordinator, which keeps the transaction in PrepareCommit/PrepareAbort
// and writes the marker again (to the new leader after a leadership change:
// a marker the old leader held alone may be truncated away).
func appendMarkerReplicated(part *replica.Partition, m batch.Marker, minISR int) error {
	epoch := part.LeaderEpoch()
	res, err := part.AppendAsLeader(batch.NewMarkerBatch(m), log.AppendOptions{AllowControl: true, MarkerTransactionVersion: m.TransactionVersion}, minISR)
	if err != nil {
		return err
	}
	if !part.NeedsReplication() {
		// The in-sync set is this leader alone, or the leadership moved
		// right after the append: then the marker may be truncated by the
		// next leader, so it is not written.
		if code := part.CheckLeader(epoch); code != 0 {
			return &Error{Code: kerr.NotLeaderForPartition.Code, Msg: "leadership of " + part.String() + " moved before the transaction marker was replicated"}
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), markerReplicationTimeout)
	defer cancel()
	return part.WaitReplicated(ctx, epoch, res.LastOffset+1, max(minISR, 1))
}
