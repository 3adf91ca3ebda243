package log

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path"
	"slices"
	"sort"
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// followerCfg rolls often and indexes densely, so that a few hundred
// appends cross many segments and index entries.
func followerCfg() Config {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 8 << 10
	cfg.IndexIntervalBytes = 600
	return cfg
}

// codecBatch is a batch of n records compressed with c, with timestamps
// from ts on.
func codecBatch(t testing.TB, c batch.Compression, n int, ts int64) []byte {
	t.Helper()
	b := batch.NewBuilder()
	b.Compression = c
	b.BaseTimestamp = ts
	for i := 0; i < n; i++ {
		b.AddAt(ts+int64(i), fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte{byte('a' + i%26)}, 40+i))
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// producerBatch is an idempotent (or transactional) batch of n records.
func producerBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, txn bool, c batch.Compression, ts int64) []byte {
	t.Helper()
	b := batch.NewBuilder()
	b.Compression = c
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, seq
	if txn {
		b.Attributes = batch.AttrTransactional
	}
	b.BaseTimestamp = ts
	for i := 0; i < n; i++ {
		b.AddAt(ts, fmt.Appendf(nil, "p%d-%d", pid, i), bytes.Repeat([]byte("v"), 30))
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// leaderStep is one leader append: what went in, with which options.
type leaderStep struct {
	records []byte
	opts    AppendOptions
}

// leaderWorkload is a reproducible mix of appends: plain and compressed
// batches of every codec, idempotent producers, two transactional
// producers ending their transactions with commit and abort markers,
// several batches in one append, and a leader epoch that grows now and
// then (by more than one, as after elections elsewhere).
func leaderWorkload(t testing.TB, seed uint64, steps int) []leaderStep {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	codecs := []batch.Compression{batch.None, batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd}
	epoch := int32(0)
	ts := int64(1_700_000_000_000)
	seq := map[int64]int32{}
	inTxn := map[int64]bool{}
	var out []leaderStep
	for i := 0; i < steps; i++ {
		if r.IntN(25) == 0 {
			epoch += 1 + int32(r.IntN(3))
		}
		ts += int64(r.IntN(50))
		opts := AppendOptions{LeaderEpoch: epoch}
		var recs []byte
		switch k := r.IntN(10); {
		case k < 3:
			recs = mkBatch(t, 1+r.IntN(6), 20+r.IntN(300), ts)
		case k < 5:
			recs = codecBatch(t, codecs[r.IntN(len(codecs))], 1+r.IntN(12), ts)
		case k < 6:
			// Several batches in one append.
			for j := 0; j < 2+r.IntN(3); j++ {
				recs = append(recs, codecBatch(t, codecs[r.IntN(len(codecs))], 1+r.IntN(4), ts+int64(j))...)
			}
		case k < 8:
			pid := int64(1 + r.IntN(3))
			n := 1 + r.IntN(5)
			recs = producerBatch(t, pid, 0, seq[pid], n, false, codecs[r.IntN(len(codecs))], ts)
			seq[pid] += int32(n)
		default:
			pid := int64(10 + r.IntN(2))
			if inTxn[pid] && r.IntN(3) == 0 {
				typ := batch.ControlCommit
				if r.IntN(2) == 0 {
					typ = batch.ControlAbort
				}
				recs = batch.NewMarkerBatch(batch.Marker{ProducerID: pid, ProducerEpoch: 0, Type: typ, Timestamp: ts})
				opts.AllowControl = true
				inTxn[pid] = false
			} else {
				n := 1 + r.IntN(4)
				recs = producerBatch(t, pid, 0, seq[pid], n, true, codecs[r.IntN(len(codecs))], ts)
				seq[pid] += int32(n)
				inTxn[pid] = true
			}
		}
		out = append(out, leaderStep{recs, opts})
	}
	return out
}

// runLeader appends the workload to l and returns each append's result.
func runLeader(t testing.TB, l *Log, steps []leaderStep) []AppendResult {
	t.Helper()
	var res []AppendResult
	for i, s := range steps {
		r, err := l.Append(append([]byte(nil), s.records...), s.opts)
		if err != nil {
			t.Fatalf("leader append %d: %v", i, err)
		}
		res = append(res, r)
	}
	return res
}

// batchesIn returns the stored bytes of the batches of l whose base offset
// lies in [from, to), as a follower's fetch would get them.
func batchesIn(t testing.TB, l *Log, from, to int64) []byte {
	t.Helper()
	data, err := l.ReadBytes(from, math.MaxInt32)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for n < len(data) {
		h, err := batch.ParseHeader(data[n:])
		if err != nil {
			t.Fatal(err)
		}
		if h.BaseOffset >= to {
			break
		}
		n += h.TotalSize()
	}
	return data[:n]
}

// splitBatches cuts records into whole batches.
func splitBatches(t testing.TB, records []byte) [][]byte {
	t.Helper()
	bs, err := batch.Split(records)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

func followerAppend(t testing.TB, l *Log, records []byte) FollowerAppendResult {
	t.Helper()
	in := append([]byte(nil), records...)
	r, err := l.AppendAsFollower(in, FollowerAppendOptions{})
	if err != nil {
		t.Fatalf("AppendAsFollower: %v", err)
	}
	if !bytes.Equal(in, records) {
		t.Fatal("AppendAsFollower modified its input")
	}
	return r
}

// partitionFiles returns every file of the partition directory t-0.
func partitionFiles(t testing.TB, fs *vfs.MemFS) map[string][]byte {
	t.Helper()
	dir := "/data/t-0"
	ents, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		b, err := fs.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func sameFiles(t testing.TB, what string, want, got map[string][]byte) {
	t.Helper()
	var names []string
	for n := range want {
		names = append(names, n)
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		w, okw := want[n]
		g, okg := got[n]
		switch {
		case !okw:
			t.Errorf("%s: follower has %s, the leader not", what, n)
		case !okg:
			t.Errorf("%s: follower lacks %s", what, n)
		case !bytes.Equal(w, g):
			t.Errorf("%s: %s differs (leader %d bytes, follower %d)", what, n, len(w), len(g))
		}
	}
}

func allBytes(t testing.TB, l *Log) []byte {
	t.Helper()
	b, err := l.ReadBytes(l.LogStartOffset(), math.MaxInt32)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func epochEntries(l *Log) []epochEntry {
	l.epochs.mu.RLock()
	defer l.epochs.mu.RUnlock()
	return slices.Clone(l.epochs.entries)
}

// A follower appending each of the leader's appends as it was written ends
// with the leader's files byte for byte: segments (the same rolls), offset
// and time indexes, leader-epoch-checkpoint.
func TestFollowerByteIdenticalToLeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func() Config
	}{
		{"create-time", followerCfg},
		{"log-append-time", func() Config {
			c := followerCfg()
			c.MessageTimestampType = batch.LogAppendTime
			return c
		}},
		{"recompressed-by-leader", func() Config {
			c := followerCfg()
			c.Compression = batch.Zstd
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			le, fe := newEnv(t, tc.cfg()), newEnv(t, tc.cfg())
			leader, follower := le.log(), fe.log()
			steps := leaderWorkload(t, 7, 300)
			for i, s := range steps {
				r, err := leader.Append(append([]byte(nil), s.records...), s.opts)
				if err != nil {
					t.Fatalf("leader append %d: %v", i, err)
				}
				fr := followerAppend(t, follower, batchesIn(t, leader, r.BaseOffset, r.LastOffset+1))
				if fr.FirstOffset != r.BaseOffset || fr.LastOffset != r.LastOffset {
					t.Fatalf("append %d: follower at [%d, %d], leader [%d, %d]", i, fr.FirstOffset, fr.LastOffset, r.BaseOffset, r.LastOffset)
				}
				if follower.LogEndOffset() != leader.LogEndOffset() {
					t.Fatalf("append %d: follower end %d, leader %d", i, follower.LogEndOffset(), leader.LogEndOffset())
				}
			}
			if n := len(leader.Segments()); n < 5 {
				t.Fatalf("only %d segments: the test should cross rolls", n)
			}
			if got, want := follower.Segments(), leader.Segments(); len(got) != len(want) {
				t.Fatalf("follower has %d segments, leader %d", len(got), len(want))
			}
			if !slices.Equal(epochEntries(follower), epochEntries(leader)) || len(epochEntries(leader)) < 3 {
				t.Fatalf("epochs: follower %v, leader %v", epochEntries(follower), epochEntries(leader))
			}
			if !bytes.Equal(allBytes(t, follower), allBytes(t, leader)) {
				t.Fatal("follower's batches differ from the leader's")
			}
			if err := le.m.Close(); err != nil {
				t.Fatal(err)
			}
			if err := fe.m.Close(); err != nil {
				t.Fatal(err)
			}
			sameFiles(t, "after close", partitionFiles(t, le.fs), partitionFiles(t, fe.fs))
		})
	}
}

// Fetched in chunks that do not match the leader's appends, the follower
// still holds the leader's batches byte for byte, the same leader-epoch
// cache, and answers OffsetForLeaderEpoch as the leader does.
func TestFollowerChunkedFetches(t *testing.T) {
	le := newEnv(t, followerCfg())
	leader := le.log()
	runLeader(t, leader, leaderWorkload(t, 11, 300))
	want := allBytes(t, leader)
	for seed := uint64(0); seed < 4; seed++ {
		fe := newEnv(t, followerCfg())
		follower := fe.log()
		r := rand.New(rand.NewPCG(seed, 2))
		bs := splitBatches(t, want)
		for len(bs) > 0 {
			n := min(len(bs), 1+r.IntN(12))
			var chunk []byte
			for _, b := range bs[:n] {
				chunk = append(chunk, b...)
			}
			if int64(len(chunk)) > followerCfg().SegmentBytes {
				n = 1
				chunk = bs[0]
			}
			followerAppend(t, follower, chunk)
			bs = bs[n:]
		}
		if !bytes.Equal(allBytes(t, follower), want) {
			t.Fatalf("seed %d: follower's batches differ", seed)
		}
		if !slices.Equal(epochEntries(follower), epochEntries(leader)) {
			t.Fatalf("seed %d: epochs: follower %v, leader %v", seed, epochEntries(follower), epochEntries(leader))
		}
		for e := int32(-1); e <= leader.LatestEpoch()+1; e++ {
			fe1, fo := follower.EndOffsetForLeaderEpoch(e)
			le1, lo := leader.EndOffsetForLeaderEpoch(e)
			if fe1 != le1 || fo != lo {
				t.Fatalf("seed %d: EndOffsetForLeaderEpoch(%d): follower (%d, %d), leader (%d, %d)", seed, e, fe1, fo, le1, lo)
			}
		}
		ckpt := func(fs *vfs.MemFS) []byte {
			b, err := fs.ReadFile("/data/t-0/" + leaderEpochFile)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		if !bytes.Equal(ckpt(fe.fs), ckpt(le.fs)) {
			t.Fatalf("seed %d: leader-epoch-checkpoint differs:\n%s\nvs\n%s", seed, ckpt(fe.fs), ckpt(le.fs))
		}
	}
}

// logState is what a refused append must leave as it was.
type logState struct {
	leo, size int64
	epochs    []epochEntry
	files     map[string][]byte
}

func stateOf(t testing.TB, e *env, l *Log) logState {
	t.Helper()
	return logState{leo: l.LogEndOffset(), size: l.Size(), epochs: epochEntries(l), files: partitionFiles(t, e.fs)}
}

func unchanged(t testing.TB, what string, before logState, e *env, l *Log) {
	t.Helper()
	after := stateOf(t, e, l)
	if after.leo != before.leo || after.size != before.size || !slices.Equal(after.epochs, before.epochs) {
		t.Fatalf("%s: changed the log: end %d→%d, size %d→%d, epochs %v→%v", what,
			before.leo, after.leo, before.size, after.size, before.epochs, after.epochs)
	}
	sameFiles(t, what, before.files, after.files)
}

// leaderLog returns a leader holding a few appends (epochs 1 and 2) and
// its batches.
func leaderLog(t testing.TB, cfg Config) (*Log, [][]byte) {
	t.Helper()
	l := newEnv(t, cfg).log()
	for i := 0; i < 8; i++ {
		epoch := int32(1)
		if i >= 5 {
			epoch = 2
		}
		if _, err := l.Append(mkBatch(t, 1+i%3, 50, int64(1000+i)), AppendOptions{LeaderEpoch: epoch}); err != nil {
			t.Fatal(err)
		}
	}
	return l, splitBatches(t, allBytes(t, l))
}

func wantAppendErr(t testing.TB, what string, err error, code int16, sentinel error) {
	t.Helper()
	var ae *AppendError
	if !errors.As(err, &ae) || ae.Code != code {
		t.Fatalf("%s: got %v, want an *AppendError with code %d", what, err, code)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Fatalf("%s: %v is not %v", what, err, sentinel)
	}
	if KafkaCode(err) != code {
		t.Fatalf("%s: KafkaCode %d, want %d", what, KafkaCode(err), code)
	}
}

// A follower append must start at the log end offset: a gap or an overlap
// is refused and changes nothing; so are offsets inside the append that go
// back or leave a gap, and epochs that go back.
func TestFollowerRefusesOffsetsThatDoNotContinue(t *testing.T) {
	_, bs := leaderLog(t, followerCfg())
	e := newEnv(t, followerCfg())
	f := e.log()
	followerAppend(t, f, slices.Concat(bs[:3]...))
	before := stateOf(t, e, f)

	cases := []struct {
		name     string
		records  []byte
		code     int16
		sentinel error
	}{
		{"gap at the start", bs[4], CodeOffsetOutOfRange, ErrUnexpectedAppendOffset},
		{"overlap at the start", bs[2], CodeOffsetOutOfRange, ErrUnexpectedAppendOffset},
		{"overlap of several", slices.Concat(bs[1:5]...), CodeOffsetOutOfRange, ErrUnexpectedAppendOffset},
		{"from the very beginning", slices.Concat(bs...), CodeOffsetOutOfRange, ErrUnexpectedAppendOffset},
		{"gap inside", slices.Concat(bs[3], bs[5]), CodeInvalidRecord, ErrOffsetsOutOfOrder},
		{"going back inside", slices.Concat(bs[3], bs[4], bs[4]), CodeInvalidRecord, ErrOffsetsOutOfOrder},
		{"reordered", slices.Concat(bs[3], bs[5], bs[4]), CodeInvalidRecord, ErrOffsetsOutOfOrder},
	}
	for _, c := range cases {
		_, err := f.AppendAsFollower(append([]byte(nil), c.records...), FollowerAppendOptions{})
		wantAppendErr(t, c.name, err, c.code, c.sentinel)
		unchanged(t, c.name, before, e, f)
	}

	// Epochs (bs[0:5] are epoch 1, bs[5:] epoch 2): a batch claiming an
	// older epoch than the one before it is refused, and so is an append
	// older than the leader-epoch cache's latest.
	back := slices.Concat(bs[3], bs[4])
	batch.SetPartitionLeaderEpoch(back[len(bs[3]):], 0)
	_, err := f.AppendAsFollower(back, FollowerAppendOptions{})
	wantAppendErr(t, "epoch going back inside", err, CodeInvalidRecord, ErrLeaderEpochOutOfOrder)
	unchanged(t, "epoch going back inside", before, e, f)

	followerAppend(t, f, slices.Concat(bs[3:6]...)) // reaches epoch 2
	before = stateOf(t, e, f)
	old := slices.Clone(bs[6])
	batch.SetPartitionLeaderEpoch(old, 1)
	_, err = f.AppendAsFollower(old, FollowerAppendOptions{})
	wantAppendErr(t, "epoch older than the cache's", err, CodeInvalidRecord, ErrLeaderEpochOutOfOrder)
	unchanged(t, "epoch older than the cache's", before, e, f)

	// The right continuation is then accepted.
	followerAppend(t, f, slices.Concat(bs[6:]...))
}

// A corrupt or malformed batch is refused whole and changes nothing; no
// part of the append is written.
func TestFollowerRefusesCorruptBatches(t *testing.T) {
	_, bs := leaderLog(t, followerCfg())
	e := newEnv(t, followerCfg())
	f := e.log()
	followerAppend(t, f, bs[0])
	before := stateOf(t, e, f)
	good := slices.Concat(bs[1:4]...)
	last := len(bs[1]) + len(bs[2]) // start of bs[3] in good

	flip := func(off int) []byte {
		b := slices.Clone(good)
		b[off] ^= 0x40
		return b
	}
	cases := []struct {
		name    string
		records []byte
		code    int16
	}{
		{"CRC of the last batch", flip(last + batch.HeaderSize + 3), CodeCorruptMessage},
		{"CRC of the first batch", flip(batch.OffAttributes), CodeCorruptMessage},
		{"truncated", good[:len(good)-5], CodeCorruptMessage},
		{"trailing bytes", append(slices.Clone(good), 1, 2, 3), CodeCorruptMessage},
		{"bad magic", flip(last + batch.OffMagic), CodeCorruptMessage},
		{"empty", nil, CodeInvalidRecord},
	}
	for _, c := range cases {
		_, err := f.AppendAsFollower(c.records, FollowerAppendOptions{})
		wantAppendErr(t, c.name, err, c.code, nil)
		unchanged(t, c.name, before, e, f)
	}
	// A control batch that is not a transaction marker is refused too.
	b := batch.NewBuilder()
	b.Attributes = batch.AttrControl
	b.AddAt(1, []byte{0, 0, 0, 9}, nil) // control type 9
	ctl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	batch.SetBaseOffset(ctl, f.LogEndOffset())
	_, err = f.AppendAsFollower(ctl, FollowerAppendOptions{})
	wantAppendErr(t, "unknown control batch", err, CodeCorruptMessage, nil)
	unchanged(t, "unknown control batch", before, e, f)
	followerAppend(t, f, good)
}

// Followers do not apply the topic's max.message.bytes (the leader did),
// but an append must still fit in a segment.
func TestFollowerSizeLimits(t *testing.T) {
	lcfg := DefaultConfig()
	leader := newEnv(t, lcfg).log()
	big := mkBatch(t, 4, 2000, 1)
	if _, err := leader.Append(big, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	fcfg := DefaultConfig()
	fcfg.MaxMessageBytes = 1000
	fcfg.SegmentBytes = int64(len(big)) + 100
	e := newEnv(t, fcfg)
	f := e.log()
	followerAppend(t, f, allBytes(t, leader))
	// Two of them do not fit one segment: RECORD_LIST_TOO_LARGE.
	if _, err := leader.Append(mkBatch(t, 4, 2000, 2), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	two := slices.Concat(batchesIn(t, leader, 4, 8), batchesIn(t, leader, 4, 8))
	batch.SetBaseOffset(two[len(two)/2:], 8)
	before := stateOf(t, e, f)
	_, err := f.AppendAsFollower(two, FollowerAppendOptions{})
	wantAppendErr(t, "larger than a segment", err, CodeRecordListTooLarge, nil)
	unchanged(t, "larger than a segment", before, e, f)
	// One at a time they fit (each in its own segment).
	followerAppend(t, f, two[:len(two)/2])
	if n := len(f.Segments()); n != 2 {
		t.Fatalf("%d segments, want 2", n)
	}
}

// On a compacted log, whole batches may be missing where the leader's
// cleaner removed them: the follower accepts a batch starting past its
// end, and gaps between batches, but no overlap.
func TestFollowerCompactedGaps(t *testing.T) {
	cfg := followerCfg()
	cfg.Compact = true
	_, bs := leaderLog(t, followerCfg())
	e := newEnv(t, cfg)
	f := e.log()
	followerAppend(t, f, bs[0])
	followerAppend(t, f, slices.Concat(bs[2], bs[4])) // gap before and inside
	h, _ := batch.ParseHeader(bs[4])
	if f.LogEndOffset() != h.LastOffset()+1 {
		t.Fatalf("end %d, want %d", f.LogEndOffset(), h.LastOffset()+1)
	}
	before := stateOf(t, e, f)
	_, err := f.AppendAsFollower(slices.Clone(bs[4]), FollowerAppendOptions{})
	wantAppendErr(t, "overlap on a compacted log", err, CodeOffsetOutOfRange, ErrUnexpectedAppendOffset)
	unchanged(t, "overlap on a compacted log", before, e, f)
	followerAppend(t, f, slices.Concat(bs[5:]...))
	// Recovery accepts the gaps (a compacted log is not dense).
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	e.crash(vfs.CrashOptions{})
	f = e.log()
	want := slices.Concat(bs[0], bs[2], bs[4], slices.Concat(bs[5:]...))
	if got := allBytes(t, f); !bytes.Equal(got, want) {
		t.Fatalf("after a crash the compacted follower holds %d bytes, want %d", len(got), len(want))
	}
}

// After follower appends, a clean restart and a crash (after the data was
// flushed) give back the same log; a crash losing the unflushed tail leaves
// a prefix of the leader's batches, after which the follower continues from
// its end and again ends identical to the leader.
func TestFollowerRecovery(t *testing.T) {
	le := newEnv(t, followerCfg())
	leader := le.log()
	runLeader(t, leader, leaderWorkload(t, 3, 200))
	want := allBytes(t, leader)
	bs := splitBatches(t, want)

	fe := newEnv(t, followerCfg())
	f := fe.log()
	half := len(bs) / 2
	for _, b := range bs[:half] {
		followerAppend(t, f, b)
	}
	wantHalf := allBytes(t, f)
	epochsHalf := epochEntries(f)
	fe.restart()
	f = fe.log()
	if !bytes.Equal(allBytes(t, f), wantHalf) || !slices.Equal(epochEntries(f), epochsHalf) {
		t.Fatal("clean restart changed the follower's log")
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	fe.crash(vfs.CrashOptions{})
	f = fe.log()
	if !bytes.Equal(allBytes(t, f), wantHalf) || !slices.Equal(epochEntries(f), epochsHalf) {
		t.Fatal("crash after a flush changed the follower's log")
	}

	// Unflushed appends, then crashes with torn and garbled tails.
	for seed := uint64(0); seed < 6; seed++ {
		next := sort.Search(len(bs), func(i int) bool {
			h, _ := batch.ParseHeader(bs[i])
			return h.BaseOffset >= f.LogEndOffset()
		})
		for _, b := range bs[next:min(len(bs), next+20)] {
			followerAppend(t, f, b)
		}
		fe.crash(vfs.CrashOptions{Rand: rand.New(rand.NewPCG(seed, 9)), TornTail: true, Garble: seed%2 == 1})
		f = fe.log()
		// The partitionLeaderEpoch field is not covered by the CRC (so that
		// a leader can set it): a garbled one survives recovery, as in
		// Kafka. Compare the rest.
		got := withoutEpochs(t, allBytes(t, f))
		if !bytes.HasPrefix(withoutEpochs(t, want), got) {
			t.Fatalf("seed %d: after a crash the follower's log is not a prefix of the leader's", seed)
		}
		// The epoch cache describes no offset past the recovered end.
		for _, ep := range epochEntries(f) {
			if ep.StartOffset >= f.LogEndOffset() && f.LogEndOffset() > 0 {
				t.Fatalf("seed %d: epoch entry %+v at or past the end %d", seed, ep, f.LogEndOffset())
			}
		}
	}
	// Continue from the recovered end to the leader's.
	next := sort.Search(len(bs), func(i int) bool {
		h, _ := batch.ParseHeader(bs[i])
		return h.BaseOffset >= f.LogEndOffset()
	})
	for _, b := range bs[next:] {
		followerAppend(t, f, b)
	}
	if !bytes.Equal(withoutEpochs(t, allBytes(t, f)), withoutEpochs(t, want)) || !slices.Equal(epochEntries(f), epochEntries(leader)) {
		t.Fatal("follower caught up after crashes differs from the leader")
	}
	caughtUp := allBytes(t, f)
	fe.restart()
	if f = fe.log(); !bytes.Equal(allBytes(t, f), caughtUp) {
		t.Fatal("restart after catching up changed the log")
	}
}

// flush.messages applies to follower appends as to the leader's: with
// DeferSync the caller gets the offset to wait for, without it the append
// returns with its data durable.
func TestFollowerFlushPolicy(t *testing.T) {
	_, bs := leaderLog(t, DefaultConfig())
	cfg := DefaultConfig()
	cfg.FlushMessages = 3
	e := newEnv(t, cfg)
	f := e.log()
	r, err := f.AppendAsFollower(bs[0], FollowerAppendOptions{DeferSync: true}) // 1 record
	if err != nil || r.SyncOffset != 0 {
		t.Fatalf("first append: %+v, %v", r, err)
	}
	r, err = f.AppendAsFollower(bs[1], FollowerAppendOptions{DeferSync: true}) // 2 more: due
	if err != nil || r.SyncOffset != f.LogEndOffset() {
		t.Fatalf("second append: %+v, %v (end %d)", r, err, f.LogEndOffset())
	}
	if err := f.WaitDurable(r.SyncOffset); err != nil {
		t.Fatal(err)
	}
	r, err = f.AppendAsFollower(slices.Concat(bs[2:4]...), FollowerAppendOptions{}) // 3+1: due, synced
	if err != nil || r.SyncOffset != 0 {
		t.Fatalf("third append: %+v, %v", r, err)
	}
	end := f.LogEndOffset()
	e.crash(vfs.CrashOptions{})
	if f = e.log(); f.LogEndOffset() != end {
		t.Fatalf("after a crash the end is %d, want the synced %d", f.LogEndOffset(), end)
	}
}

// An I/O failure (a full disk) refuses the append with
// KAFKA_STORAGE_ERROR and cuts back what was written; the same append
// succeeds once there is room. A closed log answers ErrClosed.
func TestFollowerStorageErrors(t *testing.T) {
	_, bs := leaderLog(t, DefaultConfig())
	e := newEnv(t, DefaultConfig())
	f := e.log()
	followerAppend(t, f, bs[0])
	before := stateOf(t, e, f)
	e.fs.SetSpaceLimit(e.fs.Used() + int64(len(bs[1]))/2)
	_, err := f.AppendAsFollower(slices.Clone(bs[1]), FollowerAppendOptions{})
	if KafkaCode(err) != CodeKafkaStorageError {
		t.Fatalf("append on a full disk: %v", err)
	}
	unchanged(t, "full disk", before, e, f)
	e.fs.SetSpaceLimit(-1)
	followerAppend(t, f, bs[1])
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.AppendAsFollower(slices.Clone(bs[2]), FollowerAppendOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append to a closed log: %v", err)
	}
}

// Markers from the leader are accepted (no AllowControl needed), and
// several markers and transactions in one append are fine.
func TestFollowerAcceptsMarkers(t *testing.T) {
	le := newEnv(t, DefaultConfig())
	leader := le.log()
	steps := []leaderStep{
		{producerBatch(t, 7, 0, 0, 2, true, batch.None, 10), AppendOptions{}},
		{producerBatch(t, 8, 0, 0, 1, true, batch.Gzip, 11), AppendOptions{}},
		{batch.NewMarkerBatch(batch.Marker{ProducerID: 7, Type: batch.ControlAbort, Timestamp: 12}), AppendOptions{AllowControl: true}},
		{batch.NewMarkerBatch(batch.Marker{ProducerID: 8, Type: batch.ControlCommit, Timestamp: 13}), AppendOptions{AllowControl: true}},
	}
	runLeader(t, leader, steps)
	e := newEnv(t, DefaultConfig())
	f := e.log()
	followerAppend(t, f, allBytes(t, leader))
	if !bytes.Equal(allBytes(t, f), allBytes(t, leader)) {
		t.Fatal("follower differs")
	}
}

// withoutEpochs is a copy of records with every batch's
// partitionLeaderEpoch zeroed.
func withoutEpochs(t testing.TB, records []byte) []byte {
	t.Helper()
	out := slices.Clone(records)
	for _, b := range splitBatches(t, out) {
		batch.SetPartitionLeaderEpoch(b, 0)
	}
	return out
}
