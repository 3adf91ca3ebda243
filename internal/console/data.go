package console

// What the pages show, read over the Kafka protocol (kadm) and, for the
// compaction view, from each broker's metrics listener.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/compact"
)

// kafkaErr renders err with the broker's message when there is one.
func kafkaErr(err error, msg string) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	var ke *kerr.Error
	if errors.As(err, &ke) && msg != "" {
		return ke.Message + ": " + msg
	}
	if msg != "" && !strings.Contains(s, msg) {
		s += ": " + msg
	}
	return s
}

type brokerRow struct {
	ID         int32
	Host       string
	Port       int32
	Rack       string
	Controller bool
}

type overviewData struct {
	Cluster         string
	Controller      int32
	Brokers         []brokerRow
	Topics          int
	InternalTopics  int
	Partitions      int
	Offline         int
	UnderReplicated int
	Groups          int
	GroupsErr       string
	Problems        []partitionRow
}

type partitionRow struct {
	Topic                      string
	Partition                  int32
	Leader                     int32
	Replicas, ISR, Offline     []int32
	Start, End, Size           int64
	UnderReplicated, IsOffline bool
	Err                        string
}

func (c *Console) overview(ctx context.Context, p *principal) (overviewData, error) {
	var d overviewData
	m, err := p.adm.Metadata(ctx)
	if err != nil {
		return d, err
	}
	d.Cluster, d.Controller = m.Cluster, m.Controller
	for _, b := range m.Brokers {
		row := brokerRow{ID: b.NodeID, Host: b.Host, Port: b.Port, Controller: b.NodeID == m.Controller}
		if b.Rack != nil {
			row.Rack = *b.Rack
		}
		d.Brokers = append(d.Brokers, row)
	}
	for _, t := range m.Topics.Sorted() {
		if t.IsInternal {
			d.InternalTopics++
		} else {
			d.Topics++
		}
		for _, pd := range t.Partitions.Sorted() {
			d.Partitions++
			row := partRow(pd)
			if row.IsOffline {
				d.Offline++
			} else if row.UnderReplicated {
				d.UnderReplicated++
			}
			if (row.IsOffline || row.UnderReplicated) && len(d.Problems) < 100 {
				d.Problems = append(d.Problems, row)
			}
		}
	}
	if gs, err := p.adm.ListGroups(ctx); err != nil {
		d.GroupsErr = err.Error()
	} else {
		d.Groups = len(gs)
	}
	return d, nil
}

func partRow(pd kadm.PartitionDetail) partitionRow {
	row := partitionRow{Topic: pd.Topic, Partition: pd.Partition, Leader: pd.Leader, Replicas: pd.Replicas, ISR: pd.ISR, Offline: pd.OfflineReplicas, Start: -1, End: -1, Size: -1}
	row.IsOffline = pd.Leader < 0
	row.UnderReplicated = len(pd.ISR) < len(pd.Replicas)
	if pd.Err != nil {
		row.Err = pd.Err.Error()
		if errors.Is(pd.Err, kerr.LeaderNotAvailable) {
			row.IsOffline = true
		}
	}
	return row
}

type topicRow struct {
	Name               string
	Internal           bool
	Partitions, RF     int
	Size               int64
	Messages           int64 // end - start over the partitions
	Offline, UnderRepl int
	Rate               string        // records/s over the last minute, "" before two samples
	Traffic            *topicTraffic // the broker's own counters (nil without them; traffic.go)
	Err                string
}

// sizes maps topic → partition → bytes (the largest replica's).
func (c *Console) sizes(ctx context.Context, p *principal, td kadm.TopicDetails) map[string]map[int32]int64 {
	set := make(kadm.TopicsSet)
	for name, t := range td {
		set.Add(name, t.Partitions.Numbers()...)
	}
	out := map[string]map[int32]int64{}
	dirs, err := p.adm.DescribeAllLogDirs(ctx, set)
	if err != nil && len(dirs) == 0 {
		return out
	}
	dirs.Each(func(d kadm.DescribedLogDir) {
		for t, ps := range d.Topics {
			for part, dp := range ps {
				if out[t] == nil {
					out[t] = map[int32]int64{}
				}
				out[t][part] = max(out[t][part], dp.Size)
			}
		}
	})
	return out
}

func (c *Console) topicList(ctx context.Context, p *principal, internal bool) ([]topicRow, error) {
	var (
		td  kadm.TopicDetails
		err error
	)
	if internal {
		td, err = p.adm.ListTopicsWithInternal(ctx)
	} else {
		td, err = p.adm.ListTopics(ctx)
	}
	if err != nil {
		return nil, err
	}
	names := td.Names()
	sizes := c.sizes(ctx, p, td)
	starts, _ := p.adm.ListStartOffsets(ctx, names...)
	ends, _ := p.adm.ListEndOffsets(ctx, names...)
	var rows []topicRow
	for _, t := range td.Sorted() {
		r := topicRow{Name: t.Topic, Internal: t.IsInternal, Partitions: len(t.Partitions)}
		if v, ok := p.lag.rate(t.Topic); ok {
			r.Rate = formatRate(v)
		}
		r.Traffic = c.traffic(t.Topic)
		if t.Err != nil {
			r.Err = t.Err.Error()
		}
		for _, pd := range t.Partitions {
			r.RF = max(r.RF, len(pd.Replicas))
			row := partRow(pd)
			if row.IsOffline {
				r.Offline++
			} else if row.UnderReplicated {
				r.UnderRepl++
			}
			r.Size += sizes[t.Topic][pd.Partition]
			s, ok1 := starts.Lookup(t.Topic, pd.Partition)
			e, ok2 := ends.Lookup(t.Topic, pd.Partition)
			if ok1 && ok2 && s.Err == nil && e.Err == nil {
				r.Messages += e.Offset - s.Offset
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

type configRow struct {
	Name, Value, Source string
	Sensitive, Override bool
}

type topicData struct {
	Name       string
	Internal   bool
	Compacted  bool
	Partitions []partitionRow
	Configs    []configRow
	ConfigsErr string
	AllConfigs bool
	Size       int64
	Traffic    *topicTraffic // traffic.go
	Scope      *trafficScope
}

// sourceName is a config source without the _CONFIG suffix
// (DYNAMIC_TOPIC, DEFAULT, ...).
func sourceName(s fmt.Stringer) string {
	return strings.TrimSuffix(s.String(), "_CONFIG")
}

func (c *Console) topic(ctx context.Context, p *principal, name string, all bool) (topicData, error) {
	d := topicData{Name: name, AllConfigs: all}
	m, err := p.adm.Metadata(ctx, name)
	if err != nil {
		return d, err
	}
	t, ok := m.Topics[name]
	if !ok {
		return d, kerr.UnknownTopicOrPartition
	}
	if t.Err != nil {
		return d, t.Err
	}
	d.Internal = t.IsInternal
	d.Traffic, d.Scope = c.traffic(name), c.trafficScope()
	sizes := c.sizes(ctx, p, kadm.TopicDetails{name: t})
	starts, _ := p.adm.ListStartOffsets(ctx, name)
	ends, _ := p.adm.ListEndOffsets(ctx, name)
	for _, pd := range t.Partitions.Sorted() {
		row := partRow(pd)
		if s, ok := starts.Lookup(name, pd.Partition); ok && s.Err == nil {
			row.Start = s.Offset
		}
		if e, ok := ends.Lookup(name, pd.Partition); ok && e.Err == nil {
			row.End = e.Offset
		}
		if sz, ok := sizes[name][pd.Partition]; ok {
			row.Size = sz
			d.Size += sz
		}
		d.Partitions = append(d.Partitions, row)
	}
	rcs, err := p.adm.DescribeTopicConfigs(ctx, name)
	if err != nil {
		d.ConfigsErr = err.Error()
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			d.ConfigsErr = kafkaErr(rc.Err, rc.ErrMessage)
			continue
		}
		for _, cf := range rc.Configs {
			row := configRow{Name: cf.Key, Value: cf.MaybeValue(), Source: sourceName(cf.Source), Sensitive: cf.Sensitive,
				Override: cf.Source.String() == "DYNAMIC_TOPIC_CONFIG"}
			if cf.Key == "cleanup.policy" && strings.Contains(row.Value, "compact") {
				d.Compacted = true
			}
			if all || row.Override {
				d.Configs = append(d.Configs, row)
			}
		}
	}
	sort.Slice(d.Configs, func(i, j int) bool { return d.Configs[i].Name < d.Configs[j].Name })
	return d, nil
}

// --- records ---------------------------------------------------------------

type recordRow struct {
	Partition int32
	Offset    int64
	Time      string
	Key       string
	KeyNull   bool
	Value     string
	ValueNull bool
	ValueSize int
	Headers   []headerRow
}

type headerRow struct{ Key, Value string }

// render shows b as text, JSON (indented) or hex; text that is not UTF-8
// falls back to hex.
func render(b []byte, format string) string {
	switch format {
	case "hex":
		return hex.EncodeToString(b)
	case "json":
		var out bytes.Buffer
		if json.Indent(&out, b, "", "  ") == nil {
			return out.String()
		}
	}
	if !utf8.Valid(b) {
		return "0x" + hex.EncodeToString(b)
	}
	return string(b)
}

func toRow(r *kgo.Record, format string) recordRow {
	row := recordRow{Partition: r.Partition, Offset: r.Offset, Time: r.Timestamp.UTC().Format("2006-01-02 15:04:05.000"),
		KeyNull: r.Key == nil, ValueNull: r.Value == nil, ValueSize: len(r.Value)}
	if r.Key != nil {
		row.Key = render(r.Key, "text")
	}
	if r.Value != nil {
		row.Value = render(r.Value, format)
	}
	for _, h := range r.Headers {
		row.Headers = append(row.Headers, headerRow{h.Key, render(h.Value, "text")})
	}
	return row
}

// scan reads topic's partitions from starts up to ends (exclusive) and
// calls fn on each record until fn returns false, maxScan records were
// read or ctx ends. It reports the number of records read.
func (c *Console) scan(ctx context.Context, p *principal, topic string, starts, ends map[int32]int64, committed bool, maxScan int, fn func(*kgo.Record) bool) (int, error) {
	offsets := map[int32]kgo.Offset{}
	pending := map[int32]bool{}
	for part, s := range starts {
		if e, ok := ends[part]; ok && s < e {
			offsets[part] = kgo.NewOffset().At(s)
			pending[part] = true
		}
	}
	if len(offsets) == 0 {
		return 0, nil
	}
	select {
	case c.scans <- struct{}{}:
		defer func() { <-c.scans }()
	default:
		return 0, errBusy
	}
	opts := append(append([]kgo.Opt(nil), p.opts...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	n := 0
	for len(pending) > 0 && n < maxScan {
		// Records up to the end offsets exist, so a fetch returns them at
		// once; a poll that gets nothing for a while means the remaining
		// offsets hold no records any more (compacted away, or transaction
		// markers and aborted records, which the client skips).
		pctx, cancel := context.WithTimeout(ctx, scanIdle)
		fs := cl.PollRecords(pctx, 1000)
		cancel()
		if ctx.Err() != nil {
			return n, fmt.Errorf("stopped after %d records: %w", n, ctx.Err())
		}
		if fs.Empty() || fs.IsClientClosed() {
			break
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil {
			return n, ferr
		}
		stop := false
		fs.EachRecord(func(r *kgo.Record) {
			if stop || !pending[r.Partition] {
				return
			}
			n++
			if !fn(r) {
				stop = true
			}
			if r.Offset >= ends[r.Partition]-1 {
				delete(pending, r.Partition)
			}
		})
		if stop {
			break
		}
	}
	return n, nil
}

// maxScans bounds the record scans (message browser, latest value by key)
// running at once; another is refused with errBusy.
const maxScans = 4

var errBusy = errors.New("the console is already reading records for other requests: try again in a moment")

// scanIdle is how long a scan waits for more records before it takes the
// partitions it reads as exhausted.
var scanIdle = 2 * time.Second

type browseQuery struct {
	Partition string // "" = all
	From      string // "start", "end", "offset", "time"
	Offset    int64
	Time      string // RFC 3339 or unix millis
	Key       string
	Format    string
	Limit     int
}

type browseData struct {
	Topic      string
	Partitions []int32
	Q          browseQuery
	Records    []recordRow
	Scanned    int
	Note       string
}

func (c *Console) browse(ctx context.Context, p *principal, topic string, q browseQuery) (browseData, error) {
	d := browseData{Topic: topic, Q: q}
	starts, ends, parts, err := c.bounds(ctx, p, topic, false)
	if err != nil {
		return d, err
	}
	d.Partitions = parts
	if q.Partition != "" {
		n, err := strconv.Atoi(q.Partition)
		if _, ok := starts[int32(n)]; err != nil || !ok {
			return d, badRequest{fmt.Errorf("topic %s has no partition %q", topic, q.Partition)}
		}
		starts = map[int32]int64{int32(n): starts[int32(n)]}
	}
	from := map[int32]int64{}
	switch q.From {
	case "offset":
		for part, s := range starts {
			from[part] = min(max(q.Offset, s), ends[part])
		}
	case "time":
		ms, err := parseTime(q.Time)
		if err != nil {
			return d, badRequest{err}
		}
		lo, err := p.adm.ListOffsetsAfterMilli(ctx, ms, topic)
		if err != nil {
			return d, err
		}
		for part := range starts {
			from[part] = ends[part]
			if o, ok := lo.Lookup(topic, part); ok && o.Err == nil && o.Offset >= 0 {
				from[part] = o.Offset
			}
		}
	case "end": // the last Limit records of each partition
		for part, s := range starts {
			from[part] = max(s, ends[part]-int64(q.Limit))
		}
	default:
		for part, s := range starts {
			from[part] = s
		}
	}
	want := []byte(q.Key)
	d.Scanned, err = c.scan(ctx, p, topic, from, ends, false, 100000, func(r *kgo.Record) bool {
		if q.Key != "" && !bytes.Contains(r.Key, want) {
			return true
		}
		d.Records = append(d.Records, toRow(r, q.Format))
		return len(d.Records) < q.Limit*max(1, len(from))
	})
	sort.SliceStable(d.Records, func(i, j int) bool {
		if d.Records[i].Partition != d.Records[j].Partition {
			return d.Records[i].Partition < d.Records[j].Partition
		}
		return d.Records[i].Offset < d.Records[j].Offset
	})
	if len(from) > 0 {
		perPart := map[int32]int{}
		kept := d.Records[:0]
		for _, r := range d.Records {
			if perPart[r.Partition] < q.Limit {
				perPart[r.Partition]++
				kept = append(kept, r)
			}
		}
		d.Records = kept
	}
	if err != nil {
		d.Note = err.Error()
	}
	return d, nil
}

func parseTime(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("bad timestamp %q: give milliseconds since the epoch or a time like 2026-12-01T10:00:00Z (UTC unless it has an offset)", s)
}

// bounds returns each partition's log start and end (the last stable
// offset when committed).
func (c *Console) bounds(ctx context.Context, p *principal, topic string, committed bool) (starts, ends map[int32]int64, parts []int32, err error) {
	so, err := p.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, nil, nil, err
	}
	var eo kadm.ListedOffsets
	if committed {
		eo, err = p.adm.ListCommittedOffsets(ctx, topic)
	} else {
		eo, err = p.adm.ListEndOffsets(ctx, topic)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if len(so[topic]) == 0 {
		return nil, nil, nil, fmt.Errorf("%s: %w", topic, kerr.UnknownTopicOrPartition)
	}
	starts, ends = map[int32]int64{}, map[int32]int64{}
	for part, o := range so[topic] {
		if o.Err != nil {
			return nil, nil, nil, fmt.Errorf("%s/%d: %w", topic, part, o.Err)
		}
		e, ok := eo.Lookup(topic, part)
		if !ok || e.Err != nil {
			return nil, nil, nil, fmt.Errorf("%s/%d: no end offset", topic, part)
		}
		starts[part], ends[part] = o.Offset, e.Offset
		parts = append(parts, part)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	return starts, ends, parts, nil
}

// latestByKey scans every partition of topic (committed records only) for
// key and returns the last record with it in each partition where it
// occurs.
func (c *Console) latestByKey(ctx context.Context, p *principal, topic, key string) ([]recordRow, int, error) {
	starts, ends, _, err := c.bounds(ctx, p, topic, true)
	if err != nil {
		return nil, 0, err
	}
	want := []byte(key)
	last := map[int32]*kgo.Record{}
	n, err := c.scan(ctx, p, topic, starts, ends, true, 5_000_000, func(r *kgo.Record) bool {
		if bytes.Equal(r.Key, want) {
			last[r.Partition] = r
		}
		return true
	})
	if err != nil {
		err = fmt.Errorf("the scan did not finish (%w): a record shown may not be the latest", err)
	}
	var rows []recordRow
	for _, r := range last {
		rows = append(rows, toRow(r, "json"))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Partition < rows[j].Partition })
	return rows, n, err
}

// --- compaction --------------------------------------------------------------

type compactionRow struct {
	compact.PartitionStatus
	Node     int32
	LastPass string
	Horizon  string
	Roll     string // when the active segment rolls, and why
}

type compactionData struct {
	Topic    string
	Rows     []compactionRow
	Problems []string
	Disabled []int32
}

// compaction asks each broker for its metrics address (the broker config
// sluice.metrics.listen) and reads its compaction status there, keeping
// only answers from the broker asked (cluster id and node id headers).
func (c *Console) compaction(ctx context.Context, p *principal, topic string) (compactionData, error) {
	d := compactionData{Topic: topic}
	m, err := p.adm.Metadata(ctx, topic)
	if err != nil {
		return d, err
	}
	leaders := map[int32]int32{}
	if t, ok := m.Topics[topic]; ok {
		for _, pd := range t.Partitions {
			leaders[pd.Partition] = pd.Leader
		}
	}
	for _, b := range m.Brokers {
		addr, err := c.metricsAddr(ctx, p, b)
		if err != nil {
			d.Problems = append(d.Problems, fmt.Sprintf("node %d: %v", b.NodeID, err))
			continue
		}
		rep, _, hdr, err := compact.FetchStatus(addr, topic, c.opts.RequestTimeout)
		if hdr == nil && err != nil {
			d.Problems = append(d.Problems, fmt.Sprintf("node %d: %v", b.NodeID, err))
			continue
		}
		if hdr.Get("Sluice-Cluster-Id") != m.Cluster || hdr.Get("Sluice-Node-Id") != strconv.Itoa(int(b.NodeID)) {
			d.Problems = append(d.Problems, fmt.Sprintf("node %d: %s answers for node %s of cluster %s, another broker", b.NodeID, addr, hdr.Get("Sluice-Node-Id"), hdr.Get("Sluice-Cluster-Id")))
			continue
		}
		if err != nil {
			d.Problems = append(d.Problems, fmt.Sprintf("node %d: %v", b.NodeID, err))
			continue
		}
		if !rep.Enabled {
			d.Disabled = append(d.Disabled, b.NodeID)
		}
		for _, ps := range rep.Partitions {
			if ps.Topic != topic {
				continue
			}
			if l, ok := leaders[ps.Partition]; ok && l >= 0 && l != b.NodeID {
				continue // a follower's copy: the leader's is shown
			}
			row := compactionRow{PartitionStatus: ps, Node: b.NodeID, LastPass: "never", Horizon: "-"}
			if ps.LastPassMs > 0 {
				row.LastPass = ago(rep.NowMs - ps.LastPassMs)
			}
			if ps.NextHorizonMs > 0 {
				row.Horizon = time.UnixMilli(ps.NextHorizonMs).UTC().Format("2006-01-02 15:04:05")
			}
			row.Roll = "empty: rolls segment.ms after its first append"
			if ps.ActiveSegmentRollMs > 0 {
				row.Roll = time.UnixMilli(ps.ActiveSegmentRollMs).UTC().Format("2006-01-02 15:04:05") + " (" + ps.ActiveSegmentRollBy + ")"
			}
			d.Rows = append(d.Rows, row)
		}
	}
	sort.Slice(d.Rows, func(i, j int) bool { return d.Rows[i].Partition < d.Rows[j].Partition })
	return d, nil
}

func ago(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(time.Second).String() + " ago"
}

func (c *Console) metricsAddr(ctx context.Context, p *principal, b kadm.BrokerDetail) (string, error) {
	rcs, err := p.adm.DescribeBrokerConfigs(ctx, b.NodeID)
	if err != nil {
		return "", err
	}
	for _, rc := range rcs {
		for _, cf := range rc.Configs {
			if cf.Key != "sluice.metrics.listen" {
				continue
			}
			v := cf.MaybeValue()
			if v == "" {
				return "", errors.New("the broker has no metrics listener, where the compaction status is served")
			}
			host, port, err := net.SplitHostPort(v)
			if err != nil {
				return "", err
			}
			if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
				host = b.Host
			}
			return net.JoinHostPort(host, port), nil
		}
	}
	return "", errors.New("the broker does not report sluice.metrics.listen (not a Sluice broker?)")
}

// --- groups ------------------------------------------------------------------

type groupRow struct {
	Name, State, Type, ProtocolType string
	Members                         int
	Lag                             int64
	Err                             string
}

func (c *Console) groupList(ctx context.Context, p *principal) ([]groupRow, error) {
	listed, err := p.adm.ListGroups(ctx)
	if err != nil {
		return nil, err
	}
	var rows []groupRow
	if len(listed) == 0 {
		return rows, nil
	}
	lags, _ := p.adm.Lag(ctx, listed.Groups()...)
	for _, g := range listed.Sorted() {
		r := groupRow{Name: g.Group, State: g.State, Type: g.GroupType, ProtocolType: g.ProtocolType, Lag: -1}
		if l, ok := lags[g.Group]; ok {
			r.Members = len(l.Members)
			if l.State != "" {
				r.State = l.State
			}
			switch {
			case l.DescribeErr != nil:
				r.Err = l.DescribeErr.Error()
			case l.FetchErr != nil:
				r.Err = l.FetchErr.Error()
			default:
				r.Lag = l.Lag.Total()
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

type memberRow struct {
	ID, InstanceID, ClientID, Host string
}

type lagRow struct {
	Topic     string
	Partition int32
	Committed int64
	End       int64
	Lag       int64
	Member    string
	Err       string
}

type groupData struct {
	Name, State, ProtocolType, Protocol string
	Coordinator                         int32
	Members                             []memberRow
	Lag                                 []lagRow
	Total                               int64
	Chart                               chart
	Empty                               bool
	Topics                              []string
}

func (c *Console) group(ctx context.Context, p *principal, name string) (groupData, error) {
	d := groupData{Name: name}
	lags, err := p.adm.Lag(ctx, name)
	if err != nil {
		return d, err
	}
	l, ok := lags[name]
	if !ok {
		return d, kerr.GroupIDNotFound
	}
	if l.DescribeErr != nil {
		return d, l.DescribeErr
	}
	d.State, d.ProtocolType, d.Protocol, d.Coordinator = l.State, l.ProtocolType, l.Protocol, l.Coordinator.NodeID
	d.Empty = len(l.Members) == 0
	for _, m := range l.Members {
		mr := memberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			mr.InstanceID = *m.InstanceID
		}
		d.Members = append(d.Members, mr)
	}
	if l.FetchErr != nil {
		return d, l.FetchErr
	}
	topics := map[string]bool{}
	for _, ml := range l.Lag.Sorted() {
		r := lagRow{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At, End: ml.End.Offset, Lag: ml.Lag}
		if ml.Member != nil {
			r.Member = ml.Member.ClientID + " " + ml.Member.MemberID
		}
		if ml.Err != nil {
			r.Err = ml.Err.Error()
		}
		topics[ml.Topic] = true
		d.Lag = append(d.Lag, r)
	}
	for t := range topics {
		d.Topics = append(d.Topics, t)
	}
	sort.Strings(d.Topics)
	d.Total = l.Lag.Total()
	d.Chart = lagChart(p.lag.points(name), c.opts.LagWindow, time.Now())
	return d, nil
}

// resetPlan computes the offsets a reset would commit: to the start, the
// end, a timestamp, or one offset, for every partition of the group's
// topics (or of topic, when given).
func (c *Console) resetPlan(ctx context.Context, p *principal, group, topic, to, value string) (kadm.Offsets, error) {
	var topics []string
	if topic != "" {
		topics = []string{topic}
	} else {
		fo, err := p.adm.FetchOffsets(ctx, group)
		if err != nil {
			return nil, err
		}
		for t := range fo {
			topics = append(topics, t)
		}
		sort.Strings(topics)
	}
	if len(topics) == 0 {
		return nil, errors.New("the group has no committed offsets: name a topic")
	}
	var lo kadm.ListedOffsets
	var err error
	switch to {
	case "start":
		lo, err = p.adm.ListStartOffsets(ctx, topics...)
	case "end":
		lo, err = p.adm.ListEndOffsets(ctx, topics...)
	case "time":
		ms, perr := parseTime(value)
		if perr != nil {
			return nil, perr
		}
		lo, err = p.adm.ListOffsetsAfterMilli(ctx, ms, topics...)
	case "offset":
		n, perr := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if perr != nil || n < 0 {
			return nil, fmt.Errorf("bad offset %q", value)
		}
		lo, err = p.adm.ListEndOffsets(ctx, topics...)
		if err == nil {
			so, serr := p.adm.ListStartOffsets(ctx, topics...)
			if serr != nil {
				return nil, serr
			}
			for t, ps := range lo {
				for part, o := range ps {
					s, _ := so.Lookup(t, part)
					o.Offset = min(max(n, s.Offset), o.Offset)
					ps[part] = o
				}
			}
		}
	default:
		return nil, fmt.Errorf("reset to %q: start, end, time or offset", to)
	}
	if err != nil {
		return nil, err
	}
	if err := lo.Error(); err != nil {
		return nil, err
	}
	out := make(kadm.Offsets)
	for _, ps := range lo {
		for _, o := range ps {
			out.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
		}
	}
	return out, nil
}

// --- users -------------------------------------------------------------------

type userRow struct {
	Name  string
	Creds []string
	Mechs []string // the mechanisms of Creds, in the same order
	Err   string
}

func (c *Console) users(ctx context.Context, p *principal) ([]userRow, error) {
	us, err := p.adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		return nil, err
	}
	var rows []userRow
	for _, u := range us.Sorted() {
		r := userRow{Name: u.User, Err: kafkaErr(u.Err, u.ErrMessage)}
		for _, ci := range u.CredInfos {
			r.Creds = append(r.Creds, fmt.Sprintf("%s (%d iterations)", ci.Mechanism, ci.Iterations))
			r.Mechs = append(r.Mechs, ci.Mechanism.String())
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func formatRate(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}
