package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestListTransactions(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	ctx := dpCtx(t, 10*time.Second)

	got, err := tb.admin().ListTransactions(ctx, nil, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("list: %v %+v", err, got)
	}
	for v := int16(0); v <= 1; v++ {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version = v
		req.StateFilters = []string{"Ongoing", "Bogus", "CompleteCommit", "ongoing"}
		req.ProducerIDFilters = []int64{1, 2}
		req.DurationFilterMillis = 1000
		rc := tb.raw()
		rc.send(req, 1)
		resp := kmsg.NewPtrListTransactionsResponse()
		resp.Version = v
		rc.recv(resp)
		if resp.ErrorCode != 0 || len(resp.TransactionStates) != 0 || len(resp.UnknownStateFilters) != 2 ||
			resp.UnknownStateFilters[0] != "Bogus" || resp.UnknownStateFilters[1] != "ongoing" {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}
}

func TestDescribeTransactions(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	ctx := dpCtx(t, 10*time.Second)

	got, err := tb.admin().DescribeTransactions(ctx, "txn-a", "txn-b")
	if err != nil || len(got) != 2 {
		t.Fatalf("describe: %v %+v", err, got)
	}
	for _, id := range []string{"txn-a", "txn-b"} {
		if d := got[id]; !errors.Is(d.Err, kerr.TransactionalIDNotFound) || d.TxnID != id {
			t.Errorf("%s: %+v", id, d)
		}
	}
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"", "x"}
	resp := tb.request(req).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 2 || resp.TransactionStates[0].ErrorCode != kerr.InvalidRequest.Code ||
		resp.TransactionStates[1].TransactionalID != "x" || resp.TransactionStates[1].ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("raw: %+v", resp.TransactionStates)
	}
}
