package compact

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"
)

// DefaultStatusAddr is where `sluice` serves /metrics and the compaction
// status when --metrics-listen is not given.
const DefaultStatusAddr = "127.0.0.1:9095"

// FetchStatus asks the metrics listener at addr for the compaction status
// (GET http://<addr>/compaction/status[?topic=...]); it returns the report,
// the raw JSON and the response headers, which name the broker that answered
// ("sluice compaction status", in cmd/sluice, checks them).
func FetchStatus(addr, topic string, timeout time.Duration) (StatusReport, []byte, http.Header, error) {
	var rep StatusReport
	host := addr
	if h, p, err := net.SplitHostPort(addr); err == nil && h == "" {
		host = net.JoinHostPort("localhost", p)
	}
	u := url.URL{Scheme: "http", Host: host, Path: StatusPath}
	if topic != "" {
		u.RawQuery = url.Values{"topic": {topic}}.Encode()
	}
	cl := &http.Client{Timeout: timeout}
	resp, err := cl.Get(u.String())
	if err != nil {
		return rep, nil, nil, fmt.Errorf("cannot reach %s: %w", addr, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return rep, nil, resp.Header, err
	}
	if resp.StatusCode != http.StatusOK {
		return rep, nil, resp.Header, fmt.Errorf("%s: %s: %s", u.String(), resp.Status, strings.TrimSpace(string(raw)))
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return rep, nil, resp.Header, fmt.Errorf("bad status document from %s: %w", addr, err)
	}
	return rep, raw, resp.Header, nil
}

// PrintStatus prints a report of one topic (or of every non-internal topic
// when topic is ""), and reports whether the named topic was found.
func PrintStatus(w io.Writer, rep StatusReport, topic string) (found bool) {
	hidden := 0
	if topic == "" {
		// Internal topics (50 __consumer_offsets partitions by default) would
		// drown the user's own; they are shown when named.
		kept := rep.Partitions[:0]
		for _, p := range rep.Partitions {
			if strings.HasPrefix(p.Topic, "__") {
				hidden++
				continue
			}
			kept = append(kept, p)
		}
		rep.Partitions = kept
	}
	WriteStatus(w, rep)
	if hidden > 0 {
		fmt.Fprintf(w, "(%s of internal topics not shown; name one to see it, e.g. sluice compaction status __consumer_offsets)\n", countOf(int64(hidden), "partition", "partitions"))
	}
	return topic == "" || len(rep.Partitions) > 0
}

// WriteStatus prints a report as a table, one partition per line, then
// the reason details.
func WriteStatus(w io.Writer, rep StatusReport) {
	if !rep.Enabled {
		fmt.Fprintln(w, "log cleaner DISABLED (log.cleaner.enable=false): compacted topics are not compacted")
	}
	if len(rep.Partitions) == 0 {
		fmt.Fprintln(w, "no compacted topics")
		return
	}
	now := rep.NowMs
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPART\tDIRTY/MIN\tCLEANABLE\tACTIVE SEG\tCHECKPOINT\tLOG END\tLAST PASS\tTOMBSTONES\tSTATE")
	for _, p := range rep.Partitions {
		cp := "never"
		if p.Checkpoint >= 0 {
			cp = fmt.Sprint(p.Checkpoint)
		}
		last := "never"
		if p.LastPassMs > 0 {
			last = ago(now-p.LastPassMs) + " ago"
		}
		tomb := fmt.Sprint(p.TombstonesPending)
		if p.NextHorizonMs > 0 {
			tomb += " (next in " + ago(p.NextHorizonMs-now) + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f/%.2f\t%s\t%s, %s\t%s\t%d\t%s\t%s\t%s\n", p.Topic, p.Partition,
			p.DirtyRatio, p.MinCleanableDirtyRatio, bytesStr(p.CleanableBytes),
			bytesStr(p.ActiveSegmentBytes), ago(p.ActiveSegmentAgeMs), cp, p.LogEndOffset, last, tomb, p.Reason)
	}
	_ = tw.Flush()
	for _, p := range rep.Partitions {
		fmt.Fprintf(w, "%s-%d: %s", p.Topic, p.Partition, p.Detail)
		if p.Reason == ReasonError {
			fmt.Fprintf(w, " (%d consecutive failures, retry in %s)", p.ConsecutiveFailures, ago(p.RetryAtMs-now))
		}
		fmt.Fprintf(w, "; %s", rollText(p, now))
		if p.LastPassMs > 0 {
			fmt.Fprintf(w, "; last pass %s read, %s written in %s (%s)", bytesStr(p.LastPassBytesRead),
				bytesStr(p.LastPassBytesWritten), ago(p.LastPassDurationMs), countOf(p.Passes, "pass", "passes"))
		}
		if p.LastError != "" && p.Reason != ReasonError {
			fmt.Fprintf(w, "; a pass failed %s ago: %s", ago(now-p.LastErrorMs), p.LastError)
		}
		fmt.Fprintln(w)
	}
}

// rollText says when the active segment rolls.
func rollText(p PartitionStatus, now int64) string {
	size := ""
	if p.SegmentBytes > 0 {
		size = fmt.Sprintf(" or at %s (segment.bytes)", bytesStr(p.SegmentBytes))
	}
	if p.ActiveSegmentRollMs == 0 {
		return "active segment empty: it rolls segment.ms after its first append" + size
	}
	when := "now"
	if p.ActiveSegmentRollMs > now {
		when = "in " + ago(p.ActiveSegmentRollMs-now)
	}
	return fmt.Sprintf("active segment rolls %s (%s)%s", when, p.ActiveSegmentRollBy, size)
}

func ago(ms int64) string {
	if ms < 0 {
		ms = 0
	}
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Hour:
		return d.Truncate(time.Second).String()
	default:
		return d.Truncate(time.Minute).String()
	}
}

func bytesStr(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// countOf is "1 pass", "2 passes".
func countOf(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
