package broker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/group"
	"github.com/sluice-broker/sluice/internal/txn"
)

// txnProps keeps __transaction_state small and the timeout sweep fast.
func txnProps() map[string]string {
	return map[string]string{
		"transaction.state.log.num.partitions":                        "2",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "50",
	}
}

// txnConsume reads topic from the start with the given isolation until it
// has seen want records or the context ends, and returns the values sorted.
func txnConsume(t *testing.T, tb *testBroker, topic string, committed bool, want int) []string {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl := tb.client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	sort.Strings(got)
	return got
}

// endOffsets returns the high watermark and last stable offset of topic-0 as
// a read_committed fetch reports them.
func lastStable(t *testing.T, tb *testBroker, topic string) (hw, lso int64) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := tb.request(req).(*kmsg.ListOffsetsResponse)
	lso = resp.Topics[0].Partitions[0].Offset
	l := tb.broker().logs.Get(topic, 0)
	return l.HighWatermark(), lso
}

// franz-go uses transaction version 2 (KIP-890 part 2: no
// AddPartitionsToTxn, Produce v12, EndTxn v5 bumping the epoch) when the
// broker finalizes transaction.version 2 (the default), the classic protocol
// when it is 0.
func TestTxnCommitAndAbortWithKgo(t *testing.T) {
	for _, tv := range []int16{2, 0} {
		t.Run(fmt.Sprintf("transaction.version=%d", tv), func(t *testing.T) { testTxnCommitAndAbortWithKgo(t, tv) })
	}
}

// setTransactionVersion finalizes transaction.version at level.
func setTransactionVersion(t *testing.T, tb *testBroker, level int16) {
	t.Helper()
	if resp := updateFeatures(t, tb.addr, 1, false, featureUpdate("transaction.version", level, 2)); resp.ErrorCode != 0 {
		t.Fatalf("transaction.version %d: %+v", level, resp)
	}
}

func testTxnCommitAndAbortWithKgo(t *testing.T, tv int16) {
	tb := startTestBroker(t, testOptions{Props: txnProps()})
	setTransactionVersion(t, tb, tv)
	dpTopic(t, tb, "events", 1, nil)
	ctx := dpCtx(t, 20*time.Second)

	p := tb.client(kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic("events"))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"c1", "c2"} {
		if err := p.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	// While the transaction is open, read_committed stops before it.
	if hw, lso := lastStable(t, tb, "events"); hw != 2 || lso != 0 {
		t.Fatalf("ongoing: hw %d lso %d", hw, lso)
	}
	adm := tb.admin()
	d, err := adm.DescribeTransactions(ctx, "tx-1")
	if err != nil || d["tx-1"].State != "Ongoing" || len(d["tx-1"].Topics["events"]) != 1 {
		t.Fatalf("describe ongoing: %v %+v", err, d)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, kgo.StringRecord("a1")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort: %v", err)
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, kgo.StringRecord("c3")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit 2: %v", err)
	}

	// Five data records and three markers; nothing is open any more.
	if hw, lso := lastStable(t, tb, "events"); hw != 7 || lso != 7 {
		t.Fatalf("after: hw %d lso %d", hw, lso)
	}
	if got := txnConsume(t, tb, "events", true, 3); len(got) != 3 || got[0] != "c1" || got[1] != "c2" || got[2] != "c3" {
		t.Fatalf("read_committed: %v", got)
	}
	if got := txnConsume(t, tb, "events", false, 4); len(got) != 4 {
		t.Fatalf("read_uncommitted: %v", got)
	}
	// Three EndTxn v5 bumped the epoch three times; the classic protocol never.
	wantEpoch := int16(0)
	if tv == 2 {
		wantEpoch = 3
	}
	d, err = adm.DescribeTransactions(ctx, "tx-1")
	if err != nil || d["tx-1"].State != "CompleteCommit" || d["tx-1"].ProducerEpoch != wantEpoch {
		t.Fatalf("describe after: %v %+v", err, d)
	}
	l, err := adm.ListTransactions(ctx, nil, []string{"CompleteCommit"})
	if err != nil || len(l) != 1 {
		t.Fatalf("list: %v %+v", err, l)
	}
}

func TestTxnZombieIsFenced(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: txnProps()})
	dpTopic(t, tb, "out", 1, nil)
	ctx := dpCtx(t, 20*time.Second)

	zombie := tb.client(kgo.TransactionalID("app"), kgo.DefaultProduceTopic("out"))
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, kgo.StringRecord("zombie")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A new instance with the same transactional id fences the zombie: its
	// open transaction is aborted and its epoch is stale.
	fresh := tb.client(kgo.TransactionalID("app"), kgo.DefaultProduceTopic("out"))
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.ProduceSync(ctx, kgo.StringRecord("fresh")).FirstErr(); err != nil {
		t.Fatalf("fresh produce: %v", err)
	}
	if err := fresh.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("fresh commit: %v", err)
	}
	err := zombie.ProduceSync(ctx, kgo.StringRecord("zombie-2")).FirstErr()
	if err == nil {
		err = zombie.EndTransaction(ctx, kgo.TryCommit)
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("zombie not fenced: %v", err)
	}
	if got := txnConsume(t, tb, "out", true, 1); len(got) != 1 || got[0] != "fresh" {
		t.Fatalf("read_committed: %v", got)
	}
	d, err := tb.admin().DescribeTransactions(ctx, "app")
	if err != nil || d["app"].ProducerEpoch != 3 {
		// epoch 0 (zombie), 1 (fence), 2 (fresh), 3 (fresh's commit: transaction version 2)
		t.Fatalf("describe: %v %+v", err, d)
	}
}

// txnRaw drives the transactional APIs with raw requests.
type txnRaw struct {
	t     *testing.T
	tb    *testBroker
	id    string
	pid   int64
	epoch int16
	tv2   bool // TxnOffsetCommit v5 and EndTxn v5 (transaction version 2)
}

func (x *txnRaw) init() {
	x.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = kmsg.StringPtr(x.id)
	req.TransactionTimeoutMillis = 60000
	resp := x.tb.request(req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 {
		x.t.Fatalf("init: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	x.pid, x.epoch = resp.ProducerID, resp.ProducerEpoch
}

func (x *txnRaw) addOffsets(grp string) int16 {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = x.id, x.pid, x.epoch, grp
	return x.tb.request(req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
}

func (x *txnRaw) commitOffset(grp, topic string, partition int32, offset int64) int16 {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = x.id, x.pid, x.epoch, grp
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	req.Version = 4 // the classic protocol (v5: transaction version 2, txn_v2_test.go)
	if x.tv2 {
		req.Version = 5
	}
	return rawRoundTrip(x.t, x.tb.addr, req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// end sends EndTxn (v4, or v5 with tv2, which moves x to the answer's
// producer id and epoch).
func (x *txnRaw) end(commit bool) int16 {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = x.id, x.pid, x.epoch, commit
	req.Version = 4
	if x.tv2 {
		req.Version = 5
	}
	resp := rawRoundTrip(x.t, x.tb.addr, req).(*kmsg.EndTxnResponse)
	if x.tv2 && resp.ErrorCode == 0 {
		x.pid, x.epoch = resp.ProducerID, resp.ProducerEpoch
	}
	return resp.ErrorCode
}

// fetchOffset returns the committed offset (and error code) of grp for
// topic-partition, with require_stable as given.
func fetchOffset(t *testing.T, tb *testBroker, grp, topic string, partition int32, stable bool) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = grp
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	req.RequireStable = stable
	resp := tb.request(req).(*kmsg.OffsetFetchResponse)
	if len(resp.Groups) == 1 {
		p := resp.Groups[0].Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

func TestTxnOffsetCommitPendingUntilMarker(t *testing.T) {
	dir := t.TempDir()
	tb := startTestBroker(t, testOptions{Props: txnProps(), DataDir: dir})
	dpTopic(t, tb, "in", 2, nil)
	x := &txnRaw{t: t, tb: tb, id: "ctp"}
	x.init()

	// Without AddOffsetsToTxn the commit is refused.
	if code := x.commitOffset("g", "in", 0, 5); code != kerr.InvalidTxnState.Code {
		t.Fatalf("commit before AddOffsetsToTxn: %v", kerr.ErrorForCode(code))
	}
	if code := x.addOffsets("g"); code != 0 {
		t.Fatalf("add offsets: %v", kerr.ErrorForCode(code))
	}
	if code := x.commitOffset("g", "nope", 0, 5); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %v", kerr.ErrorForCode(code))
	}
	if code := x.commitOffset("g", "in", 0, 5); code != 0 {
		t.Fatalf("txn commit: %v", kerr.ErrorForCode(code))
	}
	if off, code := fetchOffset(t, tb, "g", "in", 0, true); code != kerr.UnstableOffsetCommit.Code || off != -1 {
		t.Fatalf("require_stable while pending: %d %v", off, kerr.ErrorForCode(code))
	}
	if off, code := fetchOffset(t, tb, "g", "in", 0, false); code != 0 || off != -1 {
		t.Fatalf("pending offset visible: %d %v", off, kerr.ErrorForCode(code))
	}
	if code := x.end(true); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	if off, code := fetchOffset(t, tb, "g", "in", 0, true); code != 0 || off != 5 {
		t.Fatalf("after commit: %d %v", off, kerr.ErrorForCode(code))
	}

	// An aborted transaction leaves the offset alone.
	if code := x.addOffsets("g"); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := x.commitOffset("g", "in", 0, 9); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := x.end(false); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if off, code := fetchOffset(t, tb, "g", "in", 0, true); code != 0 || off != 5 {
		t.Fatalf("after abort: %d %v", off, kerr.ErrorForCode(code))
	}

	// A pending commit survives a restart and is decided by the marker
	// written after it.
	if code := x.addOffsets("g"); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := x.commitOffset("g", "in", 1, 7); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	tb.restart()
	if off, code := fetchOffset(t, tb, "g", "in", 1, true); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("pending after restart: %d %v", off, kerr.ErrorForCode(code))
	}
	d, err := tb.admin().DescribeTransactions(dpCtx(t, 5*time.Second), "ctp")
	if err != nil || d["ctp"].State != "Ongoing" {
		t.Fatalf("describe after restart: %v %+v", err, d)
	}
	if code := x.end(true); code != 0 {
		t.Fatalf("commit after restart: %v", kerr.ErrorForCode(code))
	}
	if off, code := fetchOffset(t, tb, "g", "in", 1, true); code != 0 || off != 7 {
		t.Fatalf("committed after restart: %d %v", off, kerr.ErrorForCode(code))
	}
	// And the whole history replays to the same offsets.
	tb.restart()
	for p, want := range []int64{5, 7} {
		if off, code := fetchOffset(t, tb, "g", "in", int32(p), true); code != 0 || off != want {
			t.Fatalf("partition %d after second restart: %d %v", p, off, kerr.ErrorForCode(code))
		}
	}
	// The offsets partition got commit, abort and commit markers.
	op := group.PartitionFor("g", tb.broker().groups.Partitions())
	if l := tb.broker().logs.Get(group.OffsetsTopic, op); l.LastStableOffset() != l.HighWatermark() {
		t.Fatalf("__consumer_offsets has an open transaction: lso %d hw %d", l.LastStableOffset(), l.HighWatermark())
	}
}

func TestTxnTimeoutAbortsAfterRestart(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: txnProps()})
	dpTopic(t, tb, "slow", 1, nil)
	ctx := dpCtx(t, 20*time.Second)
	const timeout = 2 * time.Second
	p := tb.client(kgo.TransactionalID("slowpoke"), kgo.DefaultProduceTopic("slow"),
		kgo.TransactionTimeout(timeout))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	began := time.Now() // the coordinator starts the clock later, at AddPartitionsToTxn
	if err := p.ProduceSync(ctx, kgo.StringRecord("never")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	tb.restart() // the transaction is loaded as Ongoing and still times out
	// The transaction must still be open, unless the restart took so long
	// (a loaded machine) that it may have timed out already.
	if _, lso := lastStable(t, tb, "slow"); lso != 0 && time.Since(began) < timeout {
		t.Fatalf("lso %d with an open transaction", lso)
	} else if lso != 0 {
		t.Logf("the restart took %v: the transaction may have timed out before it", time.Since(began))
	}
	waitFor(t, "the timed-out transaction to be aborted", func() bool {
		d, code := tb.broker().txns.Describe("slowpoke")
		return code == 0 && d.State == txn.CompleteAbort && d.ProducerEpoch == 1
	})
	if hw, lso := lastStable(t, tb, "slow"); hw != 2 || lso != 2 {
		t.Fatalf("after abort: hw %d lso %d", hw, lso)
	}
	// A plain record after the aborted one is the only one read_committed sees.
	if err := tb.client(kgo.DefaultProduceTopic("slow")).ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := txnConsume(t, tb, "slow", true, 1); len(got) != 1 || got[0] != "after" {
		t.Fatalf("read_committed: %v", got)
	}
}

func TestTxnRequestErrors(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"transaction.max.timeout.ms": "5000"}})
	dpTopic(t, tb, "t", 1, nil)
	init := func(v int16, id string, timeout int32) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = v
		req.TransactionalID = kmsg.StringPtr(id)
		req.TransactionTimeoutMillis = timeout
		rc := tb.raw()
		rc.send(req, 1)
		resp := kmsg.NewPtrInitProducerIDResponse()
		resp.Version = v
		rc.recv(resp)
		return resp
	}
	if r := init(4, "x", 5001); r.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("timeout: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := init(4, "", 1000); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("empty id: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	r := init(0, "x", 1000)
	if r.ErrorCode != 0 || r.ProducerEpoch != 0 {
		t.Fatalf("init: %+v", r)
	}
	// AddPartitionsToTxn: an unknown partition fails alone, the others are
	// not attempted; a stale epoch is INVALID_PRODUCER_EPOCH before v2.
	for _, v := range []int16{0, 3} {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = v
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = "x", r.ProducerID, 0
		for _, tp := range []struct {
			topic string
			p     int32
		}{{"t", 0}, {"t", 5}} {
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = tp.topic, []int32{tp.p}
			req.Topics = append(req.Topics, rt)
		}
		rc := tb.raw()
		rc.send(req, 1)
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		resp.Version = v
		rc.recv(resp)
		if resp.Topics[0].Partitions[0].ErrorCode != kerr.OperationNotAttempted.Code ||
			resp.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
	}
	if r2 := init(4, "x", 1000); r2.ProducerEpoch != 1 {
		t.Fatalf("bump: %+v", r2)
	}
	for _, c := range []struct {
		v    int16
		want *kerr.Error
	}{{1, kerr.InvalidProducerEpoch}, {2, kerr.ProducerFenced}} {
		req := kmsg.NewPtrEndTxnRequest()
		req.Version = c.v
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "x", r.ProducerID, 0, true
		rc := tb.raw()
		rc.send(req, 1)
		resp := kmsg.NewPtrEndTxnResponse()
		resp.Version = c.v
		rc.recv(resp)
		if resp.ErrorCode != c.want.Code {
			t.Fatalf("EndTxn v%d stale epoch: %v", c.v, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	// FindCoordinator for a transactional id names this broker.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType = 1
	fc.CoordinatorKeys = []string{"x"}
	if resp := tb.request(fc).(*kmsg.FindCoordinatorResponse); resp.Coordinators[0].ErrorCode != 0 ||
		resp.Coordinators[0].NodeID != tb.broker().nodeID {
		t.Fatalf("find coordinator: %+v", resp.Coordinators)
	}
}

// Consume-transform-produce with kgo's GroupTransactSession: the output and
// the group's offsets commit atomically.
func TestTxnGroupTransactSession(t *testing.T) {
	props := txnProps()
	props["group.initial.rebalance.delay.ms"] = "0"
	tb := startTestBroker(t, testOptions{Props: props})
	dpTopic(t, tb, "src", 1, nil)
	dpTopic(t, tb, "dst", 1, nil)
	ctx := dpCtx(t, 30*time.Second)
	in := tb.client(kgo.DefaultProduceTopic("src"))
	for i := 0; i < 10; i++ {
		if err := in.ProduceSync(ctx, kgo.StringRecord(string(rune('a'+i)))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(tb.addr), kgo.TransactionalID("ctp-app"),
		kgo.ConsumerGroup("ctp-group"), kgo.ConsumeTopics("src"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic("dst"),
		kgo.RequireStableFetchOffsets(), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	done := 0
	for done < 10 {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 10", done)
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			sess.Produce(ctx, kgo.StringRecord("out-"+string(r.Value)), func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("end: %v", err)
		}
		if committed {
			done += n
		}
	}
	if got := txnConsume(t, tb, "dst", true, 10); len(got) != 10 || got[0] != "out-a" || got[9] != "out-j" {
		t.Fatalf("dst: %v", got)
	}
	if off, code := fetchOffset(t, tb, "ctp-group", "src", 0, true); code != 0 || off != 10 {
		t.Fatalf("group offset: %d %v", off, kerr.ErrorForCode(code))
	}
}

func TestTxnVerifyPartition(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: txnProps()})
	dpTopic(t, tb, "v", 2, nil)
	x := &txnRaw{t: t, tb: tb, id: "verify"}
	x.init()
	b := tb.broker()
	check := func(what string, err error, want *kerr.Error) {
		t.Helper()
		var got int16
		if err != nil {
			got = err.(*Error).Code
		}
		if (want == nil && got != 0) || (want != nil && got != want.Code) {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
	}
	verify := func(b *Broker, pid int64, epoch int16, topic string, partition int32) error {
		release, err := b.beginTxnProduce(nil, pid, epoch, topic, partition, false)
		if release != nil {
			release()
		}
		return err
	}
	check("no transaction", verify(b, x.pid, x.epoch, "v", 0), kerr.InvalidTxnState)
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = x.id, x.pid, x.epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = "v", []int32{0}
	req.Topics = append(req.Topics, rt)
	if code := tb.request(req).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	check("added", verify(b, x.pid, x.epoch, "v", 0), nil)
	check("other partition", verify(b, x.pid, x.epoch, "v", 1), kerr.InvalidTxnState)
	check("unknown producer", verify(b, x.pid+1000, 0, "v", 0), kerr.InvalidProducerIDMapping)
	release, err := b.beginTxnProduce(nil, x.pid, x.epoch, "v", 0, false)
	check("begin produce", err, nil)
	_, err = b.beginTxnProduce(nil, x.pid, x.epoch, "v", 1, false)
	check("begin produce, other partition", err, kerr.InvalidTxnState)
	ended := make(chan int16)
	go func() { ended <- x.end(true) }()
	select {
	case code := <-ended:
		t.Fatalf("EndTxn answered %d while an admitted append was outstanding", code)
	case <-time.After(50 * time.Millisecond): // EndTxn must still be waiting
	}
	release()
	if code := <-ended; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}

	off := startTestBroker(t, testOptions{Props: map[string]string{"transaction.partition.verification.enable": "false"}})
	check("disabled", verify(off.broker(), 1, 0, "v", 0), nil)
}

// kafka-transactions.sh abort: WriteTxnMarkers ends a hanging transaction on
// a partition.
func TestTxnWriteTxnMarkers(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: txnProps()})
	dpTopic(t, tb, "hang", 1, nil)
	ctx := dpCtx(t, 10*time.Second)
	(&txnRaw{t: t, tb: tb, id: "hanging"}).init() // the client below gets epoch 1
	p := tb.client(kgo.TransactionalID("hanging"), kgo.DefaultProduceTopic("hang"))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	d, code := tb.broker().txns.Describe("hanging")
	if code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	send := func(epoch int16, topic string) int16 {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = d.ProducerID, epoch, false
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = topic, []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		req.Version = 1
		rc := tb.raw() // kgo would route by partition leader (and fail on an unknown topic)
		rc.send(req, 1)
		resp := kmsg.NewPtrWriteTxnMarkersResponse()
		resp.Version = 1
		rc.recv(resp)
		return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	if code := send(d.ProducerEpoch, "nope"); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %v", kerr.ErrorForCode(code))
	}
	if hw, lso := lastStable(t, tb, "hang"); hw != 1 || lso != 0 {
		t.Fatalf("before: hw %d lso %d", hw, lso)
	}
	if code := send(d.ProducerEpoch, "hang"); code != 0 {
		t.Fatalf("abort marker: %v", kerr.ErrorForCode(code))
	}
	if hw, lso := lastStable(t, tb, "hang"); hw != 2 || lso != 2 {
		t.Fatalf("after: hw %d lso %d", hw, lso)
	}
	if code := send(d.ProducerEpoch-1, "hang"); d.ProducerEpoch != 1 || code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale marker (epoch %d): %v", d.ProducerEpoch-1, kerr.ErrorForCode(code))
	}
}
