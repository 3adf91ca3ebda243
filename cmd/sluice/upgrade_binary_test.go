package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestUpgradeFromPreviousBinary runs a previous release's binary
// (SLUICE_PREVIOUS_BINARY, built from an older commit of this repository:
// docs/cluster.md, "Upgrading a single node in place") on a data directory,
// then this binary (no quorum config: a one-voter quorum) on the same directory, and
// checks that everything the single node held is kept: cluster id, topic id,
// configs, records at their offsets (read_committed), committed offsets,
// SCRAM credentials, and producer and transaction state (the transactional
// id goes on with a bumped epoch, the idempotent producer's next sequence is
// accepted and a duplicate is not written twice). A second start imports
// nothing again. Skipped without SLUICE_PREVIOUS_BINARY.
func TestUpgradeFromPreviousBinary(t *testing.T) {
	prev := os.Getenv("SLUICE_PREVIOUS_BINARY")
	if prev == "" {
		t.Skip("set SLUICE_PREVIOUS_BINARY to a previous release's sluice binary")
	}
	bin := sluiceBinary(t)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	plainAddr, saslAddr := freeAddr(t), freeAddr(t)
	props := fmt.Sprintf("listeners=PLAINTEXT://%s,SASL_PLAINTEXT://%s\nsasl.enabled.mechanisms=SCRAM-SHA-256\n"+
		"offsets.topic.num.partitions=3\ntransaction.state.log.num.partitions=3\n", plainAddr, saslAddr)
	oldCfg, newCfg := filepath.Join(dir, "old.properties"), filepath.Join(dir, "new.properties")
	if err := os.WriteFile(oldCfg, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	// No quorum config: a one-voter quorum by default.
	if err := os.WriteFile(newCfg, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func(binary, cfg string) (*exec.Cmd, *syncBuf) {
		logs := &syncBuf{}
		cmd := exec.Command(binary, "--config", cfg, "--data-dir", dataDir, "--metrics-listen", "")
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(logs.String(), "sluice started") {
			if time.Now().After(deadline) {
				t.Fatalf("no startup line:\n%s", logs)
			}
			time.Sleep(20 * time.Millisecond) // polling the log
		}
		return cmd, logs
	}
	stop := func(cmd *exec.Cmd, logs *syncBuf) {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("exit: %v\n%s", err, logs)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	client := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(plainAddr)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	const topic, group, txnID = "kept", "kept-group", "kept-txn"

	// The previous release: a topic with a config, a committed and an
	// aborted transaction, idempotent records, committed offsets, a SCRAM user.
	cmd, logs := start(prev, oldCfg)
	adm := kadm.NewClient(client())
	if r, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": kmsg.StringPtr("7200000")}, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"}}); err != nil {
		t.Fatal(err)
	}
	txnProduce := func(commit bool, values ...string) {
		t.Helper()
		cl := client(kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("transactional produce: %v", err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction: %v", err)
		}
		cl.Close()
	}
	txnProduce(true, "t1", "t2")
	txnProduce(false, "aborted")
	idem := client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := idem.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("i1")}, &kgo.Record{Partition: 1, Value: []byte("i2")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	idem.Close()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 2, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: topic, Partition: 1, At: 1, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, group, offs); err != nil || r.Error() != nil {
		t.Fatalf("commit offsets: %v %v", err, r.Error())
	}
	type state struct {
		clusterID, topicID string
		ends               map[int32]int64
	}
	snapshot := func(adm *kadm.Client) state {
		t.Helper()
		var st state
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		st.clusterID = md.Cluster
		st.topicID = fmt.Sprint(md.Topics[topic].ID)
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		st.ends = map[int32]int64{}
		ends.Each(func(o kadm.ListedOffset) { st.ends[o.Partition] = o.Offset })
		return st
	}
	before := snapshot(adm)
	stop(cmd, logs)

	// This binary on the same directory, twice: the first start imports.
	var t3At int64
	for run := 1; run <= 2; run++ {
		cmd, logs = start(bin, newCfg)
		imported := strings.Contains(logs.String(), "upgraded a single-node data directory in place")
		if imported != (run == 1) {
			t.Fatalf("start %d: imported=%v\n%s", run, imported, logs)
		}
		adm = kadm.NewClient(client())
		if got := snapshot(adm); got.clusterID != before.clusterID || got.topicID != before.topicID || fmt.Sprint(got.ends) != fmt.Sprint(before.ends) {
			t.Fatalf("start %d: cluster id, topic id, end offsets %+v, want %+v", run, got, before)
		}
		rc, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := rc.On(topic, nil); err != nil || !hasConfig(c.Configs, "retention.ms", "7200000") {
			t.Fatalf("start %d: topic configs %+v %v", run, c, err)
		}
		fetched, err := adm.FetchOffsets(ctx, group)
		if err != nil || fetched.Error() != nil {
			t.Fatalf("start %d: fetch offsets: %v %v", run, err, fetched.Error())
		}
		if o, _ := fetched.Lookup(topic, 0); o.At != 2 {
			t.Fatalf("start %d: committed offset of %s-0 is %d, want 2", run, topic, o.At)
		}
		if o, _ := fetched.Lookup(topic, 1); o.At != 1 {
			t.Fatalf("start %d: committed offset of %s-1 is %d, want 1", run, topic, o.At)
		}
		// The SCRAM user logs in.
		sc, err := kgo.NewClient(kgo.SeedBrokers(saslAddr), kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		err = sc.Ping(ctx)
		sc.Close()
		if err != nil {
			t.Fatalf("start %d: SCRAM login: %v\n%s", run, err, logs)
		}
		// read_committed: t1, t2 at their offsets, the aborted record hidden.
		want := []string{"0/0=t1", "0/1=t2", "1/0=i1", "1/1=i2"}
		if run == 2 {
			want = append(want, fmt.Sprintf("0/%d=t3", t3At))
		}
		got := consumeN(ctx, t, client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), len(want), run)
		if slices.Sort(want); got != strings.Join(want, " ") {
			t.Fatalf("start %d: read_committed records %q, want %q", run, got, want)
		}
		if run == 1 {
			// The transactional id goes on (its epoch is fenced and bumped).
			t3At = before.ends[0]
			txnProduce(true, "t3")
			before = snapshot(adm)
		}
		stop(cmd, logs)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "quorum")); err != nil {
		t.Fatalf("no metadata quorum directory after the upgrade: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "quorum-upgrade.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("upgrade marker left behind: %v", err)
	}
}

func hasConfig(cs []kadm.Config, name, value string) bool {
	for _, c := range cs {
		if c.Key == name && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}

// consumeN reads n records and lists them as partition/offset=value,
// sorted.
func consumeN(ctx context.Context, t *testing.T, cl *kgo.Client, n, run int) string {
	t.Helper()
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < n {
		if time.Now().After(deadline) {
			t.Fatalf("start %d: consumed only %v", run, got)
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachError(func(_ string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("start %d: fetch partition %d: %v", run, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, fmt.Sprintf("%d/%d=%s", r.Partition, r.Offset, r.Value))
		})
	}
	slices.Sort(got)
	return strings.Join(got, " ")
}
