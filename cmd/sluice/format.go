package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sluice-broker/sluice/internal/broker"
	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/vfs"
)

const formatUsage = `Usage: sluice format [--config FILE] [--data-dir DIR] --add-scram SPEC [--add-scram SPEC ...]

Prepares a node's data directory for a new cluster, as Kafka's kafka-storage
format does. Optional: a node starts without it. It is needed only for SCRAM
on the controller listener (sasl.mechanism.controller.protocol=SCRAM-SHA-256
or SCRAM-SHA-512): the nodes must log in to each other before they agree on
any metadata, so the credentials come from the data directory. Format every
node of the new cluster with the same credentials; the first controller
commits them with the cluster id, and from then on they are ordinary SCRAM
users of the cluster (sluice user).

SPEC is Kafka's: 'SCRAM-SHA-512=[name=admin,password=admin-secret]'
(optionally iterations=N, 4096 to 16384; default 4096). The data directory
is --data-dir, else SLUICE_DATA_DIR, else log.dirs of --config, else ./data.
A data directory that already holds a metadata log is refused.

Flags:
`

// scramSpecs collects --add-scram flags.
type scramSpecs []broker.BootstrapScram

func (s *scramSpecs) String() string { return "" }

func (s *scramSpecs) Set(v string) error {
	c, err := parseScramSpec(v)
	if err != nil {
		return err
	}
	*s = append(*s, c)
	return nil
}

// parseScramSpec reads 'SCRAM-SHA-512=[name=alice,password=alice-secret]'
// (values may be double-quoted, as in Kafka's examples).
func parseScramSpec(v string) (broker.BootstrapScram, error) {
	var c broker.BootstrapScram
	mech, rest, ok := strings.Cut(strings.TrimSpace(v), "=")
	if !ok || !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return c, fmt.Errorf("%q: want MECHANISM=[name=USER,password=PASSWORD]", v)
	}
	c.Mechanism = strings.ToUpper(strings.TrimSpace(mech))
	for _, kv := range strings.Split(rest[1:len(rest)-1], ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return c, fmt.Errorf("%q: %q is not key=value", v, kv)
		}
		val = strings.TrimSpace(val)
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			val = val[1 : len(val)-1]
		}
		switch strings.TrimSpace(k) {
		case "name":
			c.User = val
		case "password":
			c.Password = val
		case "iterations":
			n, err := strconv.Atoi(val)
			if err != nil {
				return c, fmt.Errorf("%q: iterations %q is not a number", v, val)
			}
			c.Iterations = n
		default:
			return c, fmt.Errorf("%q: unknown key %q (name, password, iterations)", v, k)
		}
	}
	if c.User == "" || c.Password == "" {
		return c, fmt.Errorf("%q: name and password are required", v)
	}
	return c, nil
}

// formatCommand is "sluice format".
func formatCommand(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice format", flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(stdout)
		}
	}
	configFile := fs.String("config", getenv("SLUICE_CONFIG"), "a server.properties `file` (for log.dirs)")
	dataDir := fs.String("data-dir", getenv("SLUICE_DATA_DIR"), "the node's data `directory`")
	var specs scramSpecs
	fs.Var(&specs, "add-scram", "a SCRAM credential for the new cluster, `SPEC` as above (repeatable)")
	fs.Var(&specs, "S", "same as --add-scram")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), formatUsage)
		printFlagDefaults(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice format: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if len(specs) == 0 {
		fmt.Fprintln(stderr, "sluice format: nothing to do: give --add-scram (a node needs no format step otherwise)")
		return 2
	}
	dir := *dataDir
	if dir == "" && *configFile != "" {
		props, err := config.LoadBrokerFile(*configFile)
		if err != nil {
			fmt.Fprintf(stderr, "sluice format: config file %s: %v\n", *configFile, err)
			return 2
		}
		cfg, err := config.NewBroker(props)
		if err != nil {
			printConfigErrors(stderr, *configFile, err) // configfile.go
			return 2
		}
		switch len(cfg.LogDirs) {
		case 0:
		case 1:
			dir = cfg.LogDirs[0]
		default:
			fmt.Fprintf(stderr, "sluice format: log.dirs lists %d directories; Sluice uses one data directory\n", len(cfg.LogDirs))
			return 2
		}
	}
	if dir == "" {
		dir = "data"
	}
	if err := broker.FormatBootstrapScram(vfs.OS(), dir, specs); err != nil {
		fmt.Fprintf(stderr, "sluice format: %v\n", err)
		return 1
	}
	for _, c := range specs {
		fmt.Fprintf(stdout, "%s: %s credential of %s for the new cluster\n", dir, c.Mechanism, c.User)
	}
	return 0
}
