// Command kfake runs franz-go's in-memory kfake cluster as a one-broker
// Kafka on 127.0.0.1 so that the benchmark harness (bench/cmd/compare) can
// drive it over TCP like the other targets and measure its process alone.
//
//	kfake --port 19192
//
// It prints "ready <addr>" on stdout once listening and runs until SIGINT or
// SIGTERM. It owns nothing but this process; it is never part of the broker.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "TCP port on 127.0.0.1 (0 picks one)")
	flag.Parse()

	c, err := kfake.NewCluster(
		kfake.Ports(*port), // one port means one broker, on 127.0.0.1
		kfake.ClusterID("bench-kfake"),
	)
	if err != nil {
		slog.Error("kfake failed to start", "err", err)
		os.Exit(1)
	}
	fmt.Printf("ready %s\n", c.ListenAddrs()[0])

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	c.Close()
}
