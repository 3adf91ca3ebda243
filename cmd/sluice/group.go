package main

// "sluice group": list, describe (members, assignment, committed offsets
// and lag), seek (reset committed offsets; a dry run unless --execute) and
// delete consumer groups, classic and consumer (KIP-848) ones; list and
// describe share groups (KIP-932) too.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

var groupNoun = noun{name: "group", doc: "inspect consumer groups, reset their offsets and delete them", verbs: []verb{
	{"list", "", "list groups with their type and state", 0, 0, groupList},
	{"describe", "NAME...", "show a group's members, assignment, committed offsets and lag per partition and in total", 1, -1, groupDescribe},
	{"seek", "NAME", "reset a group's committed offsets (--to start|end|TIMESTAMP, --to-offset N or --to-file FILE); prints the plan, commits it with --execute", 1, 1, groupSeek},
	{"delete", "NAME...", "delete groups (they must have no members)", 1, -1, groupDelete},
}}

func groupList(fs *flag.FlagSet) func(*cmd, []string) error {
	typ := fs.String("type", "", "only groups of this `type`: classic, consumer or share")
	return func(c *cmd, _ []string) error {
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		var groups kadm.ListedGroups
		if *typ != "" {
			groups, err = adm.ListGroupsByType(ctx, []string{*typ})
		} else {
			groups, err = adm.ListGroups(ctx)
		}
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tTYPE\tSTATE\tPROTOCOL-TYPE\tCOORDINATOR")
		for _, g := range groups.Sorted() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", g.Group, orDash(g.GroupType), orDash(g.State), orDash(g.ProtocolType), g.Coordinator)
		}
		return tw.Flush()
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// groupMember is a member of either kind of group.
type groupMember struct {
	id, clientID, host string
	assigned           kadm.TopicsSet
}

// groupView is what describe shows of a group of either kind.
type groupView struct {
	name, typ, state, protocol string
	coordinator                int32
	members                    []groupMember
	committed                  kadm.OffsetResponses
	// share groups: the share-partition start offsets and the lag the
	// broker reports (DescribeShareGroupOffsets), instead of committed
	share kadm.ShareOffsets
}

// owner returns the member a partition is assigned to, or nil.
func (g *groupView) owner(t string, p int32) *groupMember {
	for i := range g.members {
		if g.members[i].assigned.Lookup(t, p) {
			return &g.members[i]
		}
	}
	return nil
}

// describeGroupView describes a group with the API of its type and fetches
// its committed offsets. A group that does not exist is an error.
func describeGroupView(c *cmd, adm *kadm.Client, name string) (*groupView, error) {
	ctx, cancel := c.deadline()
	defer cancel()
	g := &groupView{name: name, typ: "classic"}
	if listed, err := adm.ListGroups(ctx); err == nil {
		if l, ok := listed[name]; ok && l.GroupType != "" {
			g.typ = l.GroupType
		}
	}
	switch g.typ {
	case "consumer":
		ds, err := adm.DescribeConsumerGroups(ctx, name)
		if err != nil && len(ds) == 0 {
			return nil, err
		}
		d := ds[name]
		if d.Err != nil {
			return nil, fmt.Errorf("group %s: %w", name, d.Err)
		}
		g.state, g.protocol, g.coordinator = d.State, d.AssignorName, d.Coordinator.NodeID
		for _, m := range d.Members {
			g.members = append(g.members, groupMember{id: m.MemberID, clientID: m.ClientID, host: m.ClientHost, assigned: m.Assignment})
		}
	case "share":
		return describeShareGroupView(ctx, adm, g)
	default:
		ds, err := adm.DescribeGroups(ctx, name)
		if err != nil && len(ds) == 0 {
			return nil, err
		}
		d := ds[name]
		if d.Err != nil {
			return nil, fmt.Errorf("group %s: %w", name, withMessage(d.Err, d.ErrMessage))
		}
		g.state, g.protocol, g.coordinator = d.State, d.Protocol, d.Coordinator.NodeID
		for _, m := range d.Members {
			gm := groupMember{id: m.MemberID, clientID: m.ClientID, host: m.ClientHost, assigned: kadm.TopicsSet{}}
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					gm.assigned.Add(t.Topic, t.Partitions...)
				}
			}
			g.members = append(g.members, gm)
		}
	}
	committed, err := adm.FetchOffsets(ctx, name)
	if err != nil {
		return nil, err
	}
	g.committed = committed
	if (g.state == "Dead" || g.state == "") && len(g.members) == 0 && len(committed) == 0 {
		return nil, fmt.Errorf("%s: group %s does not exist", strings.TrimSuffix(kerr.GroupIDNotFound.Message, "."), name)
	}
	return g, nil
}

type lagRow struct {
	topic          string
	partition      int32
	committed, end int64 // -1: none / unknown
	brokerLag      int64 // share groups: the lag the broker reports, -1 if none
	member         *groupMember
}

func (r lagRow) lag() int64 {
	if r.brokerLag >= 0 {
		return r.brokerLag
	}
	if r.end < 0 {
		return -1
	}
	if r.committed < 0 {
		return -1
	}
	return max(r.end-r.committed, 0)
}

// lagRows lists the partitions a group has committed offsets for or is
// assigned, with their end offsets.
func lagRows(c *cmd, adm *kadm.Client, g *groupView) ([]lagRow, error) {
	set := kadm.TopicsSet{}
	for t, ps := range g.committed {
		for p := range ps {
			set.Add(t, p)
		}
	}
	for t, ps := range g.share {
		for p := range ps {
			set.Add(t, p)
		}
	}
	for _, m := range g.members {
		set.Merge(m.assigned)
	}
	var rows []lagRow
	if len(set) == 0 {
		return rows, nil
	}
	ctx, cancel := c.deadline()
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, set.Topics()...)
	if err != nil {
		return nil, err
	}
	for _, tp := range set.Sorted() {
		for _, p := range tp.Partitions {
			r := lagRow{topic: tp.Topic, partition: p, committed: -1, end: -1, brokerLag: -1, member: g.owner(tp.Topic, p)}
			if o, ok := g.committed.Lookup(tp.Topic, p); ok && o.Err == nil {
				r.committed = o.At
			}
			if o, ok := g.share.Lookup(tp.Topic, p); ok && o.Err == nil {
				r.committed, r.brokerLag = o.StartOffset, o.Lag
			}
			if e, ok := ends.Lookup(tp.Topic, p); ok && e.Err == nil {
				r.end = e.Offset
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

func groupDescribe(fs *flag.FlagSet) func(*cmd, []string) error {
	return func(c *cmd, names []string) error {
		adm, err := c.admin()
		if err != nil {
			return err
		}
		for i, name := range names {
			g, err := describeGroupView(c, adm, name)
			if err != nil {
				return err
			}
			rows, err := lagRows(c, adm, g)
			if err != nil {
				return err
			}
			var total int64
			for _, r := range rows {
				if l := r.lag(); l > 0 {
					total += l
				}
			}
			if i > 0 {
				fmt.Fprintln(c.stdout)
			}
			tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "GROUP\t%s\n", g.name)
			fmt.Fprintf(tw, "TYPE\t%s\n", g.typ)
			fmt.Fprintf(tw, "STATE\t%s\n", g.state)
			fmt.Fprintf(tw, "ASSIGNOR\t%s\n", orDash(g.protocol))
			fmt.Fprintf(tw, "COORDINATOR\t%d\n", g.coordinator)
			fmt.Fprintf(tw, "MEMBERS\t%d\n", len(g.members))
			fmt.Fprintf(tw, "TOTAL LAG\t%d\n", total)
			tw.Flush()
			fmt.Fprintln(c.stdout)
			tw = tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
			current := "CURRENT-OFFSET"
			if g.typ == "share" {
				current = "START-OFFSET" // the share-partition start offset, as kafka-share-groups.sh
			}
			fmt.Fprintf(tw, "TOPIC\tPARTITION\t%s\tLOG-END-OFFSET\tLAG\tMEMBER-ID\tCLIENT-ID\tHOST\n", current)
			for _, r := range rows {
				member, client, host := "-", "-", "-"
				if r.member != nil {
					member, client, host = r.member.id, r.member.clientID, r.member.host
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.topic, r.partition, numOrDash(r.committed), numOrDash(r.end), numOrDash(r.lag()), member, client, host)
			}
			// Members without partitions still show.
			for _, m := range g.members {
				if len(m.assigned) == 0 {
					fmt.Fprintf(tw, "-\t-\t-\t-\t-\t%s\t%s\t%s\n", m.id, m.clientID, m.host)
				}
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		return nil
	}
}

// describeShareGroupView fills g (a share group) from ShareGroupDescribe
// and DescribeShareGroupOffsets.
func describeShareGroupView(ctx context.Context, adm *kadm.Client, g *groupView) (*groupView, error) {
	ds, err := adm.DescribeShareGroups(ctx, g.name)
	if err != nil && len(ds) == 0 {
		return nil, err
	}
	d, ok := ds[g.name]
	if !ok {
		return nil, fmt.Errorf("group %s: no answer from its coordinator", g.name)
	}
	if d.Err != nil {
		return nil, fmt.Errorf("group %s: %w", g.name, d.Err)
	}
	g.state, g.protocol, g.coordinator = d.GroupState, d.Assignor, d.Coordinator.NodeID
	for _, m := range d.Members {
		g.members = append(g.members, groupMember{id: m.MemberID, clientID: m.ClientID, host: m.ClientHost, assigned: m.Assignment})
	}
	offs, err := adm.DescribeShareGroupOffsets(ctx, g.name)
	if err != nil && len(offs) == 0 {
		return nil, err
	}
	o := offs[g.name]
	if o.Err != nil {
		return nil, fmt.Errorf("group %s offsets: %w", g.name, o.Err)
	}
	g.share = o.Offsets
	if (g.state == "Dead" || g.state == "") && len(g.members) == 0 && len(g.share) == 0 {
		return nil, fmt.Errorf("%s: group %s does not exist", strings.TrimSuffix(kerr.GroupIDNotFound.Message, "."), g.name)
	}
	return g, nil
}

func numOrDash(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// parseTimestamp reads unix milliseconds or an RFC 3339 time.
func parseTimestamp(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q: want unix milliseconds or an RFC 3339 time (2026-12-01T10:00:00Z)", s)
	}
	return t.UnixMilli(), nil
}

func groupSeek(fs *flag.FlagSet) func(*cmd, []string) error {
	to := fs.String("to", "", "where to: start, end, or a `timestamp` (unix milliseconds or RFC 3339): the first offset at or after it")
	toOffset := fs.Int64("to-offset", -1, "set every partition to this `offset` (clamped to the partition's start and end)")
	toFile := fs.String("to-file", "", "`file` of \"topic partition offset\" lines (comma, tab or space separated; # comments)")
	var topics []string
	fs.Func("topic", "reset only this `topic` (repeatable, or comma-separated); default: every topic the group has committed offsets for", func(v string) error {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				topics = append(topics, t)
			}
		}
		return nil
	})
	execute := fs.Bool("execute", false, "commit the new offsets (without it, only print them)")
	return func(c *cmd, args []string) error {
		name := args[0]
		modes := 0
		for _, set := range []bool{*to != "", *toOffset >= 0, *toFile != ""} {
			if set {
				modes++
			}
		}
		if modes != 1 {
			return usagef("give one of --to start|end|TIMESTAMP, --to-offset N or --to-file FILE")
		}
		var ts int64
		switch *to {
		case "", "start", "end":
		default:
			var err error
			if ts, err = parseTimestamp(*to); err != nil {
				return usagef("--to %v", err)
			}
		}
		var fromFile map[string]map[int32]int64
		if *toFile != "" {
			var err error
			if fromFile, err = readOffsetsFile(*toFile); err != nil {
				return usagef("--to-file %v", err)
			}
		}
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		// A share group's "offsets" are its share-partition start offsets
		// (DescribeShareGroupOffsets / AlterShareGroupOffsets, as
		// kafka-share-groups --reset-offsets); any other group's are its
		// committed offsets. The group may not exist yet: seeking creates
		// its offsets.
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return err
		}
		isShare := listed[name].GroupType == "share"
		current := map[string]map[int32]int64{}
		if isShare {
			offs, err := adm.DescribeShareGroupOffsets(ctx, name)
			if err != nil && len(offs) == 0 {
				return err
			}
			if o := offs[name]; o.Err != nil {
				return fmt.Errorf("group %s offsets: %w", name, o.Err)
			}
			for t, ps := range offs[name].Offsets {
				for p, o := range ps {
					if o.Err == nil && o.StartOffset >= 0 {
						if current[t] == nil {
							current[t] = map[int32]int64{}
						}
						current[t][p] = o.StartOffset
					}
				}
			}
		} else {
			committed, err := adm.FetchOffsets(ctx, name)
			if err != nil {
				return err
			}
			committed.Each(func(o kadm.OffsetResponse) {
				if o.Err == nil && o.At >= 0 {
					if current[o.Topic] == nil {
						current[o.Topic] = map[int32]int64{}
					}
					current[o.Topic][o.Partition] = o.At
				}
			})
		}
		if len(topics) == 0 {
			if fromFile != nil {
				topics = sortedKeys(fromFile)
			} else {
				topics = sortedKeys(current)
			}
		}
		if len(topics) == 0 {
			return fmt.Errorf("group %s has no committed offsets: name the topics with --topic", name)
		}
		details, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			return err
		}
		if err := details.Error(); err != nil {
			return err
		}
		starts, err := adm.ListStartOffsets(ctx, topics...)
		if err != nil {
			return err
		}
		ends, err := adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return err
		}
		var after kadm.ListedOffsets
		if *to != "" && *to != "start" && *to != "end" {
			if after, err = adm.ListOffsetsAfterMilli(ctx, ts, topics...); err != nil {
				return err
			}
		}
		plan := kadm.Offsets{}
		tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURRENT-OFFSET\tNEW-OFFSET")
		sort.Strings(topics)
		for _, t := range topics {
			for _, p := range details[t].Partitions.Numbers() {
				s, _ := starts.Lookup(t, p)
				e, _ := ends.Lookup(t, p)
				if s.Err != nil || e.Err != nil {
					return fmt.Errorf("%s/%d: %v", t, p, errors.Join(s.Err, e.Err))
				}
				var at int64
				switch {
				case *to == "start":
					at = s.Offset
				case *to == "end":
					at = e.Offset
				case *to != "":
					a, _ := after.Lookup(t, p)
					at = a.Offset
					if a.Err != nil || at < 0 {
						at = e.Offset // nothing at or after the time
					}
				case *toOffset >= 0:
					at = *toOffset
				default:
					o, ok := fromFile[t][p]
					if !ok {
						continue
					}
					at = o
				}
				at = min(max(at, s.Offset), e.Offset)
				cur := "-"
				if o, ok := current[t][p]; ok {
					cur = strconv.FormatInt(o, 10)
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", t, p, cur, at)
				plan.Add(kadm.Offset{Topic: t, Partition: p, At: at, LeaderEpoch: -1})
			}
		}
		tw.Flush()
		if !*execute {
			fmt.Fprintln(c.stdout, "dry run: no offset changed; add --execute to commit these offsets")
			return nil
		}
		// As Kafka's tool: only an inactive group's offsets are reset.
		if l, ok := listed[name]; ok && l.State != "Empty" && l.State != "Dead" && l.State != "" {
			return fmt.Errorf("offsets can only be reset while group %s is inactive, but its state is %s: stop its consumers first", name, l.State)
		}
		if isShare {
			resps, err := adm.AlterShareGroupOffsets(ctx, name, plan)
			if err != nil {
				return err
			}
			if err := resps.Error(); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "set the new start offsets of share group %s\n", name)
			return nil
		}
		resps, err := adm.CommitOffsets(ctx, name, plan)
		if err != nil {
			return err
		}
		if err := resps.Error(); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "committed the new offsets of group %s\n", name)
		return nil
	}
}

// readOffsetsFile reads "topic partition offset" lines.
func readOffsetsFile(path string) (map[string]map[int32]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]map[int32]int64{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s:%d: want topic, partition and offset, got %q", path, line, text)
		}
		p, err1 := strconv.ParseInt(fields[1], 10, 32)
		o, err2 := strconv.ParseInt(fields[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("%s:%d: bad partition or offset in %q", path, line, text)
		}
		if out[fields[0]] == nil {
			out[fields[0]] = map[int32]int64{}
		}
		out[fields[0]][int32(p)] = o
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no offsets", path)
	}
	return out, nil
}

func groupDelete(fs *flag.FlagSet) func(*cmd, []string) error {
	return func(c *cmd, names []string) error {
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		resps, err := adm.DeleteGroups(ctx, names...)
		if err != nil {
			return err
		}
		var failed error
		for _, name := range names {
			r, ok := resps[name]
			switch {
			case !ok:
				failed = fmt.Errorf("group %s: no answer", name)
			case r.Err != nil:
				failed = withMessage(r.Err, r.ErrMessage)
			default:
				fmt.Fprintf(c.stdout, "deleted group %s\n", name)
				continue
			}
			if len(names) > 1 {
				fmt.Fprintf(c.stderr, "%s: %s: %v\n", c.name, name, failed)
			}
		}
		if failed != nil && len(names) > 1 {
			return errors.New("some groups were not deleted")
		}
		return failed
	}
}
