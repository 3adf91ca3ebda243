package main

// "sluice consume TOPIC...": print records as a kcat-style format (-f) or
// JSON, from an offset, a timestamp or the end (-o), up to a count (-n),
// stopping at the end of the partitions unless --follow; with -g as a
// member of a consumer group that commits what it printed (classic
// protocol, or KIP-848's with --group-protocol consumer).

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var consumeNoun = noun{name: "consume", doc: "print the records of topics", verbs: []verb{
	{"", "TOPIC...", "print records of topics; stops at the end of the partitions unless --follow", 1, -1, consumeRun},
}}

// startSpec is a parsed -o.
type startSpec struct {
	kind byte // 's' start, 'e' end, 'a' at offset, '+' after start, '-' before end, 't' timestamp
	n    int64
}

func parseStart(s string) (startSpec, error) {
	switch s {
	case "start", "oldest", "beginning":
		return startSpec{kind: 's'}, nil
	case "end", "newest":
		return startSpec{kind: 'e'}, nil
	}
	if strings.HasPrefix(s, "@") {
		ms, err := parseTimestamp(s[1:])
		return startSpec{kind: 't', n: ms}, err
	}
	kind := byte('a')
	num := s
	if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		kind, num = s[0], s[1:]
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return startSpec{}, fmt.Errorf("-o %q: want start, end, an offset N, +N (after the start), -N (before the end) or @TIMESTAMP", s)
	}
	return startSpec{kind: kind, n: n}, nil
}

func consumeRun(fs *flag.FlagSet) func(*cmd, []string) error {
	offset := fs.String("o", "start", "where to start: start, end, an `offset` N, +N (N after the start), -N (N before the end), or @TIMESTAMP (unix ms or RFC 3339); with -g only where the group has no committed offset")
	fs.StringVar(offset, "offset", "start", "same as -o")
	count := fs.Int("n", 0, "stop after this many `records` (0: no limit)")
	fs.IntVar(count, "num", 0, "same as -n")
	format := fs.String("f", "%v\\n", "output `format`: %t topic, %p partition, %o offset, %k key, %v value, %K/%V key/value length, %T timestamp (ms), %h headers (name=value,...), \\n \\t; or json")
	fs.StringVar(format, "format", "%v\\n", "same as -f")
	group := fs.String("g", "", "consume as a member of this consumer `group`, committing what was printed")
	fs.StringVar(group, "group", "", "same as -g")
	protocol := fs.String("group-protocol", "classic", "with -g: the group `protocol`, classic (JoinGroup/SyncGroup) or consumer (KIP-848, ConsumerGroupHeartbeat: the broker assigns partitions), as Kafka's group.protocol")
	assignor := fs.String("group-remote-assignor", "", "with --group-protocol consumer: the broker's `assignor`, uniform (default) or range, as Kafka's group.remote.assignor")
	parts := fs.String("p", "", "only these comma-separated `partitions` (not with -g)")
	fs.StringVar(parts, "partitions", "", "same as -p")
	follow := fs.Bool("follow", false, "keep waiting for new records (until -n records or Ctrl-C) instead of stopping at the end")
	fs.BoolVar(follow, "F", false, "same as --follow")
	nullText := fs.Bool("Z", false, "print NULL for a null key or value (default: nothing)")
	return func(c *cmd, topics []string) error {
		start, err := parseStart(*offset)
		if err != nil {
			return usageError{err.Error()}
		}
		var toks []fmtToken
		asJSON := *format == "json"
		if !asJSON {
			if toks, err = parseFormat(*format, "tpokvKVTh"); err != nil {
				return usageError{err.Error()}
			}
		}
		switch *protocol {
		case "classic":
			if *assignor != "" {
				return usagef("--group-remote-assignor needs --group-protocol consumer")
			}
		case "consumer":
			if *group == "" {
				return usagef("--group-protocol consumer needs -g")
			}
			switch *assignor {
			case "", "uniform", "range":
			default:
				return usagef("--group-remote-assignor %q: want uniform or range", *assignor)
			}
		default:
			return usagef("--group-protocol %q: want classic or consumer", *protocol)
		}
		if *group != "" && *parts != "" {
			return usagef("-p and -g exclude each other: a group's partitions are assigned to it")
		}
		var only []int32
		if *parts != "" {
			if only, err = parseInt32s(*parts); err != nil {
				return usagef("-p: %v", err)
			}
		}
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		details, err := adm.ListTopicsWithInternal(ctx, topics...)
		if err == nil {
			for _, t := range topics { // the first failing topic, by name
				if d, ok := details[t]; ok && d.Err != nil {
					err = fmt.Errorf("topic %s: %w", t, d.Err)
					break
				}
			}
		}
		var starts, ends, after kadm.ListedOffsets
		if err == nil {
			starts, err = adm.ListStartOffsets(ctx, topics...)
		}
		if err == nil {
			ends, err = adm.ListEndOffsets(ctx, topics...)
		}
		if err == nil && start.kind == 't' {
			after, err = adm.ListOffsetsAfterMilli(ctx, start.n, topics...)
		}
		var committed kadm.OffsetResponses
		if err == nil && *group != "" {
			committed, err = adm.FetchOffsets(ctx, *group)
		}
		cancel()
		if err != nil {
			return err
		}

		// Where each partition starts, and which still have records to
		// print before the end offsets listed now.
		from := map[string]map[int32]kgo.Offset{}
		pending := map[string]map[int32]int64{} // partition -> end offset not yet reached
		npending := 0
		for _, t := range topics {
			from[t] = map[int32]kgo.Offset{}
			pending[t] = map[int32]int64{}
			nums := details[t].Partitions.Numbers()
			if only != nil {
				nums = only
			}
			for _, p := range nums {
				if _, ok := details[t].Partitions[p]; !ok {
					return fmt.Errorf("topic %s has no partition %d", t, p)
				}
				s, _ := starts.Lookup(t, p)
				e, _ := ends.Lookup(t, p)
				if s.Err != nil || e.Err != nil {
					return fmt.Errorf("%s/%d: listing offsets: %v", t, p, firstNonNil(s.Err, e.Err))
				}
				var at int64
				switch start.kind {
				case 's':
					at = s.Offset
				case 'e':
					at = e.Offset
				case 'a':
					at = start.n
				case '+':
					at = s.Offset + start.n
				case '-':
					at = e.Offset - start.n
				case 't':
					a, _ := after.Lookup(t, p)
					at = a.Offset
					if a.Err != nil || at < 0 {
						at = e.Offset
					}
				}
				at = min(max(at, s.Offset), e.Offset)
				from[t][p] = kgo.NewOffset().At(at)
				if o, ok := committed.Lookup(t, p); ok && o.Err == nil && o.At >= 0 {
					at = o.At // the group resumes at its commit
				}
				if at < e.Offset {
					pending[t][p] = e.Offset
					npending++
				}
			}
		}
		if npending == 0 && !*follow {
			return nil
		}

		opts := []kgo.Opt{kgo.KeepControlRecords(), kgo.FetchMaxWait(time.Second)}
		if *group == "" {
			opts = append(opts, kgo.ConsumePartitions(from))
		} else {
			reset := kgo.NewOffset().AtStart()
			switch start.kind {
			case 'e':
				reset = kgo.NewOffset().AtEnd()
			case 'a':
				reset = kgo.NewOffset().At(start.n)
			case '+':
				reset = kgo.NewOffset().AtStart().Relative(start.n)
			case '-':
				reset = kgo.NewOffset().AtEnd().Relative(-start.n)
			case 't':
				reset = kgo.NewOffset().AfterMilli(start.n)
			}
			opts = append(opts, kgo.ConsumerGroup(*group), kgo.ConsumeTopics(topics...),
				kgo.ConsumeResetOffset(reset), kgo.AutoCommitMarks())
			if *protocol == "consumer" {
				// The client names its balancer as the server assignor:
				// sticky is "uniform", range is "range".
				bal := kgo.StickyBalancer()
				if *assignor == "range" {
					bal = kgo.RangeBalancer()
				}
				opts = append(opts, kgo.Balancers(bal), kgo.ServerSideBalancer())
			}
		}
		cl, err := c.newClient(opts...)
		if err != nil {
			return err
		}
		defer cl.Close()
		out := bufio.NewWriter(c.stdout)
		defer out.Flush()
		printed := 0
		finished := func() bool {
			return (*count > 0 && printed >= *count) || (!*follow && npending == 0)
		}
		for !finished() {
			fetches := cl.PollFetches(c.ctx)
			if c.ctx.Err() != nil {
				break
			}
			var ferr error
			fetches.EachError(func(t string, p int32, err error) {
				if ferr == nil {
					ferr = fmt.Errorf("%s/%d: %w", t, p, err)
				}
			})
			if ferr != nil {
				return ferr
			}
			fetches.EachRecord(func(r *kgo.Record) {
				if finished() {
					return
				}
				if r.Attrs.IsControl() {
					// Transaction markers take an offset but print nothing.
				} else {
					printed++
					if asJSON {
						writeJSONRecord(out, r)
					} else {
						writeRecord(out, toks, r, *nullText)
					}
				}
				if *group != "" {
					cl.MarkCommitRecords(r)
				}
				if end, ok := pending[r.Topic][r.Partition]; ok && r.Offset+1 >= end {
					delete(pending[r.Topic], r.Partition)
					npending--
				}
			})
			out.Flush()
		}
		if *group != "" {
			ctx, cancel := c.deadline()
			defer cancel()
			if err := cl.CommitMarkedOffsets(ctx); err != nil {
				return fmt.Errorf("committing the group's offsets: %w", err)
			}
		}
		return nil
	}
}

func firstNonNil(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// writeRecord prints r as the format's tokens.
func writeRecord(w io.Writer, toks []fmtToken, r *kgo.Record, nullText bool) {
	bytesOf := func(b []byte) []byte {
		if b == nil && nullText {
			return []byte("NULL")
		}
		return b
	}
	for _, t := range toks {
		switch t.verb {
		case 0:
			io.WriteString(w, t.lit)
		case 't':
			io.WriteString(w, r.Topic)
		case 'p':
			fmt.Fprint(w, r.Partition)
		case 'o':
			fmt.Fprint(w, r.Offset)
		case 'k':
			w.Write(bytesOf(r.Key))
		case 'v':
			w.Write(bytesOf(r.Value))
		case 'K':
			fmt.Fprint(w, lenOrNull(r.Key))
		case 'V':
			fmt.Fprint(w, lenOrNull(r.Value))
		case 'T':
			fmt.Fprint(w, r.Timestamp.UnixMilli())
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					io.WriteString(w, ",")
				}
				io.WriteString(w, h.Key+"="+string(h.Value))
			}
		}
	}
}

// lenOrNull is a length, -1 for null (as kcat prints it).
func lenOrNull(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

type jsonHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type jsonRecord struct {
	Topic     string       `json:"topic"`
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Timestamp int64        `json:"timestamp"`
	Key       *string      `json:"key"`
	Value     *string      `json:"value"`
	Headers   []jsonHeader `json:"headers"`
}

func writeJSONRecord(w io.Writer, r *kgo.Record) {
	str := func(b []byte) *string {
		if b == nil {
			return nil
		}
		s := string(b)
		return &s
	}
	jr := jsonRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
		Key: str(r.Key), Value: str(r.Value), Headers: []jsonHeader{}}
	for _, h := range r.Headers {
		jr.Headers = append(jr.Headers, jsonHeader{h.Key, string(h.Value)})
	}
	b, _ := json.Marshal(jr)
	w.Write(append(b, '\n'))
}
