package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnOutcome is what a transactional producer knows of one transaction when
// the broker is killed.
type txnOutcome int

const (
	txnCommitted      txnOutcome = iota // EndTxn(commit) acknowledged: must be visible
	txnAborted                          // EndTxn(abort) acknowledged: never visible
	txnCommitInFlight                   // records acknowledged, commit unanswered: all or nothing
	txnOpen                             // never ended (or abort unanswered): never visible
)

// txnRecs is one transaction: its outcome and the keys of its records.
type txnRecs struct {
	outcome txnOutcome
	keys    []string
}

// The real binary, killed with SIGKILL while transactional producers commit
// and abort transactions, must come back with exactly the committed ones
// visible to read_committed consumers: every transaction whose commit was
// acknowledged, each transaction whose commit was in flight entirely or not
// at all, never a record of an aborted or unfinished transaction. A
// transaction left open by the kill is aborted by the coordinator once its
// timeout passes, so the last stable offset reaches the high watermark; and
// each transactional id can be initialized and committed again.
func TestKillDashNineTransactions(t *testing.T) {
	bin := sluiceBinary(t)
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte(strings.Join([]string{
		"transaction.state.log.num.partitions=4",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
	}, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	addr := freeAddr(t)
	start := func() (*exec.Cmd, *syncBuffer) {
		logs := &syncBuffer{}
		cmd := exec.Command(bin, "--listen", addr, "--data-dir", dataDir, "--metrics-listen", "", "--config", props)
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		waitListeningFn(t, addr, logs.String)
		return cmd, logs
	}

	cmd, _ := start()
	const topic = "txcrash"
	const partitions = 3
	const txnTimeout = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := kadm.NewClient(adm).CreateTopic(ctx, partitions, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	adm.Close()

	newProducer := func(id string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
			kgo.TransactionalID(id), kgo.TransactionTimeout(txnTimeout),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
			kgo.RecordDeliveryTimeout(5*time.Second), kgo.RequestTimeoutOverhead(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	// txnRecords are the records of transaction n of producer w: one on
	// every partition and one more, so that each spans all partitions.
	txnRecords := func(w string, n int) []*kgo.Record {
		var rs []*kgo.Record
		for j := 0; j <= partitions; j++ {
			k := fmt.Sprintf("%s-t%05d-r%d", w, n, j)
			rs = append(rs, &kgo.Record{Key: []byte(k), Value: []byte(k), Partition: int32(j % partitions)})
		}
		return rs
	}
	keysOf := func(rs []*kgo.Record) []string {
		var ks []string
		for _, r := range rs {
			ks = append(ks, string(r.Key))
		}
		return ks
	}

	var mu sync.Mutex
	var txns []txnRecs
	record := func(o txnOutcome, rs []*kgo.Record) {
		mu.Lock()
		txns = append(txns, txnRecs{o, keysOf(rs)})
		mu.Unlock()
	}
	counts := func() (committed, aborted int) {
		mu.Lock()
		defer mu.Unlock()
		for _, x := range txns {
			switch x.outcome {
			case txnCommitted:
				committed++
			case txnAborted:
				aborted++
			}
		}
		return
	}

	// One transaction is left open on purpose: its records are acknowledged
	// and it is never ended.
	ids := []string{"crash-open"}
	open := newProducer("crash-open")
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	openRecs := txnRecords("crash-open", 0)
	if err := open.ProduceSync(ctx, openRecs...).FirstErr(); err != nil {
		t.Fatalf("open transaction: %v", err)
	}
	record(txnOpen, openRecs)

	// Producers commit two transactions out of three and abort the third,
	// until the broker dies under them. A produce in flight at the kill only
	// returns once the broker is back (the client cannot tell whether it was
	// written); such a transaction is never ended (the coordinator aborts it),
	// and nothing is done after the kill but finding out how the transaction
	// of the moment went.
	var killed atomic.Bool
	var wg sync.WaitGroup
	var producers []*kgo.Client
	for w := 0; w < 3; w++ {
		id := fmt.Sprintf("crash-tx-%d", w)
		ids = append(ids, id)
		cl := newProducer(id)
		producers = append(producers, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !killed.Load(); n++ {
				if err := cl.BeginTransaction(); err != nil {
					return
				}
				rs := txnRecords(id, n)
				err := cl.ProduceSync(ctx, rs...).FirstErr()
				if err != nil || killed.Load() {
					record(txnOpen, rs) // some records may be written: the coordinator aborts them
					return
				}
				commit := n%3 != 2
				ectx, ecancel := context.WithTimeout(ctx, 5*time.Second)
				err = cl.EndTransaction(ectx, kgo.TransactionEndTry(commit))
				ecancel()
				switch {
				case err == nil && commit:
					record(txnCommitted, rs)
				case err == nil:
					record(txnAborted, rs)
				case commit:
					record(txnCommitInFlight, rs)
					return
				default:
					record(txnOpen, rs)
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, a := counts()
		if c >= 60 && a >= 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d commits and %d aborts acknowledged before the deadline", c, a)
		}
		time.Sleep(10 * time.Millisecond) // polling the counters
	}
	killed.Store(true)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	_, logs := start()
	// The producers find out how their last transaction went and stop.
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(60 * time.Second):
		t.Fatalf("producers still busy a minute after the restart\nbroker log:\n%s", logs.String())
	}
	for _, cl := range producers {
		cl.Close()
	}
	open.Close()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	admin := kadm.NewClient(admCl)

	// The open transaction (and any the kill left open) times out and is
	// aborted: the last stable offset catches up with the high watermark.
	lsoDeadline := time.Now().Add(txnTimeout + 20*time.Second)
	for {
		ends, err1 := admin.ListEndOffsets(ctx, topic)
		stable, err2 := admin.ListCommittedOffsets(ctx, topic)
		caughtUp := err1 == nil && err2 == nil && ends.Error() == nil && stable.Error() == nil
		var state []string
		for p := int32(0); p < partitions && caughtUp; p++ {
			e, _ := ends.Lookup(topic, p)
			s, _ := stable.Lookup(topic, p)
			state = append(state, fmt.Sprintf("p%d hw %d lso %d", p, e.Offset, s.Offset))
			if e.Offset != s.Offset {
				caughtUp = false
			}
		}
		if caughtUp {
			break
		}
		if time.Now().After(lsoDeadline) {
			t.Fatalf("last stable offset stuck behind the high watermark: %v (%v %v)\nbroker log:\n%s", state, err1, err2, logs.String())
		}
		time.Sleep(50 * time.Millisecond) // polling the offsets
	}

	// Every transactional id can start again: a new producer initializes
	// (fencing whatever was left) and commits a sentinel on every partition.
	var sentinels []string
	for _, id := range ids {
		cl := newProducer(id)
		if err := cl.BeginTransaction(); err != nil {
			t.Fatalf("%s: begin after restart: %v", id, err)
		}
		var rs []*kgo.Record
		for p := int32(0); p < partitions; p++ {
			k := fmt.Sprintf("sentinel-%s-p%d", id, p)
			rs = append(rs, &kgo.Record{Key: []byte(k), Value: []byte(k), Partition: p})
			sentinels = append(sentinels, k)
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("%s: produce after restart: %v\nbroker log:\n%s", id, err, logs.String())
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("%s: commit after restart: %v\nbroker log:\n%s", id, err, logs.String())
		}
		cl.Close()
	}

	// A read_committed consumer reads up to the sentinels, which follow
	// everything written before the kill.
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]int{}
	missing := func() int {
		n := 0
		for _, k := range sentinels {
			if seen[k] == 0 {
				n++
			}
		}
		return n
	}
	for missing() > 0 {
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		fs := cons.PollFetches(pctx)
		timedOut := pctx.Err() != nil
		pcancel()
		if timedOut {
			t.Fatalf("read_committed consumer missing %d of %d sentinels\nbroker log:\n%s", missing(), len(sentinels), logs.String())
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)]++ })
	}

	mu.Lock()
	defer mu.Unlock()
	known := map[string]bool{}
	for _, k := range sentinels {
		known[k] = true
	}
	var committed, aborted, inFlight, inFlightVisible, unfinished int
	for _, x := range txns {
		visible := 0
		for _, k := range x.keys {
			known[k] = true
			visible += seen[k]
		}
		switch x.outcome {
		case txnCommitted:
			committed++
			if visible != len(x.keys) {
				t.Errorf("committed transaction %v: %d of %d records visible", x.keys, visible, len(x.keys))
			}
		case txnCommitInFlight:
			inFlight++
			if visible != 0 && visible != len(x.keys) {
				t.Errorf("transaction %v committed halfway: %d of %d records visible", x.keys, visible, len(x.keys))
			}
			if visible != 0 {
				inFlightVisible++
			}
		case txnAborted, txnOpen:
			if x.outcome == txnAborted {
				aborted++
			} else {
				unfinished++
			}
			if visible != 0 {
				t.Errorf("aborted or unfinished transaction %v: %d records visible", x.keys, visible)
			}
		}
	}
	var strange []string
	for k, n := range seen {
		if !known[k] {
			strange = append(strange, k)
		}
		if n > 1 {
			t.Errorf("record %s read %d times", k, n)
		}
	}
	sort.Strings(strange)
	if len(strange) > 0 {
		t.Errorf("records of no transaction: %v", strange)
	}
	t.Logf("%d committed, %d aborted, %d unfinished, %d commits in flight (%d visible)",
		committed, aborted, unfinished, inFlight, inFlightVisible)
}

// syncBuffer is a bytes.Buffer a child process may write to while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitListeningFn is waitListening for a log read through a function.
func waitListeningFn(t *testing.T, addr string, logs func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond) // polling the port
	}
	t.Fatalf("broker did not listen on %s; log:\n%s", addr, logs())
}
