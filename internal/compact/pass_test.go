package compact

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

// The seed walkthrough: two versions of user-42 and a tombstone for user-7,
// then nothing. With segment.ms low the idle active segment is rolled by the
// cleaner, cleaned (offset 0 gone, no renumbering, tombstone kept with a
// delete horizon) and, after delete.retention.ms and another pass, the
// tombstone is gone too.
func TestSeedWalkthrough(t *testing.T) {
	for _, producer := range []bool{false, true} {
		t.Run(fmt.Sprintf("idempotent=%v", producer), func(t *testing.T) {
			e := newEnv(t)
			e.cfg.SegmentMs = 100
			e.tcfg.DeleteRetentionMs = 1000
			l := e.log("user-profiles")
			b := batch.NewBuilder()
			b.BaseTimestamp = e.clock.Now().UnixMilli()
			if producer {
				b.ProducerID, b.ProducerEpoch, b.BaseSequence = 7, 0, 0
			}
			b.AddAt(b.BaseTimestamp, []byte("user-42"), []byte("v1"))
			b.AddAt(b.BaseTimestamp, []byte("user-42"), []byte("v2"))
			b.AddAt(b.BaseTimestamp+1, []byte("user-7"), nil)
			raw, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			e.append(l, raw)

			// Nothing to do yet: all data in the active segment, too young.
			if _, did := mustRun(t, e.c); did {
				t.Fatal("cleaned before the active segment was due to roll")
			}
			st := e.c.Status("user-profiles").Partitions[0]
			if st.Reason != ReasonActiveSegment {
				t.Fatalf("reason %q (%s), want %q", st.Reason, st.Detail, ReasonActiveSegment)
			}

			e.clock.Advance(200 * time.Millisecond)
			res, did := mustRun(t, e.c)
			if !did {
				t.Fatal("idle partition not rolled and cleaned")
			}
			if res.EndOffset != 3 || res.RecordsRead != 3 || res.RecordsKept != 2 || res.TombstonesKept != 1 || res.HorizonsStamped != 1 {
				t.Fatalf("pass result %+v", res)
			}
			recs, hdrs := readAll(t, l, 0)
			if len(recs) != 2 || recs[0].off != 1 || recs[0].key != "user-42" || *recs[0].value != "v2" ||
				recs[1].off != 2 || recs[1].key != "user-7" || recs[1].value != nil {
				t.Fatalf("after first pass: %+v", recs)
			}
			if recs[1].ts != b.BaseTimestamp+1 || recs[0].ts != b.BaseTimestamp {
				t.Fatalf("timestamps changed: %d %d", recs[0].ts, recs[1].ts)
			}
			h := hdrs[0]
			wantHorizon := e.clock.Now().UnixMilli() + 1000
			if !h.HasDeleteHorizon() || h.BaseTimestamp != wantHorizon {
				t.Fatalf("delete horizon: bit %v base ts %d, want %d", h.HasDeleteHorizon(), h.BaseTimestamp, wantHorizon)
			}
			if h.BaseOffset != 0 || h.LastOffset() != 2 {
				t.Fatalf("batch offset range changed: [%d, %d]", h.BaseOffset, h.LastOffset())
			}
			if producer && (h.ProducerID != 7 || h.ProducerEpoch != 0 || h.BaseSequence != 0) {
				t.Fatalf("producer fields lost: %+v", h)
			}
			if l.LogStartOffset() != 0 {
				t.Fatalf("log start moved to %d", l.LogStartOffset())
			}
			st = e.c.Status("user-profiles").Partitions[0]
			if st.TombstonesPending != 1 || st.NextHorizonMs != wantHorizon || st.Checkpoint != 3 {
				t.Fatalf("status after pass: %+v", st)
			}

			// Before the horizon a pass must keep the tombstone; no pass is
			// even due.
			e.clock.Advance(500 * time.Millisecond)
			if _, did := mustRun(t, e.c); did {
				t.Fatal("pass ran before the horizon with nothing dirty")
			}
			e.clock.Advance(600 * time.Millisecond)
			res, did = mustRun(t, e.c)
			if !did || res.TombstonesDropped != 1 {
				t.Fatalf("horizon pass: did=%v %+v", did, res)
			}
			recs, _ = readAll(t, l, 0)
			if len(recs) != 1 || recs[0].off != 1 || *recs[0].value != "v2" {
				t.Fatalf("after horizon pass: %+v", recs)
			}
			// A fetch at a removed offset returns the next survivor, no error.
			recs, _ = readAll(t, l, 0)
			if recs[0].off != 1 {
				t.Fatalf("fetch at 0 starts at %d", recs[0].off)
			}
			if l.LogEndOffset() != 3 {
				t.Fatalf("LEO %d", l.LogEndOffset())
			}
			e.close()
		})
	}
}

func TestCompressedBatchesKeepCodecAndHeaders(t *testing.T) {
	for _, codec := range []batch.Compression{batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd} {
		t.Run(codec.String(), func(t *testing.T) {
			e := newEnv(t)
			l := e.log("c")
			ts := e.clock.Now().UnixMilli()
			for round := 0; round < 3; round++ {
				b := batch.NewBuilder()
				b.Compression = codec
				b.BaseTimestamp = ts + int64(round)
				for k := 0; k < 5; k++ {
					b.AddAt(b.BaseTimestamp+int64(k), []byte(fmt.Sprintf("k%d", k)), []byte(fmt.Sprintf("v%d-%d", k, round)),
						batch.RecordHeader{Key: "h", Value: []byte(fmt.Sprintf("%d", round))})
				}
				raw, _ := b.Build()
				e.append(l, raw)
			}
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			if _, did := mustRun(t, e.c); !did {
				t.Fatal("no pass")
			}
			recs, hdrs := readAll(t, l, 0)
			if len(recs) != 5 {
				t.Fatalf("%d records survive, want 5", len(recs))
			}
			for k, r := range recs {
				if r.off != int64(10+k) || *r.value != fmt.Sprintf("v%d-2", k) || r.ts != ts+2+int64(k) ||
					len(r.headers) != 1 || string(r.headers[0].Value) != "2" {
					t.Fatalf("record %d: %+v", k, r)
				}
			}
			for _, h := range hdrs {
				if h.RecordCount > 0 && h.Compression() != codec {
					t.Fatalf("codec %s, want %s", h.Compression(), codec)
				}
			}
		})
	}
}

// A producer's last batch stays (empty) when compaction removes all its
// records, keeping its offsets, producer id, epoch and sequence.
func TestLastBatchOfProducerKeptEmpty(t *testing.T) {
	e := newEnv(t)
	l := e.log("p")
	ts := e.clock.Now().UnixMilli()
	b := batch.NewBuilder()
	b.BaseTimestamp, b.ProducerID, b.ProducerEpoch, b.BaseSequence = ts, 42, 3, 10
	b.AddAt(ts, []byte("a"), []byte("1"))
	b.AddAt(ts, []byte("b"), []byte("1"))
	raw, _ := b.Build()
	e.append(l, raw) // offsets 0-1, producer 42's last batch
	e.append(l, batch.NewBatch(0, ts, kv("a", "2"), kv("b", "2")))
	e.append(l, batch.NewBatch(0, ts, kv("c", "1")))
	l.Roll()
	if _, did := mustRun(t, e.c); !did {
		t.Fatal("no pass")
	}
	recs, hdrs := readAll(t, l, 0)
	if len(recs) != 3 || recs[0].off != 2 {
		t.Fatalf("records %+v", recs)
	}
	h := hdrs[0]
	if h.RecordCount != 0 || h.BaseOffset != 0 || h.LastOffset() != 1 || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != 10 {
		t.Fatalf("producer's last batch: %+v", h)
	}
}

// Dedupe map full: each pass cleans what fits and the next pass goes on;
// the end result is the same.
func TestMapFullCleansInSeveralPasses(t *testing.T) {
	e := newEnv(t)
	e.dedup = slotSize * 12 // 10 keys per pass at load factor 0.9
	e.open()
	e.cfg.SegmentBytes = 1 << 20
	l := e.log("m")
	ts := e.clock.Now().UnixMilli()
	for round := 0; round < 4; round++ {
		for k := 0; k < 35; k++ {
			e.append(l, batch.NewBatch(0, ts, kv(fmt.Sprintf("k%02d", k), fmt.Sprintf("%d", round))))
		}
		l.Roll()
	}
	passes := 0
	for {
		res, did := mustRun(t, e.c)
		if !did {
			break
		}
		passes++
		if passes > 50 {
			t.Fatal("passes never end")
		}
		if res.Keys > e.c.sync0.m.maxEntries {
			t.Fatalf("map holds %d keys, max %d", res.Keys, e.c.sync0.m.maxEntries)
		}
	}
	if passes < 2 {
		t.Fatalf("only %d passes with a 10-key map", passes)
	}
	// Clean whatever is left (ratio may have stopped the rounds).
	for i := 0; i < 20 && e.c.Checkpoint("m", 0) < l.Segments()[len(l.Segments())-1].BaseOffset; i++ {
		if _, err := e.c.CleanNow("m", 0); err != nil {
			t.Fatal(err)
		}
	}
	recs, _ := readAll(t, l, 0)
	if len(recs) != 35 {
		t.Fatalf("%d records, want 35", len(recs))
	}
	for k, r := range recs {
		if r.key != fmt.Sprintf("k%02d", k) || *r.value != "3" {
			t.Fatalf("record %d: %+v", k, r)
		}
	}
}

func TestDedupeBufferTooSmallFailsAndRetriesWithBackoff(t *testing.T) {
	e := newEnv(t)
	e.dedup = 1
	e.open()
	l := e.log("small")
	ts := e.clock.Now().UnixMilli()
	e.append(l, batch.NewBatch(0, ts, kv("a", "1"), kv("a", "2")))
	l.Roll()
	_, did, err := e.c.RunOnce()
	if !did || err == nil {
		t.Fatalf("want a failed pass, got did=%v err=%v", did, err)
	}
	st := e.c.Status("small").Partitions[0]
	if st.Reason != ReasonError || st.ConsecutiveFailures != 1 || st.RetryAtMs != e.clock.Now().UnixMilli()+1000 {
		t.Fatalf("status after failure: %+v", st)
	}
	if _, did, _ := e.c.RunOnce(); did {
		t.Fatal("retried before the backoff")
	}
	e.clock.Advance(1001 * time.Millisecond)
	if _, did, err := e.c.RunOnce(); !did || err == nil {
		t.Fatal("not retried after the backoff")
	}
	st = e.c.Status("small").Partitions[0]
	if st.ConsecutiveFailures != 2 || st.RetryAtMs != e.clock.Now().UnixMilli()+2000 {
		t.Fatalf("backoff did not double: %+v", st)
	}
}

func TestCorruptSegmentFailsPassNotData(t *testing.T) {
	e := newEnv(t)
	l := e.log("bad")
	ts := e.clock.Now().UnixMilli()
	e.append(l, batch.NewBatch(0, ts, kv("a", "1"), kv("a", "2")))
	l.Roll()
	seg := fmt.Sprintf("/data/bad-0/%020d.log", 0)
	if err := e.fs.FlipByte(seg, 70, 0xff); err != nil {
		t.Fatal(err)
	}
	_, did, err := e.c.RunOnce()
	if !did || err == nil {
		t.Fatalf("corrupt batch cleaned: did=%v err=%v", did, err)
	}
	if l.Segments()[0].Size == 0 {
		t.Fatal("segment lost")
	}
}

// Keyless records (from before the topic became compacted) are removed;
// records of a topic switched to compact live are compacted.
func TestKeylessRecordsDropped(t *testing.T) {
	e := newEnv(t)
	cfg := e.cfg
	cfg.Compact = false
	l, err := e.m.Open("switch", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := e.clock.Now().UnixMilli()
	e.append(l, batch.NewBatch(0, ts, batch.KV{Value: []byte("no key")}, kv("k", "1"), kv("k", "2")))
	l.Roll()
	if _, did := mustRun(t, e.c); did {
		t.Fatal("cleaned a delete-policy topic")
	}
	cfg.Compact = true
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if _, did := mustRun(t, e.c); !did {
		t.Fatal("switched topic not cleaned")
	}
	recs, _ := readAll(t, l, 0)
	if len(recs) != 1 || recs[0].off != 2 {
		t.Fatalf("records %+v", recs)
	}
	if _, err := l.Append(batch.NewBatch(0, ts, batch.KV{Value: []byte("x")}), log.AppendOptions{}); err == nil {
		t.Fatal("keyless record accepted by a compacted topic")
	}
}

// min.compaction.lag.ms keeps young segments dirty; max.compaction.lag.ms
// forces a pass below the dirty ratio.
func TestCompactionLags(t *testing.T) {
	e := newEnv(t)
	e.tcfg.MinCompactionLagMs = 10_000
	l := e.log("lag")
	ts := e.clock.Now().UnixMilli()
	e.append(l, batch.NewBatch(0, ts, kv("a", "1"), kv("a", "2")))
	l.Roll()
	if _, did := mustRun(t, e.c); did {
		t.Fatal("cleaned data younger than min.compaction.lag.ms")
	}
	if st := e.c.Status("lag").Partitions[0]; st.Reason != ReasonMinLag {
		t.Fatalf("reason %q", st.Reason)
	}
	e.clock.Advance(11 * time.Second)
	if _, did := mustRun(t, e.c); !did {
		t.Fatal("not cleaned after min.compaction.lag.ms")
	}

	// Ratio below threshold: a big clean section, a small dirty one.
	e.tcfg = DefaultTopicConfig()
	e.tcfg.MinCleanableDirtyRatio = 0.9
	ts = e.clock.Now().UnixMilli()
	e.append(l, batch.NewBatch(0, ts, kv("a", "3")))
	l.Roll()
	if _, did := mustRun(t, e.c); did {
		t.Fatal("cleaned below the dirty ratio")
	}
	if st := e.c.Status("lag").Partitions[0]; st.Reason != ReasonRatio {
		t.Fatalf("reason %q (%s)", st.Reason, st.Detail)
	}
	e.tcfg.MaxCompactionLagMs = 5000
	e.clock.Advance(6 * time.Second)
	if _, did := mustRun(t, e.c); !did {
		t.Fatal("max.compaction.lag.ms did not force a pass")
	}
	recs, _ := readAll(t, l, 0)
	if len(recs) != 1 || *recs[0].value != "3" {
		t.Fatalf("records %+v", recs)
	}
}

// max.compaction.lag.ms also rolls an idle active segment (by the age of
// its first batch), even with segment.ms at its default.
func TestIdleRollByMaxCompactionLag(t *testing.T) {
	e := newEnv(t)
	e.tcfg.MaxCompactionLagMs = 60_000
	l := e.log("idle")
	e.append(l, batch.NewBatch(0, e.clock.Now().UnixMilli(), kv("a", "1"), kv("a", "2")))
	e.clock.Advance(61 * time.Second)
	if _, did := mustRun(t, e.c); !did {
		t.Fatal("idle partition not compacted")
	}
	if recs, _ := readAll(t, l, 0); len(recs) != 1 {
		t.Fatalf("records %+v", recs)
	}
}

func TestCheckpointFile(t *testing.T) {
	e := newEnv(t)
	l := e.log("cp")
	ts := e.clock.Now().UnixMilli()
	e.append(l, batch.NewBatch(0, ts, kv("a", "1"), kv("a", "2")))
	l.Roll()
	mustRun(t, e.c)
	data, err := e.fs.ReadFile("/data/" + CheckpointFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "0\n1\ncp 0 2\n" {
		t.Fatalf("checkpoint file %q", data)
	}
	e.close()
	e.open()
	if got := e.c.Checkpoint("cp", 0); got != 2 {
		t.Fatalf("checkpoint after restart %d", got)
	}
	if _, err := parseCheckpoint([]byte("0\n2\nx 0 1\n")); err == nil {
		t.Fatal("bad count accepted")
	}
	if _, err := parseCheckpoint([]byte("1\n0\n")); err == nil {
		t.Fatal("bad version accepted")
	}
	if m, err := parseCheckpoint(formatCheckpoint(map[log.TopicPartition]int64{{Topic: "a", Partition: 3}: 9})); err != nil || m[log.TopicPartition{Topic: "a", Partition: 3}] != 9 {
		t.Fatalf("round trip: %v %v", m, err)
	}
}

// Horizons found again after a restart: the tombstone still goes on time.
func TestHorizonSurvivesRestart(t *testing.T) {
	e := newEnv(t)
	e.tcfg.DeleteRetentionMs = 1000
	l := e.log("h")
	ts := e.clock.Now().UnixMilli()
	e.append(l, batch.NewBatch(0, ts, kv("a", "1"), kv("b", tomb)))
	l.Roll()
	mustRun(t, e.c)
	e.close()
	e.open()
	st := e.c.Status("h").Partitions[0]
	if st.TombstonesPending != 1 || st.NextHorizonMs != ts+1000 {
		t.Fatalf("after restart: %+v", st)
	}
	e.clock.Advance(2 * time.Second)
	if _, did := mustRun(t, e.c); !did {
		t.Fatal("no horizon pass after restart")
	}
	l = e.m.Get("h", 0)
	if recs, _ := readAll(t, l, 0); len(recs) != 1 || recs[0].key != "a" {
		t.Fatalf("records %+v", recs)
	}
	if st := e.c.Status("h").Partitions[0]; st.TombstonesPending != 0 || st.NextHorizonMs != 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestEmptyBatchIsValid(t *testing.T) {
	h := batch.Header{BaseOffset: 5, LastOffsetDelta: 3, PartitionLeaderEpoch: 2, ProducerID: 9, ProducerEpoch: 1, BaseSequence: 4, MaxTimestamp: 77, Attributes: batch.AttrTransactional}
	b := emptyBatch(nil, &h)
	if err := batch.Validate(b, batch.ValidateOptions{FromLog: true, CheckRecords: true}); err != nil {
		t.Fatal(err)
	}
	got, _ := batch.ParseHeader(b)
	if got.LastOffset() != 8 || got.RecordCount != 0 || got.ProducerID != 9 || !got.IsTransactional() || got.MaxTimestamp != 77 {
		t.Fatalf("%+v", got)
	}
}

// compact,delete: retention deletes whole old segments, the cleaner
// compacts the rest, and the two racing never fails a pass.
func TestCompactDelete(t *testing.T) {
	e := newEnv(t)
	e.cfg.DeleteRetention = true
	e.cfg.RetentionMs = 10_000
	l := e.log("cd")
	ts := e.clock.Now().UnixMilli()
	e.append(l, batch.NewBatch(0, ts, kv("old", "1"), kv("a", "1")))
	l.Roll()
	e.clock.Advance(20 * time.Second)
	ts = e.clock.Now().UnixMilli()
	e.append(l, batch.NewBatch(0, ts, kv("a", "2"), kv("a", "3")))
	l.Roll()
	e.m.RunHousekeeping() // retention: the first segment is older than retention.ms
	if l.LogStartOffset() != 2 {
		t.Fatalf("retention did not run: log start %d", l.LogStartOffset())
	}
	if _, did := mustRun(t, e.c); !did {
		t.Fatal("no pass")
	}
	recs, _ := readAll(t, l, l.LogStartOffset())
	if len(recs) != 1 || recs[0].off != 3 || *recs[0].value != "3" {
		t.Fatalf("records %+v", recs)
	}
	if l.LogStartOffset() != 2 {
		t.Fatalf("compaction moved the log start to %d", l.LogStartOffset())
	}
}
