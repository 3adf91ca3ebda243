package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/txn"
)

// AddPartitionsToTxn v4 and v5, Kafka's broker-to-broker form: several
// transactions in one request, each answered on its own; VerifyOnly checks
// without adding (0 for a partition of the transaction, else
// TRANSACTION_ABORTABLE); a missing partition fails its transaction only.
func TestAddPartitionsToTxnBatched(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: txnProps()})
	dpTopic(t, tb, "apb", 2, nil)
	a := &txnRaw{t: t, tb: tb, id: "apb-a"}
	a.init()
	b := &txnRaw{t: t, tb: tb, id: "apb-b"}
	b.init()

	tx := func(x *txnRaw, epoch int16, verify bool, topic string, partitions ...int32) kmsg.AddPartitionsToTxnRequestTransaction {
		t := kmsg.NewAddPartitionsToTxnRequestTransaction()
		t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = x.id, x.pid, epoch, verify
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = topic, partitions
		t.Topics = append(t.Topics, tt)
		return t
	}
	send := func(version int16, txs ...kmsg.AddPartitionsToTxnRequestTransaction) map[string][]int16 {
		t.Helper()
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version, req.Transactions = version, txs
		resp := rawRoundTrip(t, tb.addr, req).(*kmsg.AddPartitionsToTxnResponse)
		if resp.ErrorCode != 0 || len(resp.Transactions) != len(txs) {
			t.Fatalf("v%d: error %d, %d transactions answered, want %d", version, resp.ErrorCode, len(resp.Transactions), len(txs))
		}
		out := map[string][]int16{}
		for _, rt := range resp.Transactions {
			for _, tp := range rt.Topics {
				for _, p := range tp.Partitions {
					out[rt.TransactionalID] = append(out[rt.TransactionalID], p.ErrorCode)
				}
			}
		}
		return out
	}
	want := func(what string, got []int16, codes ...*kerr.Error) {
		t.Helper()
		if len(got) != len(codes) {
			t.Fatalf("%s: %d partitions answered, want %d", what, len(got), len(codes))
		}
		for i, c := range codes {
			w := int16(0)
			if c != nil {
				w = c.Code
			}
			if got[i] != w {
				t.Fatalf("%s: partition %d: %v, want %v", what, i, kerr.ErrorForCode(got[i]), c)
			}
		}
	}

	// a adds apb-0; b verifies apb-0 (not in b's transaction, which has none).
	got := send(4, tx(a, a.epoch, false, "apb", 0), tx(b, b.epoch, true, "apb", 0))
	want("a adds", got[a.id], nil)
	want("b verifies", got[b.id], kerr.TransactionAbortable)
	if d, _ := tb.broker().txns.Describe(a.id); d.State != txn.Ongoing || len(d.Partitions) != 1 {
		t.Fatalf("a after the add: %+v", d)
	}
	if d, _ := tb.broker().txns.Describe(b.id); d.State == txn.Ongoing {
		t.Fatalf("b was changed by a verification: %+v", d)
	}
	// Verification of a: its partition yes, the other no, nothing added.
	got = send(5, tx(a, a.epoch, true, "apb", 0, 1))
	want("a verifies", got[a.id], nil, kerr.TransactionAbortable)
	if d, _ := tb.broker().txns.Describe(a.id); len(d.Partitions) != 1 {
		t.Fatalf("a after verification: %+v", d)
	}
	// Another epoch is fenced; a missing partition fails its transaction
	// alone (the other partition OPERATION_NOT_ATTEMPTED).
	got = send(5, tx(a, a.epoch+1, true, "apb", 0), tx(b, b.epoch, false, "apb", 1, 7))
	want("a, other epoch", got[a.id], kerr.ProducerFenced)
	want("b, a missing partition", got[b.id], kerr.OperationNotAttempted, kerr.UnknownTopicOrPartition)
	// An unknown transactional id.
	got = send(5, tx(&txnRaw{id: "apb-none", pid: 999}, 0, true, "apb", 0))
	want("unknown id", got["apb-none"], kerr.InvalidProducerIDMapping)

	// The client form (v3) still adds as before.
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = b.id, b.pid, b.epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = "apb", []int32{1}
	req.Topics = append(req.Topics, rt)
	if code := rawRoundTrip(t, tb.addr, req).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("v3 add: %v", kerr.ErrorForCode(code))
	}
}

// WriteTxnMarkers v2 carries each marker's transaction version
// (KIP-1228): a transaction version 2 marker must have an epoch newer than
// the producer's batches on the partition (the coordinator bumped it), a
// repeat of a written one is accepted; transaction version 0 keeps the
// older rule (not older than the batches').
func TestWriteTxnMarkersTransactionVersion(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: txnProps()})
	dpTopic(t, tb, "tv", 1, nil)
	ctx := dpCtx(t, 30*time.Second)
	p := tb.client(kgo.TransactionalID("tv-hang"), kgo.DefaultProduceTopic("tv"))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	d, code := tb.broker().txns.Describe("tv-hang")
	if code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	send := func(version int16, tv int8, epoch int16) int16 {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = version
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.TransactionVersion = d.ProducerID, epoch, tv
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "tv", []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		return rawRoundTrip(t, tb.addr, req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	if code := send(2, 2, d.ProducerEpoch); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("TV2 marker at the batches' epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	if hw, lso := lastStable(t, tb, "tv"); hw != 1 || lso != 0 {
		t.Fatalf("after the refused marker: hw %d lso %d, want 1 0", hw, lso)
	}
	if code := send(2, 2, d.ProducerEpoch+1); code != 0 {
		t.Fatalf("TV2 marker at the bumped epoch: %v", kerr.ErrorForCode(code))
	}
	if hw, lso := lastStable(t, tb, "tv"); hw != 2 || lso != 2 {
		t.Fatalf("after the marker: hw %d lso %d, want 2 2", hw, lso)
	}
	if code := send(2, 2, d.ProducerEpoch+1); code != 0 {
		t.Fatalf("TV2 marker repeated: %v", kerr.ErrorForCode(code))
	}
	if code := send(1, 0, d.ProducerEpoch); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("v1 marker at an older epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	if code := send(1, 0, d.ProducerEpoch+1); code != 0 {
		t.Fatalf("v1 marker at the current epoch: %v", kerr.ErrorForCode(code))
	}
}
