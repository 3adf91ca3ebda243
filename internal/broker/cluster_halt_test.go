package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// Finding 10 of docs/reliability.md: a node whose metadata log cannot be
// written (a full disk) halts, with a clear log line, rather than serve
// stale metadata forever with a stopped quorum member.
func TestClusterHaltsOnMetadataLogWriteError(t *testing.T) {
	port := freePorts(t, 1)[0]
	fsys := vfs.NewFaulty(vfs.OS())
	var mu sync.Mutex
	var halted []error
	tb := startTestBroker(t, testOptions{Quiet: true, FS: fsys, Props: map[string]string{
		"node.id":                               "1",
		"process.roles":                         "broker,controller",
		"controller.quorum.voters":              fmt.Sprintf("1@127.0.0.1:%d", port),
		"controller.quorum.election.timeout.ms": "500",
		"broker.session.timeout.ms":             "1500",
		"broker.heartbeat.interval.ms":          "100",
	}, Halt: func(err error) {
		mu.Lock()
		halted = append(halted, err)
		mu.Unlock()
	}})
	adm := tb.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitFor(t, "the node to serve", func() bool {
		md, err := adm.Metadata(kadm.WithAuthorizedOps(ctx)) // not from kgo's cache
		return err == nil && len(md.Brokers) == 1
	})
	fsys.Add(vfs.Rule{Op: "write", PathContains: "raft.wal", Err: syscall.ENOSPC})
	// Any metadata change writes the raft log (it never commits); asked
	// again until the node halts (a try may fail before it is proposed).
	c := tb.broker().cluster
	waitFor(t, "the node to halt", func() bool {
		mu.Lock()
		n := len(halted)
		mu.Unlock()
		if n > 0 {
			return true
		}
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		defer ccancel()
		var resp controller.TopicResponse
		_ = callController(cctx, c, "create-topic", c.ctrl.CreateTopic,
			controller.CreateTopicRequest{Name: "halt-me", Partitions: 1, ReplicationFactor: 1}, &resp)
		return false
	})
	mu.Lock()
	err := halted[0]
	mu.Unlock()
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "raft.wal") {
		t.Fatalf("halted with %v, want the raft log's write error", err)
	}
	if !strings.Contains(tb.logs.text(), "halting: fatal error on the metadata log") {
		t.Fatal("no log line says why the node halts")
	}
	// The stopped quorum member's error comes back from Close (the
	// process would have exited).
	fsys.Clear()
	_ = tb.srv.Close()
	tb.srv = nil
}

// A cluster node whose partition log fails (an append that cannot be
// written nor cut back) halts too, as Kafka's broker does when its only
// log directory fails, rather than stay a replica that never catches up.
func TestClusterHaltsOnFailedPartitionLog(t *testing.T) {
	port := freePorts(t, 1)[0]
	fsys := vfs.NewFaulty(vfs.OS())
	var mu sync.Mutex
	var halted []error
	tb := startTestBroker(t, testOptions{Quiet: true, FS: fsys, Props: map[string]string{
		"node.id":                               "1",
		"process.roles":                         "broker,controller",
		"controller.quorum.voters":              fmt.Sprintf("1@127.0.0.1:%d", port),
		"controller.quorum.election.timeout.ms": "500",
		"broker.session.timeout.ms":             "1500",
		"broker.heartbeat.interval.ms":          "100",
	}, Halt: func(err error) {
		mu.Lock()
		halted = append(halted, err)
		mu.Unlock()
	}})
	adm := tb.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitFor(t, "the topic", func() bool {
		res, err := adm.CreateTopic(ctx, 1, 1, nil, "lf")
		return err == nil && (res.Err == nil || strings.Contains(res.Err.Error(), "TOPIC_ALREADY_EXISTS"))
	})
	fsys.Add(vfs.Rule{Op: "write", PathContains: "lf-0", Err: syscall.ENOSPC})
	fsys.Add(vfs.Rule{Op: "truncate", PathContains: "lf-0"})
	// Produced again until the node halts: a produce may fail before it
	// reaches the log (the partition's leader not published yet).
	cl := tb.client(kgo.RecordRetries(0), kgo.RequestRetries(0))
	waitFor(t, "the node to halt", func() bool {
		mu.Lock()
		n := len(halted)
		mu.Unlock()
		if n > 0 {
			return true
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		defer pcancel()
		_ = cl.ProduceSync(pctx, &kgo.Record{Topic: "lf", Value: []byte("x")}).FirstErr()
		return false
	})
	mu.Lock()
	err := halted[0]
	mu.Unlock()
	if !strings.Contains(err.Error(), "lf-0") {
		t.Fatalf("halted with %v, want the failed log of lf-0", err)
	}
	fsys.Clear()
	_ = tb.srv.Close()
	tb.srv = nil
}
