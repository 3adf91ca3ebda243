package broker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// shareStateWait bounds how long a share-group admin request (AlterShareGroupOffsets,
// DeleteShareGroupOffsets) waits for a share partition's coordinator. Kafka's persister
// retries such a call five times, backing off from 1 s, about 15 s in all; the common
// case is a cluster's first share-group request, whose __share_group_state is created
// by it and has no leader yet.
const shareStateWait = 15 * time.Second

// retryShareState runs op, a write to the share coordinator, again while it fails
// because the coordinator is not there yet (the state topic missing or leaderless, its
// leader still loading it or just replaced), with a backoff from 50 ms to 1 s, until
// shareStateWait has passed or ctx is done. It returns op's last error.
func retryShareState(ctx context.Context, op func() error) error {
	deadline := time.Now().Add(shareStateWait)
	backoff := 50 * time.Millisecond
	for {
		err := op()
		if err == nil || !shareStateRetriable(err) || time.Now().Add(backoff).After(deadline) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// shareStateRetriable reports whether a share-coordinator call failed only because
// the coordinator is not available yet.
func shareStateRetriable(err error) bool {
	return errors.Is(err, errShareCoordinatorNotAvailable) || errors.Is(err, kerr.CoordinatorNotAvailable) ||
		errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorLoadInProgress)
}

// shareStateErrorCode is the partition error of a failed share-coordinator write:
// COORDINATOR_NOT_AVAILABLE (retriable) when the coordinator could not be reached in
// time, KAFKA_STORAGE_ERROR otherwise.
func shareStateErrorCode(err error) int16 {
	if shareStateRetriable(err) {
		return kerr.CoordinatorNotAvailable.Code
	}
	return kerr.KafkaStorageError.Code
}
