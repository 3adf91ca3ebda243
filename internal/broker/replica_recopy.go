// A follower of a compacted topic that fell behind its leader's cleaner
// copies the leader's log again from its start.
//
// The leader's cleaner works below the high watermark, which only the
// in-sync replicas hold back: a follower out of the in-sync set (stopped,
// paused, or restarted without its un-fsynced tail) may come back to
// offsets the leader has cleaned since. A tombstone written and removed
// (delete.retention.ms) in that time never reaches it, and the older value
// of its key it holds is never removed: the deleted key would be back
// wherever this replica leads. Apache Kafka's followers keep such values
// (delete.retention.ms is documented as the bound on how far a reader may
// lag); here a follower whose fetch lands in records its leader has
// compacted, while its own log holds records below, starts over from the
// leader's log start and copies the cleaned log, as a new replica does. A
// follower in the in-sync set never sees cleaned records at its position:
// the high watermark the cleaner stops at is at most its log end.

package broker

import (
	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recopyIfCleanedAway checks a Fetch answer before it is appended and
// reports whether the follower restarted its log instead (the answer is
// then dropped: the next Fetch asks from the leader's log start).
func (f *leaderFetcher) recopyIfCleanedAway(fp *fetchedPartition, rp *kmsg.FetchResponseTopicPartition) bool {
	if fp.pos <= fp.p.LogStartOffset() && !fp.copying {
		// Nothing below the position: what follows is a plain copy of the
		// leader's log, cleaned or not, up to its high watermark of now.
		fp.copying, fp.copyTo = true, rp.HighWatermark
	}
	if fp.copying {
		if fp.pos >= fp.copyTo {
			fp.copying = false // copied: from now on, any lag counts again
		}
		return false
	}
	if !fp.p.Config().Compact || !cleanedFrom(rp.RecordBatches, fp.pos) {
		return false
	}
	start := max(rp.LogStartOffset, 0)
	f.c.logger.Info("replica fell behind its leader's log cleaner; copying the cleaned log again from the leader's log start",
		"partition", fp.p.String(), "leader", f.leader, "position", fp.pos, "log_start", start, "high_watermark", rp.HighWatermark)
	if err := fp.p.RestartAt(start); err != nil {
		f.c.logger.Warn("replica restart at the leader's log start failed", "partition", fp.p.String(), "err", err)
		return true
	}
	fp.copying, fp.copyTo = true, rp.HighWatermark
	return true
}

// cleanedFrom reports whether whole batches fetched from offset pos show
// the leader's cleaner at work: a batch that does not start where the last
// one ended (records removed between), one holding fewer records than its
// offset range (records removed inside) or one carrying a delete horizon.
// A producer's batches never do.
func cleanedFrom(records []byte, pos int64) bool {
	next := pos
	for len(records) >= batch.HeaderSize {
		h, err := batch.ParseHeader(records)
		if err != nil {
			return false
		}
		n := h.TotalSize()
		if n <= 0 || n > len(records) {
			return false // a partial batch at the end of the answer
		}
		if h.BaseOffset != next || int64(h.RecordCount) != int64(h.LastOffsetDelta)+1 || h.HasDeleteHorizon() {
			return true
		}
		next = h.LastOffset() + 1
		records = records[n:]
	}
	return false
}
