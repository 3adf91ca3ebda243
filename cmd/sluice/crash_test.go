package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/testport"
)

// The real binary, killed with SIGKILL while producers are running, must
// give back every record it acknowledged once it restarts on the same data
// directory, and keep offsets dense (no record twice, none missing).
func TestKillDashNineLosesNoAcknowledgedRecord(t *testing.T) {
	bin := sluiceBinary(t)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	addr := freeAddr(t)
	start := func() (*exec.Cmd, *bytes.Buffer) {
		var logs bytes.Buffer
		cmd := exec.Command(bin, "--listen", addr, "--data-dir", dataDir, "--metrics-listen", "")
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		waitListening(t, addr, &logs)
		return cmd, &logs
	}

	cmd, _ := start()
	const topic = "crash"
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		// No retries and no idempotence: every record is written at most
		// once, and a producer stuck on the dead broker gives up in time.
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(3*time.Second),
		kgo.ProducerLinger(0), kgo.RequestTimeoutOverhead(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if resp, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}

	// Produce until well past the kill; remember what was acknowledged.
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v := fmt.Sprintf("w%d-%06d", w, i)
				r := &kgo.Record{Key: []byte(v), Value: bytes.Repeat([]byte(v), 20)}
				pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
				err := cl.ProduceSync(pctx, r).FirstErr()
				pcancel()
				if err != nil {
					return // the broker is gone
				}
				mu.Lock()
				acked[v] = true
				mu.Unlock()
			}
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 2000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d records acknowledged before the deadline", n)
		}
		time.Sleep(10 * time.Millisecond) // polling the counter
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	close(stop)
	wg.Wait()
	cl.Close()
	mu.Lock()
	want := len(acked)
	mu.Unlock()

	_, logs := start()
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]bool{}
	next := map[int32]int64{}
	for found := 0; found < want; {
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		fs := cons.PollFetches(pctx)
		timedOut := pctx.Err() != nil
		pcancel()
		if timedOut {
			t.Fatalf("after restart only %d of %d acknowledged records came back\nbroker log:\n%s", found, want, logs.String())
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d after %d (offsets must be dense)", r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition]++
			k := string(r.Key)
			if seen[k] {
				t.Fatalf("record %s stored twice", k)
			}
			seen[k] = true
			if acked[k] {
				found++
			}
		})
	}
}

// freeAddr returns a 127.0.0.1 address free now and reserved for the test
// (internal/testport: a binary started, killed and restarted on it must not
// find it taken by another listener or client connection in between).
func freeAddr(t *testing.T) string {
	t.Helper()
	return testport.Addr(t)
}

func waitListening(t *testing.T, addr string, logs *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond) // polling the port
	}
	t.Fatalf("broker did not listen on %s; log:\n%s", addr, logs.String())
}
