package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cmdFreePort prints a port that was free on 127.0.0.1 a moment ago.
func cmdFreePort(stdout io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, port)
	return err
}

// cmdAPIs prints the names (kmsg.NameForKey) of the API keys the broker
// advertises, comma-separated, so that runners can skip a scenario whose
// API the broker does not serve yet instead of failing on it.
func cmdAPIs(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("apis", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap", "127.0.0.1:9092", "broker address")
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	names, err := advertisedAPIs(*bootstrap, *timeout)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, strings.Join(names, ","))
	return err
}

func advertisedAPIs(bootstrap string, timeout time.Duration) ([]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("ApiVersions to %s: %w", bootstrap, err)
	}
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("ApiVersions to %s: error code %d", bootstrap, resp.ErrorCode)
	}
	names := make([]string, 0, len(resp.ApiKeys))
	for _, k := range resp.ApiKeys {
		names = append(names, kmsg.NameForKey(k.ApiKey))
	}
	return names, nil
}
