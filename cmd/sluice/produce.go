package main

// "sluice produce TOPIC": records from standard input, one per line by
// default, or as a format (-f) with %k key, %v value, %h headers, %p partition, %T
// timestamp and %t topic between literal separators; keys (-k), headers
// (-H), a partition (-p) and null values (-Z) as rpk takes them.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var produceNoun = noun{name: "produce", doc: "produce records read from standard input to a topic", verbs: []verb{
	{"", "TOPIC", "produce records read from standard input, one per line by default (-f for other layouts)", 1, 1, produceRun},
}}

// fmtToken is a literal or a %verb of a format.
type fmtToken struct {
	lit  string
	verb byte // 0 for a literal
}

// parseFormat splits a kcat/rpk-style format into literals and verbs,
// unescaping \n, \t, \r, \\ and %%. allowed lists the verbs it may hold.
func parseFormat(f, allowed string) ([]fmtToken, error) {
	var toks []fmtToken
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			toks = append(toks, fmtToken{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(f); i++ {
		ch := f[i]
		switch {
		case ch == '\\' && i+1 < len(f):
			i++
			switch f[i] {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case 'r':
				lit.WriteByte('\r')
			case '\\':
				lit.WriteByte('\\')
			default:
				return nil, fmt.Errorf("format %q: unknown escape \\%c", f, f[i])
			}
		case ch == '%' && i+1 < len(f):
			i++
			if f[i] == '%' {
				lit.WriteByte('%')
				continue
			}
			if !strings.ContainsRune(allowed, rune(f[i])) {
				return nil, fmt.Errorf("format %q: unknown verb %%%c (want one of %s)", f, f[i], verbNames(allowed))
			}
			flush()
			toks = append(toks, fmtToken{verb: f[i]})
		case ch == '%':
			return nil, fmt.Errorf("format %q ends with a lone %%", f)
		default:
			lit.WriteByte(ch)
		}
	}
	flush()
	return toks, nil
}

func verbNames(allowed string) string {
	var s []string
	for _, v := range allowed {
		s = append(s, "%"+string(v))
	}
	return strings.Join(s, " ")
}

func produceRun(fs *flag.FlagSet) func(*cmd, []string) error {
	key := fs.String("k", "", "`key` of every record (unless the format has %k)")
	fs.StringVar(key, "key", "", "same as -k")
	headers := &headerFlags{}
	fs.Var(headers, "H", "header `name=value` of every record (repeatable)")
	fs.Var(headers, "header", "same as -H")
	partition := fs.Int("p", -1, "produce to this `partition`; -1: by key hash, as Kafka's clients")
	fs.IntVar(partition, "partition", -1, "same as -p")
	format := fs.String("f", "%v\\n", "input `format`: literals and %k key, %v value, %h headers (name=value,name=value: as consume -f %h prints them), %p partition, %T timestamp (ms), %t topic; the last literal ends a record")
	fs.StringVar(format, "format", "%v\\n", "same as -f")
	tombstone := fs.Bool("Z", false, "an empty value is a null value (a tombstone on a compacted topic)")
	fs.BoolVar(tombstone, "tombstone", false, "same as -Z")
	acks := fs.String("acks", "all", "acknowledgements: all, 1 or 0")
	quiet := fs.Bool("q", false, "do not print where each record went")
	return func(c *cmd, args []string) error {
		topic := args[0]
		toks, err := parseFormat(*format, "kvhpTt")
		if err != nil {
			return usageError{err.Error()}
		}
		if len(toks) == 0 {
			return usagef("empty format")
		}
		for i := 1; i < len(toks); i++ {
			if toks[i].verb != 0 && toks[i-1].verb != 0 {
				return usagef("format %q: put a literal between verbs", *format)
			}
		}
		opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0)}
		switch *acks {
		case "all", "-1":
			opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		case "1":
			opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		case "0":
			opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
		default:
			return usagef("--acks %q: want all, 1 or 0", *acks)
		}
		usesP := false
		for _, t := range toks {
			usesP = usesP || t.verb == 'p'
		}
		if *partition >= 0 || usesP {
			opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		}
		// Dial through a connection that keeps the brokers' error messages
		// (produce_messages.go); it does the TLS itself.
		msgs := newProduceMessages()
		props, err := c.conn.properties()
		if err != nil {
			return usageError{err.Error()}
		}
		var tc *tls.Config
		if p := strings.ToUpper(strings.TrimSpace(props["security.protocol"])); p == "SSL" || p == "SASL_SSL" {
			if tc, err = clientTLS(props); err != nil {
				return usageError{err.Error()}
			}
		}
		opts = append(opts, kgo.DialTLSConfig(nil), kgo.Dialer(msgs.dialer(tc)), kgo.AllowAutoTopicCreation())
		cl, err := c.newClient(opts...)
		if err != nil {
			return err
		}
		defer cl.Close()
		if err := checkProduceTopic(c, cl, topic); err != nil { // produce_messages.go
			return err
		}

		// Confirmations arrive per partition batch, so records of different
		// partitions complete out of input order; each gets its input
		// sequence number and is printed once all before it are.
		var (
			mu       sync.Mutex
			firstErr error
			n        int
			next     int
			pending  = map[int]string{}
		)
		out := bufio.NewWriter(c.stdout)
		doneFor := func(seq int) func(*kgo.Record, error) {
			return func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				line := ""
				if err != nil {
					if firstErr == nil {
						firstErr = withMessage(err, msgs.message(r.Partition, err))
					}
				} else {
					n++
					if !*quiet {
						line = fmt.Sprintf("Produced to partition %d at offset %d with timestamp %d.\n", r.Partition, r.Offset, r.Timestamp.UnixMilli())
					}
				}
				pending[seq] = line
				for {
					l, ok := pending[next]
					if !ok {
						break
					}
					delete(pending, next)
					out.WriteString(l)
					next++
				}
			}
		}
		in := bufio.NewReaderSize(os.Stdin, 1<<20)
		var delim []byte
		body := toks
		if last := toks[len(toks)-1]; last.verb == 0 {
			delim, body = []byte(last.lit), toks[:len(toks)-1]
		}
		for line := 1; ; line++ {
			text, more, err := readRecord(in, delim)
			if err != nil {
				return err
			}
			if !more && len(text) == 0 {
				break
			}
			r := &kgo.Record{Topic: topic, Partition: int32(*partition)}
			if *key != "" {
				r.Key = []byte(*key)
			}
			r.Headers = append([]kgo.RecordHeader(nil), headers.list...) // %h appends
			if err := parseRecord(body, text, r); err != nil {
				return fmt.Errorf("record %d: %w", line, err)
			}
			if len(r.Value) == 0 {
				if *tombstone {
					r.Value = nil
				} else {
					r.Value = []byte{}
				}
			}
			if r.Partition < 0 {
				r.Partition = 0 // ignored by the hash partitioner
			}
			cl.Produce(c.ctx, r, doneFor(line-1))
			if !more {
				break
			}
		}
		if err := cl.Flush(c.ctx); err != nil {
			return err
		}
		out.Flush()
		return firstErr
	}
}

// readRecord reads up to and without delim (to EOF when delim is empty);
// more is false at the end of the input.
func readRecord(in *bufio.Reader, delim []byte) (rec []byte, more bool, err error) {
	if len(delim) == 0 {
		b, err := io.ReadAll(in)
		return b, false, err
	}
	last := delim[len(delim)-1]
	var buf []byte
	for {
		chunk, err := in.ReadSlice(last)
		buf = append(buf, chunk...)
		if err == nil {
			if bytes.HasSuffix(buf, delim) {
				return buf[:len(buf)-len(delim)], true, nil
			}
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			return buf, false, nil
		}
		return nil, false, err
	}
}

// parseRecord fills r from text laid out as toks (literals and verbs).
func parseRecord(toks []fmtToken, text []byte, r *kgo.Record) error {
	for i, t := range toks {
		if t.verb == 0 {
			if !bytes.HasPrefix(text, []byte(t.lit)) {
				return fmt.Errorf("expected %q at %q", t.lit, truncate(text))
			}
			text = text[len(t.lit):]
			continue
		}
		var field []byte
		if i+1 < len(toks) {
			next := []byte(toks[i+1].lit)
			j := bytes.Index(text, next)
			if j < 0 {
				return fmt.Errorf("expected %q after %%%c in %q", next, t.verb, truncate(text))
			}
			field, text = text[:j], text[j:]
		} else {
			field, text = text, nil
		}
		switch t.verb {
		case 'k':
			if len(field) > 0 {
				r.Key = append([]byte(nil), field...)
			}
		case 'v':
			r.Value = append([]byte(nil), field...)
		case 'h':
			hs, err := parseHeaders(field)
			if err != nil {
				return err
			}
			r.Headers = append(r.Headers, hs...)
		case 't':
			r.Topic = string(field)
		case 'p':
			p, err := strconv.ParseInt(string(field), 10, 32)
			if err != nil || p < 0 {
				return fmt.Errorf("bad partition %q", field)
			}
			r.Partition = int32(p)
		case 'T':
			ms, err := strconv.ParseInt(string(field), 10, 64)
			if err != nil {
				return fmt.Errorf("bad timestamp %q (want unix milliseconds)", field)
			}
			// The client encodes a timestamp through nanoseconds since
			// 1970, which an int64 holds from 1678 to 2262 only.
			if ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) {
				return fmt.Errorf("timestamp %d out of range (want unix milliseconds from 0 to %d)", ms, math.MaxInt64/int64(time.Millisecond))
			}
			r.Timestamp = time.UnixMilli(ms)
		}
	}
	if len(text) > 0 {
		return fmt.Errorf("unexpected %q at the end", truncate(text))
	}
	return nil
}

// parseHeaders reads a %h field: comma-separated name=value pairs (empty:
// no headers). A name cannot hold '=' or ',' and a value cannot hold ','.
func parseHeaders(field []byte) ([]kgo.RecordHeader, error) {
	if len(field) == 0 {
		return nil, nil
	}
	var hs []kgo.RecordHeader
	for _, kv := range bytes.Split(field, []byte(",")) {
		name, value, ok := bytes.Cut(kv, []byte("="))
		if !ok || len(name) == 0 {
			return nil, fmt.Errorf("bad header %q in %%h: want name=value pairs separated by commas", truncate(kv))
		}
		hs = append(hs, kgo.RecordHeader{Key: string(name), Value: append([]byte{}, value...)})
	}
	return hs, nil
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// headerFlags collects repeated -H name=value flags.
type headerFlags struct{ list []kgo.RecordHeader }

func (h *headerFlags) String() string { return "" }
func (h *headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=value, got %q", v)
	}
	h.list = append(h.list, kgo.RecordHeader{Key: name, Value: []byte(value)})
	return nil
}
