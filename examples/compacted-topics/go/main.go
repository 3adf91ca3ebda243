// Command compacted-topics walks through a compacted topic with franz-go:
// create a topic with cleanup.policy=compact, write two versions of user-42
// and a tombstone for user-7, read all three back, then wait for the cleaner
// and read again: user-42=v2 now comes first, at offset 1.
//
//	go run ./examples/compacted-topics/go [bootstrap] [topic]
//
// Defaults: localhost:9092 and walkthrough-go. SKIP_COMPACTION=1 stops after
// the first read; WAIT_SECONDS (default 60) bounds the wait for the cleaner.
// Exit status: 0 done, 1 a step failed, 3 the cleaner did not run in time.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	bootstrap, topic := "localhost:9092", "walkthrough-go"
	if len(os.Args) > 1 {
		bootstrap = os.Args[1]
	}
	if len(os.Args) > 2 {
		topic = os.Args[2]
	}
	wait := 60
	if s := os.Getenv("WAIT_SECONDS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			wait = n
		}
	}
	if err := walkthrough(bootstrap, topic, os.Getenv("SKIP_COMPACTION") == "1", time.Duration(wait)*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		if errors.Is(err, errNotCompacted) {
			os.Exit(3)
		}
		os.Exit(1)
	}
}

var errNotCompacted = errors.New("not compacted in time")

type rec struct {
	offset int64
	key    string
	value  *string
}

func (r rec) String() string {
	v := "<tombstone>"
	if r.value != nil {
		v = *r.value
	}
	return fmt.Sprintf("offset %d: %s=%s", r.offset, r.key, v)
}

func walkthrough(bootstrap, topic string, skipCompaction bool, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second+wait)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return err
	}
	defer cl.Close()

	// 1. A compacted topic. segment.ms and min.cleanable.dirty.ratio are low so that
	// the cleaner picks this tiny topic up within seconds.
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.ms":                kadm.StringPtr("1000"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("create topic %s: %w", topic, resp.Err)
	}
	fmt.Printf("created compacted topic %s\n", topic)

	// 2. Two versions of user-42, then a tombstone (nil value) for user-7.
	if err := cl.ProduceSync(ctx,
		&kgo.Record{Key: []byte("user-42"), Value: []byte("v1")},
		&kgo.Record{Key: []byte("user-42"), Value: []byte("v2")},
		&kgo.Record{Key: []byte("user-7"), Value: nil},
	).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	fmt.Println("produced user-42=v1, user-42=v2 and a tombstone for user-7")

	// 3. All three are there before compaction.
	got, err := readAll(ctx, bootstrap, topic, 3)
	if err != nil {
		return err
	}
	for _, r := range got {
		fmt.Println("  ", r)
	}
	if err := expect(got, []string{"offset 0: user-42=v1", "offset 1: user-42=v2", "offset 2: user-7=<tombstone>"}); err != nil {
		return err
	}
	if skipCompaction {
		return nil
	}

	// 4. Wait for the cleaner: user-42=v1 goes, offsets stay as they were.
	fmt.Printf("waiting up to %s for the cleaner...\n", wait)
	deadline := time.Now().Add(wait)
	for {
		got, err = readAll(ctx, bootstrap, topic, 2)
		if err == nil && len(got) > 0 && got[0].offset == 1 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: the log still starts with %v", errNotCompacted, got)
		}
		time.Sleep(time.Second)
	}
	for _, r := range got {
		fmt.Println("  ", r)
	}
	return expect(got, []string{"offset 1: user-42=v2", "offset 2: user-7=<tombstone>"})
}

// readAll reads the first n records of partition 0 from the start of the log.
func readAll(ctx context.Context, bootstrap, topic string, n int) ([]rec, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out []rec
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, fmt.Errorf("read %d of %d records: %w", len(out), n, ctx.Err())
		}
		if err := fs.Err(); err != nil {
			return out, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			var v *string
			if r.Value != nil {
				s := string(r.Value)
				v = &s
			}
			out = append(out, rec{r.Offset, string(r.Key), v})
		})
	}
	return out[:n], nil
}

func expect(got []rec, want []string) error {
	for i, w := range want {
		if i >= len(got) || got[i].String() != w {
			return fmt.Errorf("record %d: want %q, got %v", i, w, got)
		}
	}
	return nil
}
