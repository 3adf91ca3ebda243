package main

// "sluice cluster info" and "sluice user" (SCRAM credentials).

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var clusterNoun = noun{name: "cluster", doc: "show the cluster", verbs: []verb{
	{"info", "", "show the cluster id, the controller and the brokers with their racks", 0, 0, clusterInfo},
	{"health", "", "offline and under-replicated partitions (exit 1 when any)", 0, 0, clusterHealth},
	{"quorum", "", "the metadata quorum: leader, epoch, high watermark, each voter's and observer's lag", 0, 0, clusterQuorum},
	{"add-controller", "NODE_ID", "make a running observer with the controller role a voter of the metadata quorum (AddRaftVoter)", 1, 1, clusterAddController},
	{"remove-controller", "NODE_ID", "make a voter of the metadata quorum an observer (RemoveRaftVoter)", 1, 1, clusterRemoveController},
}}

func clusterHealth(fs *flag.FlagSet) func(*cmd, []string) error {
	return func(c *cmd, _ []string) error {
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		m, err := adm.Metadata(ctx)
		if err != nil {
			return err
		}
		var offline, under []string
		for _, t := range m.Topics.Sorted() {
			for _, p := range t.Partitions.Sorted() {
				name := fmt.Sprintf("%s-%d", t.Topic, p.Partition)
				switch {
				case p.Leader < 0 || p.Err != nil && errors.Is(p.Err, kerr.LeaderNotAvailable):
					offline = append(offline, name)
				case len(p.ISR) < len(p.Replicas):
					under = append(under, fmt.Sprintf("%s (in sync %v of %v)", name, p.ISR, p.Replicas))
				}
			}
		}
		fmt.Fprintf(c.stdout, "brokers: %d, controller: %d\n", len(m.Brokers), m.Controller)
		fmt.Fprintf(c.stdout, "offline partitions: %d\n", len(offline))
		for _, n := range offline {
			fmt.Fprintf(c.stdout, "  %s\n", n)
		}
		fmt.Fprintf(c.stdout, "under-replicated partitions: %d\n", len(under))
		for _, n := range under {
			fmt.Fprintf(c.stdout, "  %s\n", n)
		}
		if len(offline)+len(under) > 0 {
			return fmt.Errorf("%d offline and %d under-replicated partition(s)", len(offline), len(under))
		}
		fmt.Fprintln(c.stdout, "healthy")
		return nil
	}
}

func clusterQuorum(fs *flag.FlagSet) func(*cmd, []string) error {
	return func(c *cmd, _ []string) error {
		if _, err := c.admin(); err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, c.cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return withMessage(err, derefString(resp.ErrorMessage))
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return errors.New("malformed DescribeQuorum answer")
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return withMessage(err, derefString(p.ErrorMessage))
		}
		tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "LEADER\t%d\nEPOCH\t%d\nHIGH WATERMARK\t%d\n", p.LeaderID, p.LeaderEpoch, p.HighWatermark)
		tw.Flush()
		fmt.Fprintln(c.stdout)
		tw = tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
		// v1+ carries when each replica last fetched and was last caught
		// up (-1: not recently): a dead voter shows "-" there.
		ages := resp.GetVersion() >= 1
		now := time.Now()
		if ages {
			fmt.Fprintln(tw, "VOTER\tLOG END\tLAG\tLAST FETCH\tLAST CAUGHT UP\tSTATUS")
		} else {
			fmt.Fprintln(tw, "VOTER\tLOG END\tLAG\tSTATUS")
		}
		for _, v := range p.CurrentVoters {
			status := "follower"
			if v.ReplicaID == p.LeaderID {
				status = "leader"
			} else if ages && v.LastFetchTimestamp < 0 {
				status = "follower, not fetching"
			}
			if ages {
				fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\n", v.ReplicaID, v.LogEndOffset, max(p.HighWatermark-v.LogEndOffset, 0),
					quorumAge(now, v.LastFetchTimestamp), quorumAge(now, v.LastCaughtUpTimestamp), status)
			} else {
				fmt.Fprintf(tw, "%d\t%d\t%d\t%s\n", v.ReplicaID, v.LogEndOffset, max(p.HighWatermark-v.LogEndOffset, 0), status)
			}
		}
		if err := tw.Flush(); err != nil || len(p.Observers) == 0 {
			return err
		}
		fmt.Fprintln(c.stdout)
		tw = tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
		if ages {
			fmt.Fprintln(tw, "OBSERVER\tLOG END\tLAG\tLAST FETCH\tLAST CAUGHT UP")
		} else {
			fmt.Fprintln(tw, "OBSERVER\tLOG END\tLAG")
		}
		for _, v := range p.Observers {
			if ages {
				fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\n", v.ReplicaID, v.LogEndOffset, max(p.HighWatermark-v.LogEndOffset, 0),
					quorumAge(now, v.LastFetchTimestamp), quorumAge(now, v.LastCaughtUpTimestamp))
			} else {
				fmt.Fprintf(tw, "%d\t%d\t%d\n", v.ReplicaID, v.LogEndOffset, max(p.HighWatermark-v.LogEndOffset, 0))
			}
		}
		return tw.Flush()
	}
}

func clusterInfo(fs *flag.FlagSet) func(*cmd, []string) error {
	return func(c *cmd, _ []string) error {
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		m, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "CLUSTER\t%s\n", orDash(m.Cluster))
		fmt.Fprintf(tw, "CONTROLLER\t%d\n", m.Controller)
		fmt.Fprintf(tw, "BROKERS\t%d\n", len(m.Brokers))
		tw.Flush()
		fmt.Fprintln(c.stdout)
		tw = tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tHOST\tPORT\tRACK\tCONTROLLER")
		for _, b := range m.Brokers {
			rack := "-"
			if b.Rack != nil {
				rack = *b.Rack
			}
			ctl := ""
			if b.NodeID == m.Controller {
				ctl = "yes"
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\n", b.NodeID, b.Host, b.Port, rack, ctl)
		}
		return tw.Flush()
	}
}

var userNoun = noun{name: "user", doc: "manage SCRAM users (the credentials of SCRAM-SHA-256 and SCRAM-SHA-512 logins)", verbs: []verb{
	{"create", "NAME", "create a SCRAM user, or change its password (--new-password)", 1, 1, userCreate},
	{"list", "", "list SCRAM users and their mechanisms", 0, 0, userList},
	{"delete", "NAME", "delete a SCRAM user's credentials (every mechanism unless --mechanism)", 1, 1, userDelete},
}}

func parseMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(s) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, usagef("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

func userCreate(fs *flag.FlagSet) func(*cmd, []string) error {
	pass := fs.String("new-password", "", "the user's `password` [$SLUICE_NEW_PASSWORD]")
	mech := fs.String("mechanism", "SCRAM-SHA-256", "SCRAM `mechanism`: SCRAM-SHA-256 or SCRAM-SHA-512")
	iterations := fs.Int("iterations", 8192, "PBKDF2 `iterations` (4096 to 16384)")
	return func(c *cmd, args []string) error {
		m, err := parseMechanism(*mech)
		if err != nil {
			return err
		}
		if *pass == "" {
			*pass = c.getenv("SLUICE_NEW_PASSWORD")
		}
		if *pass == "" {
			return usagef("give the password with --new-password or $SLUICE_NEW_PASSWORD")
		}
		return alterUser(c, args[0], nil, []kadm.UpsertSCRAM{{User: args[0], Mechanism: m, Iterations: int32(*iterations), Password: *pass}},
			fmt.Sprintf("created user %s (%s)", args[0], m))
	}
}

func alterUser(c *cmd, name string, del []kadm.DeleteSCRAM, up []kadm.UpsertSCRAM, done string) error {
	adm, err := c.admin()
	if err != nil {
		return err
	}
	ctx, cancel := c.deadline()
	defer cancel()
	resps, err := adm.AlterUserSCRAMs(ctx, del, up)
	if err != nil {
		return err
	}
	r, ok := resps[name]
	if !ok {
		return fmt.Errorf("no answer for user %s", name)
	}
	if r.Err != nil {
		return withMessage(r.Err, r.ErrMessage)
	}
	fmt.Fprintln(c.stdout, done)
	return nil
}

func userList(fs *flag.FlagSet) func(*cmd, []string) error {
	return func(c *cmd, _ []string) error {
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		users, err := adm.DescribeUserSCRAMs(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tMECHANISMS")
		for _, u := range users.Sorted() {
			if u.Err != nil {
				return fmt.Errorf("user %s: %w", u.User, withMessage(u.Err, u.ErrMessage))
			}
			var ms []string
			for _, ci := range u.CredInfos {
				ms = append(ms, fmt.Sprintf("%s (%d iterations)", ci.Mechanism, ci.Iterations))
			}
			fmt.Fprintf(tw, "%s\t%s\n", u.User, strings.Join(ms, ", "))
		}
		return tw.Flush()
	}
}

func userDelete(fs *flag.FlagSet) func(*cmd, []string) error {
	mech := fs.String("mechanism", "", "delete only this `mechanism`'s credential (SCRAM-SHA-256 or SCRAM-SHA-512)")
	return func(c *cmd, args []string) error {
		name := args[0]
		var mechs []kadm.ScramMechanism
		if *mech != "" {
			m, err := parseMechanism(*mech)
			if err != nil {
				return err
			}
			mechs = append(mechs, m)
		} else {
			adm, err := c.admin()
			if err != nil {
				return err
			}
			ctx, cancel := c.deadline()
			users, err := adm.DescribeUserSCRAMs(ctx, name)
			cancel()
			if err != nil {
				return err
			}
			u := users[name]
			if u.Err != nil {
				return withMessage(u.Err, u.ErrMessage)
			}
			for _, ci := range u.CredInfos {
				mechs = append(mechs, ci.Mechanism)
			}
			if len(mechs) == 0 {
				return errors.New("RESOURCE_NOT_FOUND: user " + name + " has no SCRAM credential")
			}
		}
		var del []kadm.DeleteSCRAM
		for _, m := range mechs {
			del = append(del, kadm.DeleteSCRAM{User: name, Mechanism: m})
		}
		return alterUser(c, name, del, nil, "deleted user "+name)
	}
}

// quorumAge shows a DescribeQuorum timestamp as an age ("0.2s ago"), "-"
// for -1 (not recently, or never).
func quorumAge(now time.Time, ms int64) string {
	if ms < 0 {
		return "-"
	}
	d := max(now.Sub(time.UnixMilli(ms)), 0)
	return d.Round(100*time.Millisecond).String() + " ago"
}
