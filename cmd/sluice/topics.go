package main

// "sluice topics": a small admin client for the quick start and for scripts,
// since kcat has no admin API. It talks to a running broker (any Kafka
// broker, in fact) over the Kafka protocol with franz-go's admin client.
//
//	sluice topics create NAME [--partitions N] [--config name=value ...]
//	sluice topics list
//	sluice topics describe NAME
//	sluice topics delete NAME
//
// --bootstrap host:port (or SLUICE_BOOTSTRAP; default localhost:9092) picks
// the broker; --command-config FILE (or SLUICE_COMMAND_CONFIG) is a Kafka
// client properties file for a TLS or SASL listener (client_config.go).

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// configFlags collects repeated --config name=value flags.
type configFlags map[string]*string

func (c configFlags) String() string { return "" }
func (c configFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=value, got %q", v)
	}
	c[name] = &value
	return nil
}

// topicsVerbs are the topics verbs, with their arguments and what they do,
// in the order help lists them.
var topicsVerbs = []struct{ name, args, doc string }{
	{"create", "NAME [--partitions N] [--replication-factor 1] [--config name=value ...]", "create a topic"},
	{"list", "", "list topics and their partition counts"},
	{"describe", "NAME", "show a topic's id, partition count and configs (with their source)"},
	{"delete", "NAME", "delete a topic"},
}

func topicsUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: sluice topics VERB [NAME] [flags]")
	fmt.Fprintln(w, "\nVerbs:")
	for _, v := range topicsVerbs {
		fmt.Fprintf(w, "  %-9s %s\n", v.name, v.doc)
		fmt.Fprintf(w, "            sluice topics %s %s\n", v.name, v.args)
	}
	fmt.Fprintln(w, "\nEvery verb takes --bootstrap host:port [$SLUICE_BOOTSTRAP] and --command-config FILE [$SLUICE_COMMAND_CONFIG];")
	fmt.Fprintln(w, "sluice topics VERB --help lists a verb's flags.")
}

func topicsCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		topicsUsage(stderr)
		return 2
	}
	verb, rest := args[0], args[1:]
	if verb == "-h" || verb == "--help" || verb == "-help" || verb == "help" {
		topicsUsage(stdout)
		return 0
	}
	verbArgs, known := "", false
	for _, v := range topicsVerbs {
		if v.name == verb {
			verbArgs, known = v.args, true
		}
	}
	if !known {
		fmt.Fprintf(stderr, "sluice topics: unknown verb %q (want create, list, describe or delete; sluice topics --help)\n", verb)
		return 2
	}
	fs := flag.NewFlagSet("sluice topics "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: sluice topics %s [--bootstrap host:port] [--command-config FILE]\n\nFlags:\n", strings.TrimSpace(verb+" "+verbArgs))
		fs.PrintDefaults()
	}
	bootstrap := getenv("SLUICE_BOOTSTRAP")
	if bootstrap == "" {
		bootstrap = "localhost:9092"
	}
	fs.StringVar(&bootstrap, "bootstrap", bootstrap, "`host:port` of the broker [$SLUICE_BOOTSTRAP]")
	commandConfig := fs.String("command-config", getenv("SLUICE_COMMAND_CONFIG"),
		"Kafka client properties `file` for a TLS or SASL listener (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*) [$SLUICE_COMMAND_CONFIG]")
	partitions, replication := new(int), new(int)
	configs := configFlags{}
	if verb == "create" {
		fs.IntVar(partitions, "partitions", -1, "number of `partitions`; -1 takes the broker's num.partitions")
		fs.IntVar(replication, "replication-factor", -1, "replication `factor`: 1 (or -1, the broker default) on a single node")
		fs.Var(configs, "config", "topic config `name=value` (repeatable), e.g. cleanup.policy=compact")
	}
	// NAME may come before or after the flags.
	var name string
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stdout)
				fs.Usage()
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		if name != "" || verb == "list" {
			fmt.Fprintf(stderr, "sluice topics %s: unexpected argument %q\n", verb, fs.Arg(0))
			return 2
		}
		name, rest = fs.Arg(0), fs.Args()[1:]
	}
	if verb != "list" && name == "" {
		fmt.Fprintf(stderr, "sluice topics %s: missing topic NAME\n", verb)
		fs.Usage()
		return 2
	}

	opts := []kgo.Opt{kgo.SeedBrokers(bootstrap)}
	if *commandConfig != "" {
		more, err := clientOptions(*commandConfig)
		if err != nil {
			fmt.Fprintf(stderr, "sluice topics: --command-config %v\n", err)
			return 2
		}
		opts = append(opts, more...)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintf(stderr, "sluice topics: %v\n", err)
		return 1
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	fail := func(err error) int {
		fmt.Fprintf(stderr, "sluice topics %s: %v\n", verb, err)
		return 1
	}
	switch verb {
	case "create":
		// kadm returns the topic's error as err too, without its message.
		resp, err := adm.CreateTopic(ctx, int32(*partitions), int16(*replication), configs, name)
		if resp.Err != nil {
			err = withMessage(resp.Err, resp.ErrMessage)
		}
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "created topic %s (%d partitions)\n", name, resp.NumPartitions)
	case "delete":
		resp, err := adm.DeleteTopic(ctx, name)
		if resp.Err != nil {
			err = withMessage(resp.Err, resp.ErrMessage)
		}
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "deleted topic %s\n", name)
	case "list":
		details, err := adm.ListTopics(ctx)
		if err != nil {
			return fail(err)
		}
		for _, t := range details.Sorted() {
			fmt.Fprintf(stdout, "%s\t%d partitions\n", t.Topic, len(t.Partitions))
		}
	case "describe":
		details, err := adm.ListTopics(ctx, name)
		if err != nil {
			return fail(err)
		}
		t := details[name]
		if t.Err != nil {
			return fail(t.Err)
		}
		// Topic ids print as Kafka prints them: unpadded URL-safe base64.
		fmt.Fprintf(stdout, "%s\ttopic id %s\t%d partitions\n", name, base64.RawURLEncoding.EncodeToString(t.ID[:]), len(t.Partitions))
		rc, err := adm.DescribeTopicConfigs(ctx, name)
		if err != nil {
			return fail(err)
		}
		cfgs, err := rc.On(name, nil)
		if err == nil {
			err = withMessage(cfgs.Err, cfgs.ErrMessage)
		}
		if err != nil {
			return fail(err)
		}
		sort.Slice(cfgs.Configs, func(i, j int) bool { return cfgs.Configs[i].Key < cfgs.Configs[j].Key })
		for _, c := range cfgs.Configs {
			fmt.Fprintf(stdout, "  %s=%s\t(%s)\n", c.Key, c.MaybeValue(), c.Source)
		}
	}
	return 0
}

// withMessage prefers the broker's error message to the generic text of its
// error code: "INVALID_CONFIG: invalid value ..." rather than both.
func withMessage(err error, msg string) error {
	var ke *kerr.Error
	if err == nil || msg == "" || !errors.As(err, &ke) {
		return err
	}
	// Some brokers repeat the code's own text as the message.
	msg = strings.TrimPrefix(msg, ke.Message+": ")
	return fmt.Errorf("%s: %s", ke.Message, msg)
}
