package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterBrokerOnlyProcessKilled runs one combined node (the only
// voter) and two broker-only processes that know the quorum only through
// controller.quorum.bootstrap.servers, places a replication-factor-2 topic
// on all three, SIGKILLs a broker-only process leading partitions, and
// checks that the controller fences it and moves its leaderships to the
// other replicas.
func TestClusterBrokerOnlyProcessKilled(t *testing.T) {
	bin := sluiceBinary(t)
	dir := t.TempDir()
	ctl := freeAddr(t)
	var procs []*clusterProc
	for i := range 3 {
		p := &clusterProc{id: i + 1, addr: freeAddr(t), props: filepath.Join(dir, fmt.Sprintf("node%d.properties", i+1))}
		lines := []string{
			fmt.Sprintf("node.id=%d", i+1),
			"log.dirs=" + filepath.Join(dir, fmt.Sprintf("data%d", i+1)),
			"offsets.topic.num.partitions=3",
			"broker.heartbeat.interval.ms=200",
			"broker.session.timeout.ms=2000",
		}
		if i == 0 {
			lines = append(lines, "process.roles=broker,controller", "controller.quorum.voters=1@"+ctl,
				fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://%s", p.addr, ctl), "controller.listener.names=CONTROLLER",
				"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT")
		} else {
			lines = append(lines, "process.roles=broker", "controller.quorum.bootstrap.servers="+ctl,
				"listeners=PLAINTEXT://"+p.addr)
		}
		if err := os.WriteFile(p.props, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p.start(t, bin)
		procs = append(procs, p)
	}
	defer func() {
		if t.Failed() {
			for _, p := range procs {
				t.Logf("--- node %d log ---\n%s", p.id, p.logs.String())
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(procs[0].addr), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	waitMeta := func(what string, cond func(kadm.Metadata) bool) kadm.Metadata {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			mctx, mcancel := context.WithTimeout(ctx, 5*time.Second)
			// WithAuthorizedOps makes kadm ask the broker rather than
			// answer from kgo's metadata cache (up to 5 s old).
			md, err := adm.Metadata(kadm.WithAuthorizedOps(mctx))
			mcancel()
			if err == nil && cond(md) {
				return md
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (err %v, brokers %v)", what, err, md.Brokers.NodeIDs())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitMeta("three brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	if res, err := adm.CreateTopic(ctx, 6, 2, nil, "spread"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	waitMeta("leaders on the broker-only nodes", func(md kadm.Metadata) bool {
		led := map[int32]int{}
		for _, p := range md.Topics["spread"].Partitions {
			led[p.Leader]++
		}
		return len(md.Topics["spread"].Partitions) == 6 && led[2] > 0 && led[3] > 0 && led[-1] == 0
	})
	killed := time.Now()
	procs[2].kill(t)
	waitMeta("node 3 fenced and its leaderships moved", func(md kadm.Metadata) bool {
		if len(md.Brokers) != 2 {
			return false
		}
		for _, p := range md.Topics["spread"].Partitions {
			if p.Leader == 3 || p.Leader < 0 {
				return false
			}
		}
		return true
	})
	t.Logf("leaderships moved %.1f s after the SIGKILL (broker.session.timeout.ms=2000)", time.Since(killed).Seconds())

	// sluice cluster health names the partitions that lost their replica on
	// node 3 and exits 1.
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, code := runCLI(t, bin, nil, "cluster", "health", "--bootstrap", procs[0].addr)
		if code == 1 && strings.Contains(out, "brokers: 2,") && regexp.MustCompile(`(?m)^under-replicated partitions: [1-9]`).MatchString(out) &&
			regexp.MustCompile(`(?m)^  spread-\d \(in sync \[[12]\] of \[[123] [123]\]\)$`).MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster health never reported the under-replicated partitions (exit %d):\n%s", code, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
