package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/replica"
)

// lowWatermarkWait is a DeleteRecords partition whose answer waits until
// its live replicas have deleted the records too (delete_records.go).
type lowWatermarkWait struct {
	part         *replica.Partition
	required     int64
	topic, index int // its place in the response
}

// waitLowWatermarks completes the answers of waits within timeoutMs (one
// deadline for the whole request, as Kafka's DelayedDeleteRecords): each
// gets the low watermark once it reaches its required offset, or the error
// that ended the wait (REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER) with
// low_watermark -1.
func (b *Broker) waitLowWatermarks(resp *kmsg.DeleteRecordsResponse, waits []lowWatermarkWait, timeoutMs int32) {
	if len(waits) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(max(timeoutMs, 0))*time.Millisecond)
	defer cancel()
	for _, w := range waits {
		rp := &resp.Topics[w.topic].Partitions[w.index]
		low, err := w.part.WaitLowWatermark(ctx, w.required, b.isLiveBroker)
		if err != nil {
			rp.ErrorCode, rp.LowWatermark = errorCode(err), -1
			continue
		}
		rp.LowWatermark = low
	}
}
