package main

// "sluice topic" (alias "sluice topics"): create, list, describe,
// alter-config, add-partitions, trim-prefix and delete topics on a running
// broker (any Kafka broker) over the Kafka protocol.

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var topicNoun = noun{name: "topic", doc: "create, inspect, configure and delete topics", verbs: []verb{
	{"create", "NAME...", "create topics", 1, -1, topicCreate},
	{"list", "", "list topics and their partition counts (internal ones with --internal)", 0, 0, topicList},
	{"describe", "NAME", "show a topic's configs (overrides; --all for every one) and partitions: leader, replicas, in-sync set, log start and end offsets, size", 1, 1, topicDescribe},
	{"alter-config", "NAME", "set (--set name=value) or delete (--delete name) topic config overrides", 1, 1, topicAlterConfig},
	{"add-partitions", "NAME", "add partitions to a topic (-n count to add, or --to total)", 1, 1, topicAddPartitions},
	{"trim-prefix", "NAME", "delete the records before an offset (DeleteRecords): the log start offset moves up", 1, 1, topicTrimPrefix},
	{"delete", "NAME...", "delete topics", 1, -1, topicDelete},
}}

func topicCreate(fs *flag.FlagSet) func(*cmd, []string) error {
	partitions := fs.Int("partitions", -1, "number of `partitions`; -1 takes the broker's num.partitions")
	fs.IntVar(partitions, "p", -1, "short for --partitions")
	replication := fs.Int("replication-factor", -1, "replication `factor`; -1 takes the broker's default.replication.factor")
	fs.IntVar(replication, "r", -1, "short for --replication-factor")
	configs := propFlags{}
	fs.Var(configs, "config", "topic config `name=value` (repeatable), e.g. cleanup.policy=compact")
	fs.Var(configs, "c", "short for --config")
	return func(c *cmd, names []string) error {
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		resps, err := adm.CreateTopics(ctx, int32(*partitions), int16(*replication), configs, names...)
		if err != nil {
			return err
		}
		var failed error
		for _, name := range names {
			r := resps[name]
			if r.Err != nil {
				failed = withMessage(r.Err, r.ErrMessage)
				if len(names) > 1 {
					fmt.Fprintf(c.stderr, "%s: %s: %v\n", c.name, name, failed)
				}
				continue
			}
			fmt.Fprintf(c.stdout, "created topic %s (%s)\n", name, partitionCount(int(r.NumPartitions)))
		}
		if failed != nil && len(names) > 1 {
			return errors.New("some topics were not created")
		}
		return failed
	}
}

func topicList(fs *flag.FlagSet) func(*cmd, []string) error {
	internal := fs.Bool("internal", false, "list internal topics (__consumer_offsets, __transaction_state) too")
	fs.BoolVar(internal, "i", false, "short for --internal")
	return func(c *cmd, _ []string) error {
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		var details kadm.TopicDetails
		if *internal {
			details, err = adm.ListTopicsWithInternal(ctx)
		} else {
			details, err = adm.ListTopics(ctx)
		}
		if err != nil {
			return err
		}
		for _, t := range details.Sorted() {
			fmt.Fprintf(c.stdout, "%s\t%s\n", t.Topic, partitionCount(len(t.Partitions)))
		}
		return nil
	}
}

func topicDescribe(fs *flag.FlagSet) func(*cmd, []string) error {
	all := fs.Bool("all", false, "show every config with its source, not only those not at Kafka's default")
	fs.BoolVar(all, "a", false, "short for --all")
	return func(c *cmd, args []string) error {
		name := args[0]
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		details, err := adm.ListTopicsWithInternal(ctx, name)
		if err != nil {
			return err
		}
		t := details[name]
		if t.Err != nil {
			return t.Err
		}
		// Topic ids print as Kafka prints them: unpadded URL-safe base64.
		fmt.Fprintf(c.stdout, "%s\ttopic id %s\t%s\n", name, base64.RawURLEncoding.EncodeToString(t.ID[:]), partitionCount(len(t.Partitions)))
		rc, err := adm.DescribeTopicConfigs(ctx, name)
		if err != nil {
			return err
		}
		cfgs, err := rc.On(name, nil)
		if err == nil {
			err = withMessage(cfgs.Err, cfgs.ErrMessage)
		}
		if err != nil {
			return err
		}
		sort.Slice(cfgs.Configs, func(i, j int) bool { return cfgs.Configs[i].Key < cfgs.Configs[j].Key })
		title := "CONFIGS (not at the default; --all for every one)"
		if *all {
			title = "CONFIGS"
		}
		fmt.Fprintf(c.stdout, "\n%s\n", title)
		tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
		shown := 0
		for _, cf := range cfgs.Configs {
			if !*all && cf.Source == kmsg.ConfigSourceDefaultConfig {
				continue
			}
			v := cf.MaybeValue()
			if cf.Sensitive {
				v = "(sensitive)"
			}
			fmt.Fprintf(tw, "  %s=%s\t%s\n", cf.Key, v, cf.Source)
			shown++
		}
		tw.Flush()
		if shown == 0 {
			fmt.Fprintln(c.stdout, "  (none)")
		}

		starts, err := adm.ListStartOffsets(ctx, name)
		if err != nil {
			return err
		}
		ends, err := adm.ListEndOffsets(ctx, name)
		if err != nil {
			return err
		}
		sizes := topicSizes(ctx, adm, name, t) // topic_sizes.go: per broker, a dead one blanks only its own
		fmt.Fprintln(c.stdout, "\nPARTITIONS")
		tw = tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  PARTITION\tLEADER\tEPOCH\tREPLICAS\tIN-SYNC\tLOG-START\tLOG-END\tSIZE\tERROR")
		for _, p := range t.Partitions.Sorted() {
			size := "-"
			if s, ok := sizes[p.Partition]; ok {
				size = strconv.FormatInt(s, 10)
			}
			errText := "-"
			if p.Err != nil {
				errText = p.Err.Error()
			}
			fmt.Fprintf(tw, "  %d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Partition, p.Leader, p.LeaderEpoch,
				int32List(p.Replicas), int32List(p.ISR), offsetText(starts, name, p.Partition), offsetText(ends, name, p.Partition), size, errText)
		}
		return tw.Flush()
	}
}

func int32List(ns []int32) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(int(n))
	}
	return "[" + strings.Join(s, ",") + "]"
}

func offsetText(l kadm.ListedOffsets, topic string, p int32) string {
	o, ok := l.Lookup(topic, p)
	if !ok || o.Err != nil {
		return "?"
	}
	return strconv.FormatInt(o.Offset, 10)
}

func topicAlterConfig(fs *flag.FlagSet) func(*cmd, []string) error {
	sets := propFlags{}
	fs.Var(sets, "set", "set a config override `name=value` (repeatable)")
	fs.Var(sets, "s", "short for --set")
	var dels []string
	fs.Func("delete", "delete a config override `name`, back to the broker's value (repeatable)", func(v string) error {
		dels = append(dels, v)
		return nil
	})
	fs.Func("d", "short for --delete", func(v string) error {
		dels = append(dels, v)
		return nil
	})
	return func(c *cmd, args []string) error {
		name := args[0]
		if len(sets) == 0 && len(dels) == 0 {
			return usagef("nothing to alter: give --set name=value or --delete name")
		}
		var alters []kadm.AlterConfig
		for _, k := range sortedKeys(sets) {
			alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: sets[k]})
		}
		for _, k := range dels {
			alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
		}
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		resps, err := adm.AlterTopicConfigs(ctx, alters, name)
		if err != nil {
			return err
		}
		r, err := resps.On(name, nil)
		if err == nil {
			err = withMessage(r.Err, r.ErrMessage)
		}
		if err != nil {
			return err
		}
		for _, a := range alters {
			if a.Op == kadm.SetConfig {
				fmt.Fprintf(c.stdout, "set %s=%s on topic %s\n", a.Name, *a.Value, name)
			} else {
				fmt.Fprintf(c.stdout, "deleted the override of %s on topic %s\n", a.Name, name)
			}
		}
		return nil
	}
}

func topicAddPartitions(fs *flag.FlagSet) func(*cmd, []string) error {
	add := fs.Int("num", 0, "`count` of partitions to add")
	fs.IntVar(add, "n", 0, "short for --num")
	to := fs.Int("to", 0, "the partition `count` wanted in total (as kafka-topics --alter --partitions)")
	return func(c *cmd, args []string) error {
		name := args[0]
		if (*add > 0) == (*to > 0) {
			return usagef("give one of -n COUNT (to add) or --to TOTAL")
		}
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		var resps kadm.CreatePartitionsResponses
		if *add > 0 {
			resps, err = adm.CreatePartitions(ctx, *add, name)
		} else {
			resps, err = adm.UpdatePartitions(ctx, *to, name)
		}
		if err != nil {
			return err
		}
		r, ok := resps[name]
		if !ok {
			return fmt.Errorf("no answer for topic %s", name)
		}
		if r.Err != nil {
			return withMessage(r.Err, r.ErrMessage)
		}
		details, err := adm.ListTopics(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "topic %s now has %s\n", name, partitionCount(len(details[name].Partitions)))
		return nil
	}
}

func topicTrimPrefix(fs *flag.FlagSet) func(*cmd, []string) error {
	offset := fs.String("offset", "", "delete the records before this `offset`: a number, or end (everything up to the high watermark)")
	fs.StringVar(offset, "o", "", "short for --offset")
	parts := fs.String("partitions", "", "comma-separated `partitions` (default: every partition)")
	fs.StringVar(parts, "p", "", "short for --partitions")
	return func(c *cmd, args []string) error {
		name := args[0]
		var at int64
		switch *offset {
		case "":
			return usagef("give -o OFFSET (a number, or end)")
		case "end":
			at = -1 // DeleteRecords: -1 is the high watermark
		default:
			n, err := strconv.ParseInt(*offset, 10, 64)
			if err != nil || n < 0 {
				return usagef("-o %q: want a number >= 0 or end", *offset)
			}
			at = n
		}
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		details, err := adm.ListTopics(ctx, name)
		if err != nil {
			return err
		}
		t := details[name]
		if t.Err != nil {
			return t.Err
		}
		nums := t.Partitions.Numbers()
		if *parts != "" {
			if nums, err = parseInt32s(*parts); err != nil {
				return usagef("-p: %v", err)
			}
			if err := checkPartitions(name, t, nums); err != nil { // topic_hints.go
				return err
			}
		}
		os := kadm.Offsets{}
		for _, p := range nums {
			os.Add(kadm.Offset{Topic: name, Partition: p, At: at, LeaderEpoch: -1})
		}
		resps, err := adm.DeleteRecords(ctx, os)
		if err != nil {
			return err
		}
		var failed error
		sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
		for _, p := range nums {
			r, ok := resps.Lookup(name, p)
			switch {
			case !ok:
				failed = fmt.Errorf("partition %d: no answer", p)
			case r.Err != nil:
				failed = fmt.Errorf("partition %d: %w%s", p, r.Err, trimHint(c, name, p, r.Err)) // topic_hints.go
			default:
				fmt.Fprintf(c.stdout, "%s\t%d\tlog start offset %d\n", name, p, r.LowWatermark)
				continue
			}
			fmt.Fprintf(c.stderr, "%s: %v\n", c.name, failed)
		}
		if failed != nil {
			return errors.New("some partitions were not trimmed")
		}
		return nil
	}
}

func parseInt32s(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad partition %q", f)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

func topicDelete(fs *flag.FlagSet) func(*cmd, []string) error {
	return func(c *cmd, names []string) error {
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		resps, err := adm.DeleteTopics(ctx, names...)
		if err != nil {
			return err
		}
		var failed error
		for _, name := range names {
			r := resps[name]
			if r.Err != nil {
				failed = withMessage(r.Err, r.ErrMessage)
				if len(names) > 1 {
					fmt.Fprintf(c.stderr, "%s: %s: %v\n", c.name, name, failed)
				}
				continue
			}
			fmt.Fprintf(c.stdout, "deleted topic %s\n", name)
		}
		if failed != nil && len(names) > 1 {
			return errors.New("some topics were not deleted")
		}
		return failed
	}
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
