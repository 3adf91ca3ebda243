package compact

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

// ErrDedupeBufferTooSmall fails a pass whose map cannot hold even one key.
var ErrDedupeBufferTooSmall = errors.New("compact: log.cleaner.dedupe.buffer.size too small for even one key")

// errStop ends a segment walk early.
var errStop = errors.New("stop")

// errLogChanged aborts a pass whose segments changed underneath it
// (retention, truncation, deletion): not a failure, the next round retries.
var errLogChanged = errors.New("compact: log changed during the pass")

// PassResult summarises one cleaning pass.
type PassResult struct {
	Topic             string
	Partition         int32
	FirstDirty        int64 // where the dirty section started
	EndOffset         int64 // the new cleaner checkpoint
	MapFull           bool  // the dedupe map filled up before the dirty section ended
	Keys              int   // keys in the map
	SegmentsIn        int
	SegmentsOut       int
	BytesRead         int64
	BytesWritten      int64
	RecordsRead       int64
	RecordsKept       int64
	TombstonesKept    int64
	TombstonesDropped int64
	HorizonsStamped   int64
	MinPendingHorizon int64 // earliest delete horizon of a kept tombstone, MaxInt64 if none
	Duration          time.Duration
}

// worker holds one cleaner thread's reusable memory.
type worker struct {
	m      *offsetMap
	filler []byte
}

// lastRecord is what the cleaner keeps of a producer (Kafka's LastRecord):
// the last offset of its last data batch of its current epoch, or -1 when
// its last entry in the log is a transaction marker that moved it to a new
// epoch (then its markers of that epoch are kept: they carry the epoch
// that fences the producer's zombies).
type lastRecord struct {
	dataOffset int64
	epoch      int16
}

// producerLastBatches maps every producer id in the log to its lastRecord,
// as Kafka's producer state would give it (header scan: a batch or marker
// of a new epoch forgets the data batches of the old one). This is the seam
// for producer state: with a producer-state manager the active producers'
// entries would come from it (and expired producers' empty batches could
// then go, as in Kafka).
func producerLastBatches(l *log.Log, from int64) (map[int64]lastRecord, error) {
	last := map[int64]lastRecord{}
	err := l.ScanBatches(from, func(h batch.Header, _ log.BatchPosition) bool {
		if h.ProducerID < 0 {
			return true
		}
		r, ok := last[h.ProducerID]
		if !ok || r.epoch != h.ProducerEpoch {
			r = lastRecord{dataOffset: -1, epoch: h.ProducerEpoch}
		}
		if !h.IsControl() {
			r.dataOffset = h.LastOffset()
		}
		last[h.ProducerID] = r
		return true
	})
	return last, err
}

// buildMap fills w.m with the latest offset of every key in
// [v.firstDirty, v.firstUncleanable), stopping when the map is full. It
// returns the end of what the map covers (the next checkpoint).
func (w *worker) buildMap(v *logView, maxDecompressed int) (end int64, full bool, err error) {
	m := w.m
	m.reset()
	m.latest = v.firstDirty - 1
	txns := newCleanedTxns(v.l.AbortedTxns(v.firstDirty, v.firstUncleanable))
	for _, s := range v.segs[:len(v.segs)-1] {
		if s.NextOffset <= v.firstDirty {
			continue
		}
		if s.BaseOffset >= v.firstUncleanable || full {
			break
		}
		err = v.l.SegmentBatches(s.BaseOffset, func(b []byte) error {
			h, err := checkBatch(b)
			if err != nil {
				return err
			}
			if h.LastOffset() < v.firstDirty {
				return nil
			}
			if h.BaseOffset >= v.firstUncleanable {
				return errStop
			}
			if h.IsControl() {
				txns.discardMarker(&h, b) // moves the transaction state on
			} else if txns.aborted(&h) {
				// Aborted data never enters the map: it is dropped, and must
				// not shadow an earlier committed value of its keys.
			} else {
				data := b[batch.HeaderSize:]
				if c := h.Compression(); c != batch.None {
					if data, err = batch.Decompress(c, data, maxDecompressed); err != nil {
						return fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
					}
				}
				err = forEachRawRecord(data, h.RecordCount, func(r *rawRecord) error {
					off := h.BaseOffset + int64(r.offsetDelta)
					if r.key == nil || off < v.firstDirty || off >= v.firstUncleanable {
						return nil
					}
					if !m.put(r.key, off) {
						full = true
						return errStop
					}
					m.latest = off
					return nil
				})
				if full {
					return errStop
				}
				if err != nil {
					return fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
				}
			}
			m.latest = max(m.latest, min(h.LastOffset(), v.firstUncleanable-1))
			return nil
		})
		if errors.Is(err, errStop) {
			err = nil
		}
		if err != nil {
			return 0, false, err
		}
	}
	if full && m.entries == 0 {
		return 0, true, ErrDedupeBufferTooSmall
	}
	return m.latest + 1, full, nil
}

// groupSegments cuts the segments to clean into runs that each become one
// cleaned segment: at most segment.bytes of input (Kafka's rule) and an
// offset span a segment's 32-bit relative offsets can index.
func groupSegments(segs []log.SegmentInfo, maxBytes int64) [][]log.SegmentInfo {
	var groups [][]log.SegmentInfo
	for i := 0; i < len(segs); {
		g := []log.SegmentInfo{segs[i]}
		size := segs[i].Size
		j := i + 1
		for ; j < len(segs); j++ {
			if size+segs[j].Size > maxBytes || segs[j].NextOffset-1-segs[i].BaseOffset > math.MaxInt32 {
				break
			}
			size += segs[j].Size
			g = append(g, segs[j])
		}
		groups = append(groups, g)
		i = j
	}
	return groups
}

// clean runs one pass over v's log: map the dirty section, then rewrite
// every non-active segment below the map's end, group by group, each group
// swapped in atomically by the log.
func (c *Cleaner) clean(w *worker, v *logView) (PassResult, error) {
	start := time.Now()
	res := PassResult{Topic: v.tp.Topic, Partition: v.tp.Partition, FirstDirty: v.firstDirty, MinPendingHorizon: math.MaxInt64}
	lcfg := v.l.Config()
	maxDec := min(max(8*lcfg.MaxMessageBytes, 1<<20), 256<<20)

	if need := c.mapBytesPerThread(); w.m == nil || w.m.memBytes() != need {
		w.m = newOffsetMap(need, c.opts.LoadFactor)
	}
	end, full, err := w.buildMap(v, maxDec)
	if err != nil {
		return res, err
	}
	res.EndOffset, res.MapFull, res.Keys = end, full, w.m.entries

	last, err := producerLastBatches(v.l, v.logStart)
	if err != nil {
		return res, err
	}
	var todo []log.SegmentInfo
	for _, s := range v.segs[:len(v.segs)-1] {
		if s.BaseOffset < end {
			todo = append(todo, s)
		}
	}
	f := newFilter(w.m, v.now, v.cfg.DeleteRetentionMs, last, maxDec)
	if len(todo) > 0 {
		txns := newCleanedTxns(v.l.AbortedTxns(todo[0].BaseOffset, end))
		f.txn, f.txns = txns, txns
	}
	for _, g := range groupSegments(todo, lcfg.SegmentBytes) {
		n, err := c.cleanGroup(w, v.l, g, f)
		if err != nil {
			return res, err
		}
		res.SegmentsIn += len(g)
		res.SegmentsOut += n
	}
	st := f.stats
	res.BytesRead, res.BytesWritten = st.BytesRead, st.BytesWritten
	res.RecordsRead, res.RecordsKept = st.RecordsRead, st.RecordsKept
	res.TombstonesKept, res.TombstonesDropped = st.TombstonesKept, st.TombstonesDrop
	res.HorizonsStamped, res.MinPendingHorizon = st.HorizonsStamped, st.MinPendingHorizon
	res.Duration = time.Since(start)
	return res, nil
}

// cleanGroup writes the survivors of one group of segments into a new
// segment and has the log swap it in. It returns the number of segments
// written (1).
func (c *Cleaner) cleanGroup(w *worker, l *log.Log, g []log.SegmentInfo, f *filter) (int, error) {
	sw, err := l.NewSegmentWriter(g[0].BaseOffset)
	if err != nil {
		return 0, err
	}
	ok := false
	defer func() {
		if !ok {
			sw.Abort()
		}
	}()
	lastOut, lastEpoch := int64(-1), int32(-1)
	bases := make([]int64, len(g))
	for i, s := range g {
		bases[i] = s.BaseOffset
		err := l.SegmentBatches(s.BaseOffset, func(b []byte) error {
			out, err := f.filterBatch(b)
			if err != nil || out == nil {
				return err
			}
			h, _ := batch.ParseHeader(out)
			lastOut, lastEpoch = h.LastOffset(), h.PartitionLeaderEpoch
			return sw.Append(out)
		})
		if err != nil {
			if segmentsChanged(l, g) {
				return 0, errLogChanged
			}
			return 0, fmt.Errorf("segment %d: %w", s.BaseOffset, err)
		}
	}
	// The new segment always reaches the group's last offset. When
	// compaction removed the group's trailing batches, an empty batch (no
	// records, no producer) carries the offset range to the end. Two
	// reasons: the log's crash recovery completes a half-done swap by
	// replacing the old segments whose base offsets the new segment's
	// offsets reach, so a shorter segment would leave old segments beside
	// it; and a consumer fetching at a removed offset must get a batch that
	// moves it on, even when nothing follows yet (in Kafka it would wait
	// for the next append, its lag stuck above zero). Clients skip empty
	// batches, as they do for a producer's emptied last batch.
	lastSeg := g[len(g)-1]
	if to := lastSeg.NextOffset - 1; lastOut < to {
		from := max(lastOut+1, g[0].BaseOffset)
		w.filler = appendEmptyBatch(w.filler[:0], from, int32(to-from), lastEpoch, 0, -1, -1, -1, -1)
		if err := sw.Append(w.filler); err != nil {
			return 0, err
		}
		f.stats.BatchesWritten++
		f.stats.BytesWritten += int64(len(w.filler))
	}
	if f.txns != nil {
		// The aborted transactions whose markers this group kept, with
		// data still before them.
		if err := sw.SetAbortedTxns(f.txns.takeKept()); err != nil {
			return 0, err
		}
	}
	if err := l.ReplaceSegments(bases, []*log.SegmentWriter{sw}); err != nil {
		if segmentsChanged(l, g) {
			return 0, errLogChanged
		}
		return 0, err
	}
	ok = true
	return 1, nil
}

// segmentsChanged reports whether the log no longer holds the group's
// segments as they were (retention, truncation or deletion got there).
func segmentsChanged(l *log.Log, g []log.SegmentInfo) bool {
	cur := l.Segments()
	i := 0
	for i < len(cur) && cur[i].BaseOffset < g[0].BaseOffset {
		i++
	}
	if i+len(g) >= len(cur) {
		return true
	}
	for k, s := range g {
		c := cur[i+k]
		if c.BaseOffset != s.BaseOffset || c.NextOffset != s.NextOffset || c.Size != s.Size {
			return true
		}
	}
	return false
}

// isAbandon reports an error that abandons a pass without counting as a
// failure.
func isAbandon(err error) bool {
	return errors.Is(err, errLogChanged) || errors.Is(err, log.ErrClosed)
}
