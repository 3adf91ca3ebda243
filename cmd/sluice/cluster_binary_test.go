package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterProc is one sluice process of a three-node cluster started from
// server.properties files, as an operator would.
type clusterProc struct {
	id    int
	addr  string
	props string
	cmd   *exec.Cmd
	logs  *syncBuffer
	done  chan struct{}
}

func (p *clusterProc) start(t *testing.T, bin string) {
	t.Helper()
	p.logs = &syncBuffer{}
	p.cmd = exec.Command(bin, "--config", p.props, "--metrics-listen", "")
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.done = make(chan struct{})
	cmd, done := p.cmd, p.done
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
}

func (p *clusterProc) kill(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("node %d did not die", p.id)
	}
}

// TestClusterOfProcesses runs three sluice processes from server.properties
// files with Kafka's KRaft names, produces to a topic spread over them,
// SIGKILLs the active controller, and checks that another node takes over
// (topics can be created again), that the killed node rejoins, and that
// every acknowledged record is read back at its offset. The failover times
// with the default timeouts are logged (docs/cluster.md), not asserted.
func TestClusterOfProcesses(t *testing.T) {
	bin := sluiceBinary(t)
	procs, seeds := startProcCluster(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adminOf := func(addrs ...string) *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RetryTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	waitMeta := func(adm *kadm.Client, what string, cond func(kadm.Metadata) bool) kadm.Metadata {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			mctx, mcancel := context.WithTimeout(ctx, 5*time.Second)
			// WithAuthorizedOps makes kadm ask a broker rather than
			// answer from kgo's metadata cache (up to 5 s old).
			md, err := adm.Metadata(kadm.WithAuthorizedOps(mctx))
			mcancel()
			if err == nil && cond(md) {
				return md
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (err %v)", what, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	adm := adminOf(seeds...)
	md := waitMeta(adm, "three brokers and a controller", func(md kadm.Metadata) bool {
		return len(md.Brokers) == 3 && md.Controller > 0
	})
	if res, err := adm.CreateTopic(ctx, 6, 1, nil, "acked"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	waitMeta(adm, "the topic's leaders", func(md kadm.Metadata) bool {
		ps := md.Topics["acked"].Partitions
		if len(ps) != 6 {
			return false
		}
		for _, p := range ps {
			if p.Leader < 1 {
				return false
			}
		}
		return true
	})

	type at struct {
		p   int32
		off int64
	}
	acked := map[string]at{}
	pr, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("acked"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		v := fmt.Sprintf("v%04d", i)
		res := pr.ProduceSync(ctx, kgo.StringRecord(v))
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
		r := res[0].Record
		acked[v] = at{r.Partition, r.Offset}
	}
	pr.Close()

	// SIGKILL the active controller.
	ctl := md.Controller
	victim := procs[ctl-1]
	var survivors []string
	for _, p := range procs {
		if p != victim {
			survivors = append(survivors, p.addr)
		}
	}
	killed := time.Now()
	victim.kill(t)
	sadm := adminOf(survivors...)
	// "topic describe" shows the sizes of the partitions whose leaders
	// live, also while the dead broker is still registered (not yet fenced).
	sizesSeen := make(chan error, 1)
	go func() { sizesSeen <- describeSizesWithDeadBroker(bin, survivors, ctl) }()
	defer func() {
		if err := <-sizesSeen; err != nil {
			t.Error(err)
		}
	}()
	// Ask each survivor directly (a client's metadata request may go to
	// the dead node and wait for its timeout).
	direct := make([]*kgo.Client, len(survivors))
	for i, a := range survivors {
		cl, err := kgo.NewClient(kgo.SeedBrokers(a))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		direct[i] = cl
	}
	var newController time.Duration
	for newController == 0 {
		for _, cl := range direct {
			mctx, mcancel := context.WithTimeout(ctx, time.Second)
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(mctx, cl.SeedBrokers()[0])
			mcancel()
			if err == nil && resp.ControllerID > 0 && resp.ControllerID != ctl {
				newController = time.Since(killed)
			}
		}
		if time.Since(killed) > 60*time.Second {
			t.Fatalf("no new controller within 60 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var created time.Duration
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := sadm.CreateTopic(cctx, 3, 1, nil, "after-kill")
		ccancel()
		// TOPIC_ALREADY_EXISTS: an earlier try timed out here after the
		// controller had created the topic.
		if err == nil && (res.Err == nil || errors.Is(res.Err, kerr.TopicAlreadyExists)) {
			created = time.Since(killed)
			break
		}
		if time.Since(killed) > 60*time.Second {
			t.Fatalf("no topic creation within 60 s of the controller's death: %v %v", err, res.Err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitMeta(sadm, "the dead broker fenced", func(md kadm.Metadata) bool { return len(md.Brokers) == 2 })
	fenced := time.Since(killed)
	t.Logf("controller %d SIGKILLed: new controller seen after %v, CreateTopics succeeded after %v, broker fenced after %v "+
		"(controller.quorum.election.timeout.ms=1000, broker.session.timeout.ms=9000)", ctl, newController.Round(time.Millisecond),
		created.Round(time.Millisecond), fenced.Round(time.Millisecond))

	// "cluster quorum" shows the dead voter as not fetching (DescribeQuorum
	// v1's LastFetchTimestamp -1), the live ones with an age.
	deadRow := regexp.MustCompile(fmt.Sprintf(`(?m)^%d +\d+ +\d+ +- +- +follower, not fetching$`, ctl))
	var quorumOut string
	for deadline := time.Now().Add(60 * time.Second); ; {
		out, _ := exec.Command(bin, "cluster", "quorum", "--bootstrap", strings.Join(survivors, ",")).CombinedOutput()
		quorumOut = string(out)
		if deadRow.MatchString(quorumOut) && strings.Count(quorumOut, " ago ") >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster quorum never showed voter %d as not fetching:\n%s", ctl, quorumOut)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The killed node restarts on its data directory and catches up.
	victim.start(t, bin)
	adm = adminOf(seeds...)
	waitMeta(adm, "all three brokers and every leader back", func(md kadm.Metadata) bool {
		if len(md.Brokers) != 3 {
			return false
		}
		if _, ok := md.Topics["after-kill"]; !ok {
			return false
		}
		for _, p := range md.Topics["acked"].Partitions {
			if p.Leader < 1 {
				return false
			}
		}
		return true
	})
	// The restarted node itself knows the topic created while it was dead.
	waitMeta(adminOf(victim.addr), "the restarted node's metadata", func(md kadm.Metadata) bool {
		_, ok := md.Topics["after-kill"]
		return ok
	})

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("acked"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
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

// describeSizesWithDeadBroker runs "sluice topic describe acked" against the
// survivors until one run made while broker dead was still registered (before
// and after the run) shows a size for every partition with a live leader,
// or, once the broker is fenced, any run does. 60 s deadline.
func describeSizesWithDeadBroker(bin string, survivors []string, dead int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(survivors[0]))
	if err != nil {
		return err
	}
	defer cl.Close()
	registered := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.SeedBrokers()[0])
		if err != nil {
			return false
		}
		for _, b := range resp.Brokers {
			if b.NodeID == dead {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		before := registered()
		out, err := exec.Command(bin, "topic", "describe", "acked", "--bootstrap", strings.Join(survivors, ",")).CombinedOutput()
		after := registered()
		last = string(out)
		if err == nil {
			missing, live := 0, 0
			inTable := false
			for _, l := range strings.Split(last, "\n") {
				f := strings.Fields(l)
				if len(f) > 0 && f[0] == "PARTITION" {
					inTable = true
					continue
				}
				if !inTable || len(f) < 8 || f[1] == "-1" || f[1] == fmt.Sprint(dead) {
					continue
				}
				live++
				if f[7] == "-" {
					missing++
				}
			}
			if live > 0 && missing == 0 {
				return nil
			}
			if live > 0 && before && after {
				return fmt.Errorf("topic describe with broker %d dead but registered: %d of %d live partitions without a size:\n%s", dead, missing, live, last)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("topic describe never showed the sizes of the live partitions within 60 s:\n%s", last)
}

// startProcCluster starts three combined sluice processes of bin from
// server.properties files with Kafka's KRaft names (extra: more lines of
// each file), logs their output if the test fails, and returns them with
// their Kafka addresses.
func startProcCluster(t *testing.T, bin string, extra ...string) ([]*clusterProc, []string) {
	t.Helper()
	dir := t.TempDir()
	var procs []*clusterProc
	var voters []string
	ctlAddrs := make([]string, 3)
	for i := range 3 {
		ctlAddrs[i] = freeAddr(t)
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, ctlAddrs[i]))
	}
	for i := range 3 {
		p := &clusterProc{id: i + 1, addr: freeAddr(t), props: filepath.Join(dir, fmt.Sprintf("node%d.properties", i+1))}
		lines := []string{
			fmt.Sprintf("node.id=%d", i+1),
			"process.roles=broker,controller",
			"controller.quorum.voters=" + strings.Join(voters, ","),
			fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://%s", p.addr, ctlAddrs[i]),
			"controller.listener.names=CONTROLLER",
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"log.dirs=" + filepath.Join(dir, fmt.Sprintf("data%d", i+1)),
			"offsets.topic.num.partitions=3",
		}
		conf := strings.Join(append(append(lines, extra...), ""), "\n")
		if err := os.WriteFile(p.props, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		p.start(t, bin)
		procs = append(procs, p)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range procs {
				t.Logf("--- node %d log ---\n%s", p.id, p.logs.String())
			}
		}
	})
	var seeds []string
	for _, p := range procs {
		seeds = append(seeds, p.addr)
	}
	return procs, seeds
}
