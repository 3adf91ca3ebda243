// Command sluice runs a single-node Kafka-compatible broker.
//
//	sluice [--listen host:port] [--data-dir DIR] [--advertise host:port]
//	       [--config FILE] [--metrics-listen host:port] [--version]
//
// Each flag can also be given as an environment variable (SLUICE_LISTEN,
// SLUICE_DATA_DIR, SLUICE_ADVERTISE, SLUICE_CONFIG, SLUICE_METRICS_LISTEN);
// a flag wins over its variable. --config names a server.properties-style
// file with Apache Kafka's broker config names; an unknown name or a bad
// value is an error (an unknown name with a "did you mean"). Its listeners (PLAINTEXT, SSL, SASL_PLAINTEXT,
// SASL_SSL; docs/security.md) are served unless --listen gives one
// PLAINTEXT address instead. The first argument not starting with '-' is a
// subcommand: the client commands of commands.go ("sluice topic ...",
// "group", "produce", "consume", "cluster", "user", "compaction status"),
// "sluice completion bash|zsh", "sluice version" and "sluice help [COMMAND]".
//
// This file is a thin layer over broker.Server: parse, start, wait for
// SIGINT/SIGTERM, shut down cleanly.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	"github.com/sluice-broker/sluice/internal/broker"
	"github.com/sluice-broker/sluice/internal/compact"
	"github.com/sluice-broker/sluice/internal/config"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise the module version from the build info is used.
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// buildVersion is the version the broker logs at startup and "sluice
// version" prints first: the -X override, else the module version, else
// "dev"; a VCS revision from the build is appended to a "dev" version
// (dev-0123456789ab, and -dirty for uncommitted changes).
func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(bi, version)
}

func readBuildInfo() (*debug.BuildInfo, string) {
	bi, _ := debug.ReadBuildInfo()
	return bi, version
}

func versionOf(bi *debug.BuildInfo, override string) string {
	if override != "" {
		return override
	}
	v := "dev"
	if bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if rev, _, dirty := vcsInfo(bi); v == "dev" && rev != "" {
		v += "-" + shortRev(rev)
		if dirty {
			v += "-dirty"
		}
	}
	return v
}

// versionLine is what "sluice version" and "sluice --version" print:
//
//	sluice v1.2.3 (commit 0123456789ab, 2026-12-01T10:00:00Z, modified) go1.26.8 linux/amd64
func versionLine(bi *debug.BuildInfo, override string) string {
	var b strings.Builder
	b.WriteString("sluice " + versionOf(bi, override))
	if rev, at, dirty := vcsInfo(bi); rev != "" {
		b.WriteString(" (commit " + shortRev(rev))
		if at != "" {
			b.WriteString(", " + at)
		}
		if dirty {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	goVersion := runtime.Version()
	if bi != nil && bi.GoVersion != "" {
		goVersion = bi.GoVersion
	}
	b.WriteString(" " + goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH)
	return b.String()
}

func vcsInfo(bi *debug.BuildInfo) (rev, at string, dirty bool) {
	if bi == nil {
		return "", "", false
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	return rev, at, dirty
}

func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// defaultMetricsListen serves /metrics and the compaction status that
// "sluice compaction status" reads; if it is taken the broker starts without
// it (an explicitly given address that cannot be bound is an error).
const defaultMetricsListen = compact.DefaultStatusAddr

// settings are the resolved command-line options.
type settings struct {
	listen, dataDir, advertise, configFile, metricsListen string
	logLevel, logFormat                                   string // "" takes the config file's (logging.go)
	consoleListen                                         string // "" takes console.listen from the file (console.go)
	showVersion                                           bool
	listenSet                                             bool // --listen or SLUICE_LISTEN given
	metricsSet                                            bool // --metrics-listen or SLUICE_METRICS_LISTEN given
}

const topLevelUsage = `Usage: sluice [flags]                 run a Kafka-compatible broker (one node; a cluster node
                                      when --config sets controller.quorum.voters)
       sluice COMMAND [args]

Commands:
%s  dev cluster [--nodes 3]              run a local multi-node cluster (docs/cluster.md)
  format --add-scram SPEC              SCRAM users of a new cluster's controller listener (docs/cluster.md)
  completion bash|zsh                  a shell completion script
  version                              print the version, commit and Go version
  help [COMMAND]                       this text, or a command's

Broker flags:
`

// envNames maps each flag to its environment variable.
var envNames = map[string]string{
	"listen":         "SLUICE_LISTEN",
	"data-dir":       "SLUICE_DATA_DIR",
	"advertise":      "SLUICE_ADVERTISE",
	"config":         "SLUICE_CONFIG",
	"metrics-listen": "SLUICE_METRICS_LISTEN",
	"log-level":      "SLUICE_LOG_LEVEL",
	"log-format":     "SLUICE_LOG_FORMAT",
	"console-listen": "SLUICE_CONSOLE_LISTEN",
}

// parseArgs parses flags over environment defaults. It returns the
// subcommand ("" for the broker itself) and its remaining arguments.
func parseArgs(args []string, getenv func(string) string, stderr io.Writer) (settings, string, []string, error) {
	var s settings
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return s, args[0], args[1:], nil
	}
	fs := flag.NewFlagSet("sluice", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(flagName, def string) string {
		if v := getenv(envNames[flagName]); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&s.listen, "listen", env("listen", "localhost:9092"), "`host:port` of one PLAINTEXT listener for Kafka clients (localhost = 127.0.0.1 and ::1); replaces listeners from --config [$SLUICE_LISTEN]")
	fs.StringVar(&s.dataDir, "data-dir", env("data-dir", ""), "`directory` for logs and metadata (default ./data, or log.dirs from --config) [$SLUICE_DATA_DIR]")
	fs.StringVar(&s.advertise, "advertise", env("advertise", ""), "`host:port` clients are told to connect to, for the first listener (default: its listen address) [$SLUICE_ADVERTISE]")
	fs.StringVar(&s.configFile, "config", env("config", ""), "server.properties-style `file` with Kafka broker configs [$SLUICE_CONFIG]")
	fs.StringVar(&s.metricsListen, "metrics-listen", env("metrics-listen", defaultMetricsListen), "`host:port` for /metrics, /healthz, /readyz and /compaction/status (default: sluice.metrics.listen from --config, else "+defaultMetricsListen+"); \"\" turns it off [$SLUICE_METRICS_LISTEN]")
	fs.StringVar(&s.logLevel, "log-level", env("log-level", ""), "least severe `level` logged: debug, info, warn or error (default: sluice.log.level from --config, else info) [$SLUICE_LOG_LEVEL]")
	fs.StringVar(&s.logFormat, "log-format", env("log-format", ""), "log line `format`: text or json (default: sluice.log.format from --config, else text) [$SLUICE_LOG_FORMAT]")
	fs.StringVar(&s.consoleListen, "console-listen", env("console-listen", ""), "`host:port` of the built-in web console (default: console.listen from --config, else off; docs/console.md) [$SLUICE_CONSOLE_LISTEN]")
	fs.BoolVar(&s.showVersion, "version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), topLevelUsage, clientCommandsHelp()) // help.go
		printFlagDefaults(fs)
	}
	if err := fs.Parse(args); err != nil {
		return s, "", nil, err
	}
	if fs.NArg() > 0 {
		return s, "", nil, fmt.Errorf("unexpected argument %q (flags must come before it; subcommands come first)", fs.Arg(0))
	}
	s.listenSet = getenv(envNames["listen"]) != ""
	s.metricsSet = getenv(envNames["metrics-listen"]) != ""
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "listen" {
			s.listenSet = true
		}
		if f.Name == "metrics-listen" {
			s.metricsSet = true
		}
	})
	return s, "", nil, nil
}

// run is main without the process: it returns the exit code. The broker
// stops when ctx is cancelled (SIGINT/SIGTERM in main).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	usageOut := stderr // asked-for help goes to stdout, as a usage error's does not
	if len(args) > 0 && strings.HasPrefix(args[0], "-") {
		for _, a := range args {
			if a == "-h" || a == "-help" || a == "--help" {
				usageOut = stdout
			}
		}
	}
	s, sub, subArgs, err := parseArgs(args, getenv, usageOut)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice: %v\n", err)
		return 2
	}
	switch sub {
	case "help":
		if len(subArgs) > 0 && subArgs[0] != "help" {
			// "sluice help topics" is "sluice topics --help".
			return run(ctx, []string{subArgs[0], "--help"}, getenv, stdout, stderr)
		}
		parseArgs([]string{"--help"}, getenv, stdout)
		return 0
	case "version":
		if len(subArgs) == 1 && askedForHelp(subArgs) {
			fmt.Fprint(stdout, versionUsage)
			return 0
		}
		if len(subArgs) > 0 {
			fmt.Fprintf(stderr, "sluice version: unexpected argument %q\n", subArgs[0])
			return 2
		}
		fmt.Fprintln(stdout, versionLine(readBuildInfo()))
		return 0
	case "dev":
		return devCommand(ctx, subArgs, stdout, stderr) // dev_cluster.go
	case "completion":
		return completionCommand(subArgs, stdout, stderr) // completion.go
	case "format":
		return formatCommand(subArgs, getenv, stdout, stderr) // format.go
	}
	if code, ok := runClientCommand(ctx, sub, subArgs, getenv, stdout, stderr); ok { // commands.go
		return code
	}
	if sub != "" {
		fmt.Fprintf(stderr, "sluice: unknown command %q (sluice help lists the commands)\n", sub)
		return 2
	}
	if s.showVersion {
		fmt.Fprintln(stdout, versionLine(readBuildInfo()))
		return 0
	}
	cfg := config.DefaultBroker()
	if s.configFile != "" {
		props, err := config.LoadBrokerFile(s.configFile)
		if err != nil {
			fmt.Fprintf(stderr, "sluice: config file %s: %v\n", s.configFile, err)
			return 2
		}
		if cfg, err = config.NewBroker(props); err != nil {
			printConfigErrors(stderr, s.configFile, err) // configfile.go
			return 2
		}
	}
	logger, err := newLogger(s, cfg, stderr) // logging.go
	if err != nil {
		fmt.Fprintf(stderr, "sluice: %v\n", err)
		return 2
	}
	warnNoEffect(logger, cfg)

	// server.properties' listeners / advertised.listeners (with their
	// security protocols) apply unless a flag or environment variable gave
	// the address: --listen serves one PLAINTEXT listener, as always;
	// --advertise overrides the first listener's advertised address.
	listen := ""
	if s.listenSet {
		listen = s.listen
	}
	dataDir := s.dataDir
	if dataDir == "" {
		switch len(cfg.LogDirs) {
		case 0:
			dataDir = "data"
		case 1:
			dataDir = cfg.LogDirs[0]
		default:
			fmt.Fprintf(stderr, "sluice: log.dirs lists %d directories; Sluice uses one data directory (--data-dir)\n", len(cfg.LogDirs))
			return 2
		}
	}

	// The metrics address: the flag or variable, else sluice.metrics.listen
	// from the file, else the default, which alone may be busy.
	metricsListen, metricsOptional := s.metricsListen, !s.metricsSet
	if v, ok := cfg.Raw["sluice.metrics.listen"]; ok && !s.metricsSet {
		metricsListen, metricsOptional = v, false
	}

	srv := broker.NewServer(broker.Options{
		Listen:        listen,
		DataDir:       dataDir,
		Advertise:     s.advertise,
		MetricsListen: metricsListen,
		// Only the default address may fail softly.
		MetricsOptional: metricsOptional,
		Config:          cfg,
		Logger:          logger,
		Version:         buildVersion(),
	})
	consoleLn, err := bindConsole(s, cfg) // console.go
	if err != nil {
		logger.Error("sluice failed to start", "err", err)
		return 1
	}
	if err := srv.Start(); err != nil {
		logger.Error("sluice failed to start", "err", err)
		if consoleLn != nil {
			consoleLn.Close()
		}
		return 1
	}
	con, err := startConsole(s, cfg, srv, consoleLn, logger) // console.go
	if err != nil {
		logger.Error("sluice failed to start", "err", err)
		srv.Close()
		return 1
	}
	<-ctx.Done()
	logger.Info("shutting down", "reason", context.Cause(ctx))
	if con != nil {
		con.Close()
	}
	if err := srv.Close(); err != nil {
		logger.Error("shutdown finished with errors", "err", err)
		return 1
	}
	return 0
}

// warnNoEffect logs each config the file sets that Sluice accepts for
// compatibility but does not act on (replication knobs, Java security
// providers...), so nobody believes, say, ssl.provider changed anything.
func warnNoEffect(logger *slog.Logger, cfg *config.Broker) {
	names := make([]string, 0, len(cfg.Raw))
	for name := range cfg.Raw {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if def, ok := config.LookupBroker(name); ok && strings.HasPrefix(def.Effect, "accepted, no effect") {
			logger.Warn("config accepted for compatibility but not acted on", "name", name, "effect", def.Effect)
		}
	}
}
