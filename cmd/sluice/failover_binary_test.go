package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterLeaderKilledFailover starts three sluice processes with the
// default timeouts (broker.session.timeout.ms 9000), a topic with
// replication factor 3 and min.insync.replicas 2, and SIGKILLs a partition's
// leader: first one that is not the active controller, then the active
// controller (leading a partition too). After each kill a producer that knew
// the old leader (acks=all, idempotent) produces to that partition until a
// record is acknowledged, which only a new leader can do. The times from the
// kill to the new leader in a survivor's Metadata and to that first
// acknowledgement are logged (docs/cluster.md), not asserted; the test checks
// that the controller fenced the dead broker because its process was gone
// (not at its session's end), that the killed node rejoins the in-sync set,
// and that every acknowledged record is read back at its offset.
//
// SLUICE_FAILOVER_KILLS=N makes N kills (alternating as above) for a
// measurement; SLUICE_FAILOVER_BINARY runs another sluice binary (an
// earlier build, for a comparison: then the fast path is not checked).
func TestClusterLeaderKilledFailover(t *testing.T) {
	bin := sluiceBinary(t)
	fastPath := true
	if b := os.Getenv("SLUICE_FAILOVER_BINARY"); b != "" {
		bin, fastPath = b, false
	}
	kills := 2
	if n, err := strconv.Atoi(os.Getenv("SLUICE_FAILOVER_KILLS")); err == nil && n > 0 {
		kills = n
	}
	procs, seeds := startProcCluster(t, bin, "auto.leader.rebalance.enable=false")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	newClient := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	// metadata asks the brokers at addrs one by one, directly (a client's
	// cached metadata or a request to a dead node would hide the change).
	direct := map[string]*kgo.Client{}
	for _, a := range seeds {
		direct[a] = newClient(kgo.SeedBrokers(a))
	}
	metadata := func(addrs ...string) *kmsg.MetadataResponse {
		for _, a := range addrs {
			mctx, mcancel := context.WithTimeout(ctx, 2*time.Second)
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("failover")
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(mctx, direct[a].SeedBrokers()[0])
			mcancel()
			if err == nil && len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 {
				return resp
			}
		}
		return nil
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	adm := kadm.NewClient(newClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(10*time.Second)))
	waitFor("three brokers", func() bool {
		for _, a := range seeds {
			mctx, mcancel := context.WithTimeout(ctx, 2*time.Second)
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(mctx, direct[a].SeedBrokers()[0])
			mcancel()
			if err != nil || len(resp.Brokers) != 3 {
				return false
			}
		}
		return true
	})
	waitFor("the topic", func() bool {
		res, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, "failover")
		return err == nil && (res.Err == nil || strings.Contains(res.Err.Error(), "TOPIC_ALREADY_EXISTS"))
	})
	// allInSync: every partition led and with three in-sync replicas, as
	// every node sees it.
	allInSync := func() bool {
		for _, a := range seeds {
			md := metadata(a)
			if md == nil || len(md.Topics[0].Partitions) != 3 {
				return false
			}
			for _, p := range md.Topics[0].Partitions {
				if p.Leader < 1 || len(p.ISR) != 3 {
					return false
				}
			}
		}
		return true
	}
	type at struct {
		p   int32
		off int64
	}
	acked := map[string]at{}
	// MetadataMinAge as the fault checker's clients: franz-go's default
	// (5 s) would make the client, not the cluster, decide the time.
	pr := newClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("failover"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MetadataMinAge(250*time.Millisecond))
	seq := 0
	produce := func(p int32, timeout time.Duration) error {
		v := fmt.Sprintf("v%05d", seq)
		seq++
		pctx, pcancel := context.WithTimeout(ctx, timeout)
		defer pcancel()
		r := kgo.StringRecord(v)
		r.Partition = p
		if err := pr.ProduceSync(pctx, r).FirstErr(); err != nil {
			return err
		}
		acked[v] = at{r.Partition, r.Offset}
		return nil
	}
	var metaTimes, produceTimes []time.Duration
	for round := range kills {
		waitFor("every partition with three in-sync replicas", allInSync)
		md := metadata(seeds...)
		ctl := md.ControllerID
		// The victim leads a partition; in odd rounds it is the active
		// controller, in even ones it is not.
		var victim *clusterProc
		var part int32 = -1
		for _, p := range md.Topics[0].Partitions {
			if (p.Leader == ctl) == (round%2 == 1) {
				victim, part = procs[p.Leader-1], p.Partition
				break
			}
		}
		if victim == nil {
			t.Fatalf("round %d: no partition led as wanted (controller %d)", round, ctl)
		}
		for range 20 { // the producer knows the leader
			if err := produce(part, 30*time.Second); err != nil {
				t.Fatalf("produce before the kill: %v", err)
			}
		}
		var survivors []string
		for _, p := range procs {
			if p != victim {
				survivors = append(survivors, p.addr)
			}
		}
		fencedBefore := fastFences(procs, victim)
		killed := time.Now()
		victim.kill(t)
		metaDone := make(chan time.Duration, 1)
		go func() {
			for time.Since(killed) < 60*time.Second && ctx.Err() == nil {
				if md := metadata(survivors...); md != nil {
					if l := md.Topics[0].Partitions[part].Leader; l > 0 && l != int32(victim.id) {
						metaDone <- time.Since(killed)
						return
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			metaDone <- 0
		}()
		for {
			err := produce(part, 5*time.Second)
			if err == nil {
				break
			}
			if time.Since(killed) > 60*time.Second {
				t.Fatalf("round %d: no record acknowledged within 60 s of the leader's death: %v", round, err)
			}
		}
		produced := time.Since(killed)
		meta := <-metaDone
		if meta == 0 {
			t.Fatalf("round %d: no new leader in the survivors' metadata within 60 s", round)
		}
		metaTimes, produceTimes = append(metaTimes, meta), append(produceTimes, produced)
		t.Logf("round %d: node %d (leader of partition %d, active controller: %v) SIGKILLed: new leader in Metadata after %v, first acks=all record acknowledged after %v",
			round, victim.id, part, int32(victim.id) == ctl, meta.Round(time.Millisecond), produced.Round(time.Millisecond))
		if fastPath {
			waitFor("the fast path's fencing in a survivor's log", func() bool {
				return fastFences(procs, victim) > fencedBefore
			})
		}
		victim.start(t, bin)
	}
	waitFor("every partition with three in-sync replicas at the end", allInSync)
	summary := func(ds []time.Duration) string {
		s := slices.Clone(ds)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return fmt.Sprintf("median %v, max %v (%d kills)", s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), len(s))
	}
	t.Logf("new leader in Metadata: %s; first record acknowledged: %s", summary(metaTimes), summary(produceTimes))

	cl := newClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("failover"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]at{}
	for len(got) < len(acked) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back %d of %d acknowledged records", len(got), len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = at{r.Partition, r.Offset} })
	}
	for v, want := range acked {
		if got[v] != want {
			t.Fatalf("record %s acknowledged at %v, read at %v", v, want, got[v])
		}
	}
}

// fastFences counts the lines of the other nodes' logs saying that the
// controller fenced victim because its process was gone.
func fastFences(procs []*clusterProc, victim *clusterProc) int {
	n := 0
	for _, p := range procs {
		if p == victim {
			continue
		}
		for _, line := range strings.Split(p.logs.String(), "\n") {
			if strings.Contains(line, "its process is gone") && strings.Contains(line, fmt.Sprintf("broker=%d ", victim.id)) {
				n++
			}
		}
	}
	return n
}
