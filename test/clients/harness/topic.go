package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// configFlags collects repeated -config name=value flags.
type configFlags map[string]*string

func (c configFlags) String() string { return "" }

func (c configFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=value, got %q", s)
	}
	c[name] = &value
	return nil
}

// cmdCreateTopic creates a one-partition topic with configs, for runners
// whose client has no admin API (kcat).
func cmdCreateTopic(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("create-topic", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap", "127.0.0.1:9092", "broker address")
	topic := fs.String("topic", "", "topic name (required)")
	partitions := fs.Int("partitions", 1, "partition count")
	configs := configFlags{}
	fs.Var(configs, "config", "topic config name=value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *topic == "" {
		return fmt.Errorf("create-topic: -topic is required")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(*bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(*partitions), 1, configs, *topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", *topic, err)
	}
	_, err = fmt.Fprintf(stdout, "created %s\n", *topic)
	return err
}
