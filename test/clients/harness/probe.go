package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cmdFreePort prints -n ports (one a line) that were free on 127.0.0.1 a
// moment ago; they are held open together, so they are distinct.
func cmdFreePort(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("freeport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 1, "how many ports")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 || *n > 100 {
		return fmt.Errorf("freeport: -n must be 1 to 100, got %d", *n)
	}
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var out strings.Builder
	for range *n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		lns = append(lns, ln)
		fmt.Fprintln(&out, ln.Addr().(*net.TCPAddr).Port)
	}
	_, err := io.WriteString(stdout, out.String())
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
	versions, err := advertisedVersions(bootstrap, timeout)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(versions))
	for _, v := range versions {
		names = append(names, v.Name)
	}
	return names, nil
}

// APIVersion is one key of an ApiVersions response, named.
type APIVersion struct {
	Key  int16  `json:"key"`
	Name string `json:"name"`
	Min  int16  `json:"min"`
	Max  int16  `json:"max"`
}

// advertisedVersions asks the broker for ApiVersions, in the broker's order.
func advertisedVersions(bootstrap string, timeout time.Duration) ([]APIVersion, error) {
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
	out := make([]APIVersion, 0, len(resp.ApiKeys))
	for _, k := range resp.ApiKeys {
		out = append(out, APIVersion{Key: k.ApiKey, Name: kmsg.NameForKey(k.ApiKey), Min: k.MinVersion, Max: k.MaxVersion})
	}
	return out, nil
}

// cmdAPIVersions writes the broker's ApiVersions (key, name, min, max) as
// JSON, for collect -api-versions and so for docs/compatibility.md.
func cmdAPIVersions(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("api-versions", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap", "127.0.0.1:9092", "broker address")
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	out := fs.String("out", "", "write the JSON here (default: stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	versions, err := advertisedVersions(*bootstrap, *timeout)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(versions, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if *out == "" {
		_, err = stdout.Write(data)
		return err
	}
	return os.WriteFile(*out, data, 0o644)
}
