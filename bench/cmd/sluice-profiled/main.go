// Command sluice-profiled is the Sluice broker with Go's net/http/pprof
// endpoints on a side listener, for the benchmark harness's --profile mode.
// cmd/sluice has no profiling endpoint and the harness must not change it,
// so this wraps the same embeddable broker.Server:
//
//	sluice-profiled --listen 127.0.0.1:PORT --data-dir DIR --pprof-listen 127.0.0.1:PORT2 [--config FILE]
//	sluice-profiled --config node-1.properties --pprof-listen 127.0.0.1:0   # a cluster node
//
// It owns only this process: it configures nothing the real binary does not
// (same defaults, same server.properties names) and must not be used outside
// bench/. Profiles come from http://PPROF/debug/pprof/profile?seconds=N.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/sluice-broker/sluice/internal/broker"
	"github.com/sluice-broker/sluice/internal/config"
)

func main() {
	listen := flag.String("listen", "", "host:port for Kafka clients (default: listeners from --config, else 127.0.0.1:9092)")
	dataDir := flag.String("data-dir", "", "data directory (default: log.dirs from --config, else data)")
	configFile := flag.String("config", "", "server.properties-style file")
	pprofListen := flag.String("pprof-listen", "127.0.0.1:0", "host:port for /debug/pprof/")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := run(*listen, *dataDir, *configFile, *pprofListen, logger); err != nil {
		logger.Error("sluice-profiled", "err", err)
		os.Exit(1)
	}
}

func run(listen, dataDir, configFile, pprofListen string, logger *slog.Logger) error {
	cfg := config.DefaultBroker()
	if configFile != "" {
		props, err := config.LoadBrokerFile(configFile)
		if err != nil {
			return err
		}
		if cfg, err = config.NewBroker(props); err != nil {
			return err
		}
	}
	// As cmd/sluice: the file's listeners and log.dirs apply unless a flag
	// gives them (a replicated run starts nodes from server.properties).
	if listen == "" && configFile == "" {
		listen = "127.0.0.1:9092"
	}
	if dataDir == "" {
		dataDir = "data"
		if len(cfg.LogDirs) == 1 {
			dataDir = cfg.LogDirs[0]
		}
	}
	// Block and mutex profiles are off by default; sample them lightly.
	runtime.SetBlockProfileRate(10_000) // one event per 10 µs blocked
	runtime.SetMutexProfileFraction(100)

	ln, err := net.Listen("tcp", pprofListen)
	if err != nil {
		return fmt.Errorf("pprof listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("pprof server", "err", err)
		}
	}()
	defer hs.Close()

	srv := broker.NewServer(broker.Options{
		Listen: listen, DataDir: dataDir, Config: cfg, Logger: logger, Version: "bench-profiled",
	})
	if err := srv.Start(); err != nil {
		return err
	}
	fmt.Printf("pprof %s\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return srv.Close()
}
