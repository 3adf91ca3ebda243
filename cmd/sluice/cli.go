package main

// The client commands' shared machinery: "sluice NOUN VERB [args] [flags]"
// over the Kafka protocol with franz-go's client and admin client. Every
// verb takes the connection flags of clientFlags; positional arguments may
// come before or after the flags.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/config"
)

// verb is one "sluice NOUN VERB": setup registers its own flags and returns
// the function that runs it with the positional arguments.
type verb struct {
	name, args, doc  string
	minArgs, maxArgs int // positional argument counts; maxArgs -1 is unbounded
	setup            func(fs *flag.FlagSet) func(c *cmd, args []string) error
}

// noun is a group of verbs ("topic", "group", ...). A noun with one
// unnamed verb ("produce", "consume") runs it directly.
type noun struct {
	name, doc string
	verbs     []verb
}

// usageError is an error that exits 2 (bad command line), not 1.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// cmd is a running verb: its output, connection settings and a lazily made
// client.
type cmd struct {
	ctx            context.Context
	name           string // "sluice topic create"
	stdout, stderr io.Writer
	getenv         func(string) string
	conn           *clientFlags
	cl             *kgo.Client
	adm            *kadm.Client
	warned         bool // about unused client properties, once
}

// admin returns the admin client, connecting on first use.
func (c *cmd) admin() (*kadm.Client, error) {
	if c.adm != nil {
		return c.adm, nil
	}
	cl, err := c.newClient()
	if err != nil {
		return nil, err
	}
	c.cl, c.adm = cl, kadm.NewClient(cl)
	return c.adm, nil
}

// newClient makes a client with the connection settings and more options.
func (c *cmd) newClient(more ...kgo.Opt) (*kgo.Client, error) {
	opts, err := c.conn.options()
	if err != nil {
		return nil, usageError{err.Error()}
	}
	if !c.warned {
		c.warned = true
		if props, err := c.conn.properties(); err == nil {
			warnUnusedProps(c.stderr, props) // client_props.go
		}
	}
	return kgo.NewClient(append(opts, more...)...)
}

func (c *cmd) close() {
	if c.cl != nil {
		c.cl.Close()
	}
}

// runNoun runs "sluice NAME VERB ..." (args follow NAME). invoked is the name
// the user typed (an alias such as "topics" prints as such).
func runNoun(ctx context.Context, n noun, invoked string, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	single := len(n.verbs) == 1 && n.verbs[0].name == ""
	if !single {
		if len(args) == 0 {
			nounUsage(stderr, n, invoked)
			return 2
		}
		if a := args[0]; a == "-h" || a == "--help" || a == "-help" || a == "help" {
			nounUsage(stdout, n, invoked)
			return 0
		}
	}
	var v *verb
	rest := args
	if single {
		v = &n.verbs[0]
	} else {
		for i := range n.verbs {
			if n.verbs[i].name == args[0] {
				v = &n.verbs[i]
			}
		}
		if v == nil {
			fmt.Fprintf(stderr, "sluice %s: unknown verb %q (want %s; sluice %s --help)\n", invoked, args[0], verbList(n), invoked)
			return 2
		}
		rest = args[1:]
	}
	name := strings.TrimSpace("sluice " + invoked + " " + v.name)
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if askedForHelp(rest) {
		fs.SetOutput(stdout) // asked-for help goes to stdout, once
	}
	run := v.setup(fs)
	conn := addClientFlags(fs, getenv)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s %s[flags]\n\n%s\n\nFlags:\n", name, withSpace(v.args), capitalize(v.doc))
		printFlagDefaults(fs)
	}
	var pos []string
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(pos) < v.minArgs {
		what := v.args
		if !single {
			what = n.name + " " + what
		}
		fmt.Fprintf(stderr, "%s: missing %s\n", name, what)
		fs.Usage()
		return 2
	}
	if v.maxArgs >= 0 && len(pos) > v.maxArgs {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", name, pos[v.maxArgs])
		return 2
	}
	c := &cmd{ctx: ctx, name: name, stdout: stdout, stderr: stderr, getenv: getenv, conn: conn}
	defer c.close()
	if err := run(c, pos); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

// askedForHelp reports whether args hold -h, -help or --help before "--".
func askedForHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func withSpace(s string) string {
	if s == "" {
		return ""
	}
	return s + " "
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

func verbList(n noun) string {
	names := make([]string, len(n.verbs))
	for i, v := range n.verbs {
		names[i] = v.name
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func nounUsage(w io.Writer, n noun, invoked string) {
	fmt.Fprintf(w, "Usage: sluice %s VERB [args] [flags]\n\n%s\n\nVerbs:\n", invoked, capitalize(n.doc))
	for _, v := range n.verbs {
		fmt.Fprintf(w, "  %-15s %s\n", v.name, v.doc)
		fmt.Fprintf(w, "  %-15s %s\n", "", strings.TrimSpace("sluice "+invoked+" "+v.name+" "+v.args))
	}
	fmt.Fprintf(w, "\n%s\nsluice %s VERB --help lists a verb's flags.\n", connectionHelp, invoked)
}

const connectionHelp = `Every verb takes --bootstrap host:port [$SLUICE_BOOTSTRAP], --tls, --tls-ca FILE,
--sasl-mechanism, --user, --password [$SLUICE_PASSWORD], --command-config FILE
[$SLUICE_COMMAND_CONFIG] and -X name=value (Kafka client properties); defaults come
from the profile $SLUICE_CLI_CONFIG, else ~/.config/sluice/cli.properties.`

// clientFlags are the connection settings every client verb takes.
type clientFlags struct {
	getenv                                                       func(string) string
	bootstrap, commandConfig, tlsCA, saslMechanism, user, passwd string
	tls                                                          bool
	props                                                        propFlags
	timeout                                                      time.Duration
}

// propFlags collects repeated name=value flags in order.
type propFlags map[string]*string

func (c propFlags) String() string { return "" }
func (c propFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=value, got %q", v)
	}
	c[name] = &value
	return nil
}

func addClientFlags(fs *flag.FlagSet, getenv func(string) string) *clientFlags {
	c := &clientFlags{getenv: getenv, props: propFlags{}}
	fs.StringVar(&c.bootstrap, "bootstrap", "", "`host:port`[,host:port...] of the brokers (default: $SLUICE_BOOTSTRAP, the profile's bootstrap.servers, else localhost:9092)")
	fs.StringVar(&c.commandConfig, "command-config", getenv("SLUICE_COMMAND_CONFIG"), "Kafka client properties `file` (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*) [$SLUICE_COMMAND_CONFIG]")
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS (security.protocol SSL, or SASL_SSL with --sasl-mechanism)")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "PEM `file` of the CA certificates to trust (implies --tls; default: the system's)")
	fs.StringVar(&c.saslMechanism, "sasl-mechanism", "", "SASL `mechanism`: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	fs.StringVar(&c.user, "user", "", "SASL user `name`")
	fs.StringVar(&c.passwd, "password", getenv("SLUICE_PASSWORD"), "SASL `password` [$SLUICE_PASSWORD]")
	fs.Var(c.props, "X", "Kafka client property `name=value` (repeatable), e.g. -X security.protocol=SSL")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "how long to wait for the brokers' answers")
	return c
}

// profilePath is $SLUICE_CLI_CONFIG, else cli.properties in the user's
// config directory ("" if there is none).
func profilePath(getenv func(string) string) (path string, explicit bool) {
	if p := getenv("SLUICE_CLI_CONFIG"); p != "" {
		return p, true
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		if home := getenv("HOME"); home != "" {
			dir = filepath.Join(home, ".config")
		}
	}
	if dir == "" {
		return "", false
	}
	return filepath.Join(dir, "sluice", "cli.properties"), false
}

func readProps(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	props, err := config.ParseProperties(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return props, nil
}

// properties resolves the client properties: the profile, overlaid by
// --command-config, by -X, then by the dedicated flags.
func (c *clientFlags) properties() (map[string]string, error) {
	props := map[string]string{}
	if path, explicit := profilePath(c.getenv); path != "" {
		p, err := readProps(path)
		switch {
		case err == nil:
			for k, v := range p {
				props[k] = v
			}
		case explicit || !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("profile: %w", err)
		}
	}
	if c.commandConfig != "" {
		p, err := readProps(c.commandConfig)
		if err != nil {
			return nil, fmt.Errorf("--command-config %w", err)
		}
		for k, v := range p {
			props[k] = v
		}
	}
	for k, v := range c.props {
		props[k] = *v
	}
	if b := c.getenv("SLUICE_BOOTSTRAP"); b != "" {
		props["bootstrap.servers"] = b
	}
	if c.bootstrap != "" {
		props["bootstrap.servers"] = c.bootstrap
	}
	if props["bootstrap.servers"] == "" {
		props["bootstrap.servers"] = "localhost:9092"
	}
	if c.tlsCA != "" {
		props["ssl.truststore.location"] = c.tlsCA
		props["ssl.truststore.type"] = "PEM"
		delete(props, "ssl.truststore.certificates")
		c.tls = true
	}
	if c.saslMechanism != "" {
		props["sasl.mechanism"] = c.saslMechanism
	}
	if c.user != "" {
		props["sasl.username"] = c.user
	}
	if c.passwd != "" {
		props["sasl.password"] = c.passwd
	}
	sasl := c.saslMechanism != "" || c.user != ""
	proto := strings.ToUpper(props["security.protocol"])
	switch {
	case c.tls && (sasl || strings.HasPrefix(proto, "SASL_")):
		props["security.protocol"] = "SASL_SSL"
	case c.tls:
		props["security.protocol"] = "SSL"
	case sasl && (proto == "" || proto == "PLAINTEXT"):
		props["security.protocol"] = "SASL_PLAINTEXT"
	case sasl && proto == "SSL":
		props["security.protocol"] = "SASL_SSL"
	}
	return props, nil
}

// options are the franz-go options for the resolved properties.
func (c *clientFlags) options() ([]kgo.Opt, error) {
	props, err := c.properties()
	if err != nil {
		return nil, err
	}
	var seeds []string
	for _, s := range strings.Split(props["bootstrap.servers"], ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	opts, err := propsOptions(props)
	if err != nil {
		return nil, err
	}
	return append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.RequestTimeoutOverhead(c.timeout), kgo.RetryTimeout(c.timeout)}, opts...), nil
}

// bootstrapAddr is the first resolved bootstrap address.
func (c *clientFlags) bootstrapAddr() string {
	props, err := c.properties()
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(props["bootstrap.servers"], ",")
	return strings.TrimSpace(first)
}

// deadline bounds an admin call by --timeout.
func (c *cmd) deadline() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, c.conn.timeout)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
