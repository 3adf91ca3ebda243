package main

// "sluice compaction status [TOPIC]": the log cleaner's view of the
// compacted topics, read from the metrics listener of the broker at
// --bootstrap. The compaction status is served over HTTP, not the Kafka
// protocol, so the command first asks the Kafka address for its cluster id
// and node id, then accepts an HTTP answer only from a listener whose
// Sluice-Cluster-Id and Sluice-Node-Id headers name that same broker: a
// neighbour on the default port is never taken for it.

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/sluice-broker/sluice/internal/broker"
	"github.com/sluice-broker/sluice/internal/compact"
)

var compactionNoun = noun{name: "compaction", doc: "why a compacted topic has or has not compacted", verbs: []verb{
	{"status", "[TOPIC]", "per partition: dirty ratio, cleanable bytes, active segment, checkpoint, last pass, tombstones and the reason for the next pass (or its absence)", 0, 1, compactionStatus},
}}

func compactionStatus(fs *flag.FlagSet) func(*cmd, []string) error {
	metricsAddr := fs.String("metrics-addr", "", "`host:port` of the broker's --metrics-listen (default: $SLUICE_METRICS_LISTEN, else the address the broker reports as sluice.metrics.listen, else port 9095 of the bootstrap host and "+compact.DefaultStatusAddr+"); whatever answers must be the broker at --bootstrap")
	asJSON := fs.Bool("json", false, "print the JSON report")
	return func(c *cmd, args []string) error {
		topic := ""
		if len(args) == 1 {
			topic = args[0]
		}
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
		bootstrap := c.conn.bootstrapAddr()
		bhost, bport, _ := net.SplitHostPort(bootstrap)
		node := int32(-1)
		for _, b := range m.Brokers {
			if len(m.Brokers) == 1 || strconv.Itoa(int(b.Port)) == bport && sameHost(b.Host, bhost) {
				node = b.NodeID
			}
		}
		who := fmt.Sprintf("cluster %s", m.Cluster)
		if node >= 0 {
			who = fmt.Sprintf("node %d of cluster %s", node, m.Cluster)
		}

		var candidates []string
		switch {
		case *metricsAddr != "":
			candidates = []string{*metricsAddr}
		case c.getenv("SLUICE_METRICS_LISTEN") != "":
			candidates = []string{c.getenv("SLUICE_METRICS_LISTEN")}
		default:
			// A Sluice broker reports its bound metrics address as the
			// broker config sluice.metrics.listen.
			if node >= 0 {
				if addr, ok, err := reportedMetricsAddr(c, node, bhost); err == nil && ok {
					if addr == "" {
						return fmt.Errorf("%s has no metrics listener (it was started with --metrics-listen \"\" or its default address was taken): the compaction status is served there", who)
					}
					candidates = append(candidates, addr)
				}
			}
			_, defPort, _ := net.SplitHostPort(compact.DefaultStatusAddr)
			if bhost != "" && !isLoopback(bhost) {
				candidates = append(candidates, net.JoinHostPort(bhost, defPort))
			}
			candidates = append(candidates, compact.DefaultStatusAddr)
		}
		var tried []string
		for _, addr := range dedupe(candidates) {
			rep, raw, hdr, err := compact.FetchStatus(addr, topic, c.conn.timeout)
			if hdr == nil && err != nil {
				tried = append(tried, err.Error())
				continue
			}
			gotCluster, gotNode := hdr.Get(broker.HeaderClusterID), hdr.Get(broker.HeaderNodeID)
			switch {
			case gotCluster == "":
				tried = append(tried, fmt.Sprintf("%s answers without saying which broker it is (not a Sluice metrics listener of this version)", addr))
				continue
			case gotCluster != m.Cluster || node >= 0 && gotNode != strconv.Itoa(int(node)):
				tried = append(tried, fmt.Sprintf("%s belongs to node %s of cluster %s, another broker", addr, gotNode, gotCluster))
				continue
			case err != nil:
				return err
			}
			if *asJSON {
				_, err := c.stdout.Write(raw)
				return err
			}
			fmt.Fprintf(c.stdout, "%s (%s), status from %s\n", who, bootstrap, addr)
			if !compact.PrintStatus(c.stdout, rep, topic) {
				return fmt.Errorf("%s has no compacted topic %q: it does not exist there, or its cleanup.policy does not include compact", who, topic)
			}
			return nil
		}
		return errors.New("cannot find the metrics listener of " + who + " at " + bootstrap + ":\n  " + strings.Join(tried, "\n  ") +
			"\ngive its --metrics-listen address with --metrics-addr (a broker started with --metrics-listen \"\" has none)")
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameHost compares advertised and bootstrap host names, taking the
// loopback names as one.
func sameHost(a, b string) bool {
	return a == b || isLoopback(a) && isLoopback(b)
}

// reportedMetricsAddr asks the broker for sluice.metrics.listen; ok is false
// when the broker does not report it (not Sluice). An address with no host or
// an unspecified one (0.0.0.0, ::) is reached at the bootstrap host.
func reportedMetricsAddr(c *cmd, node int32, bootstrapHost string) (addr string, ok bool, err error) {
	adm, err := c.admin()
	if err != nil {
		return "", false, err
	}
	ctx, cancel := c.deadline()
	defer cancel()
	rcs, err := adm.DescribeBrokerConfigs(ctx, node)
	if err != nil {
		return "", false, err
	}
	for _, rc := range rcs {
		for _, cf := range rc.Configs {
			if cf.Key != "sluice.metrics.listen" {
				continue
			}
			v := cf.MaybeValue()
			if v == "" {
				return "", true, nil
			}
			host, port, err := net.SplitHostPort(v)
			if err != nil {
				return "", false, err
			}
			if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
				host = bootstrapHost
			}
			return net.JoinHostPort(host, port), true, nil
		}
	}
	return "", false, nil
}

func dedupe(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
