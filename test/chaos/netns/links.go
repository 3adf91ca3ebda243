package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Lossy and slow links without tc netem (kernels built without sch_netem):
//
//   - a lossy link drops a random fraction of the packets node i's
//     interface sends and receives, with an nftables table in node i's
//     namespace (numgen random mod 100 < pct drop, on its hooks input and
//     output, its own interface only: not loopback);
//   - a slow link limits node i's interface to a rate, both directions,
//     with a token bucket filter (tc tbf) on its interface (what it sends)
//     and on the bridge's end of its veth pair (what it receives); packets
//     queue up to LatencyMs and are dropped beyond, as on a saturated link.

// lossyTable is the nftables table of a lossy link in a node's namespace.
const lossyTable = "slc_lossy"

// SlowLatencyMs is how long a packet may wait in a slow link's queue before
// it is dropped (tbf's latency).
const SlowLatencyMs = 500

// nftIn runs nft in node namespace ns with the given arguments.
func nftIn(ns string, args ...string) error {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns, "nft"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nft %s in %s: %v: %s", strings.Join(args, " "), ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// lossyRules is the nftables script making dev drop pct% of its packets.
func lossyRules(dev string, pct int) string {
	match := fmt.Sprintf("numgen random mod 100 < %d ", pct)
	if pct >= 100 {
		match = "" // (nft refuses "< 100" of a number below 100)
	}
	return fmt.Sprintf(`table inet %[1]s {
	chain in {
		type filter hook input priority 0; policy accept;
		iifname %[2]q %[3]sdrop
	}
	chain out {
		type filter hook output priority 0; policy accept;
		oifname %[2]q %[3]sdrop
	}
}
`, lossyTable, dev, match)
}

func loadLossy(ns, dev string, pct int) error {
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(lossyRules(dev, pct))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft -f (random drop of %d%% on %s) in %s: %v: %s", pct, dev, ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// LossyAvailable tells whether lossy links can be made here (namespaces,
// the nft tool, the kernel's nf_tables with numgen); the error says why not.
func LossyAvailable() error {
	if err := Available(); err != nil {
		return err
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return errors.New("the nft tool is not installed (apt-get install -y nftables; scripts/chaos.sh installs it when it can)")
	}
	probe := fmt.Sprintf("%s%dprobe", Prefix, os.Getpid())
	if err := ip("netns", "add", probe); err != nil {
		return err
	}
	defer func() { _ = ip("netns", "del", probe) }()
	if err := loadLossy(probe, "lo", 10); err != nil {
		return fmt.Errorf("%v (the kernel has no nf_tables or its numgen expression)", err)
	}
	return nil
}

// SlowAvailable tells whether slow links can be made here (namespaces, the
// tc tool, the kernel's sch_tbf); the error says why not.
func SlowAvailable() error {
	return qdiscAvailable("tbf", "rate", "1mbit", "burst", "16kb", "latency", "500ms")
}

// qdiscAvailable tells whether tc can add queueing discipline kind (with
// args) to a veth in a namespace of its own here: namespaces, the tc tool,
// the kernel's sch_<kind>; the error says why not.
func qdiscAvailable(kind string, args ...string) error {
	if err := Available(); err != nil {
		return err
	}
	if _, err := exec.LookPath("tc"); err != nil {
		return errors.New("the tc tool (iproute2) is not installed")
	}
	probe := fmt.Sprintf("%s%dprobe", Prefix, os.Getpid())
	if err := ip("netns", "add", probe); err != nil {
		return err
	}
	defer func() { _ = ip("netns", "del", probe) }()
	if err := ip("-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1"); err != nil {
		return err
	}
	cmd := append([]string{"netns", "exec", probe, "tc", "qdisc", "add", "dev", "p0", "root", kind}, args...)
	if out, err := exec.Command("ip", cmd...).CombinedOutput(); err != nil {
		return fmt.Errorf("tc qdisc add ... %s: %s (the kernel has no sch_%s)", kind, strings.TrimSpace(string(out)), kind)
	}
	return nil
}

// Lossy makes node i's link drop pct percent of its packets, each
// direction, at random.
func (n *Net) Lossy(i, pct int) error {
	if pct < 0 || pct > 100 {
		return fmt.Errorf("loss of %d%%: between 0 and 100", pct)
	}
	// Replace, not add: a table left over is deleted first.
	_ = nftIn(n.NS(i), "delete", "table", "inet", lossyTable)
	return loadLossy(n.NS(i), Dev, pct)
}

// ClearLossy removes node i's lossy link (none is fine).
func (n *Net) ClearLossy(i int) error {
	if err := nftIn(n.NS(i), "delete", "table", "inet", lossyTable); err != nil && !strings.Contains(err.Error(), "No such file") {
		return err
	}
	return nil
}

// Slow limits node i's link to rateKbit kilobits per second, each direction.
func (n *Net) Slow(i, rateKbit int) error {
	if rateKbit <= 0 {
		return fmt.Errorf("rate of %d kbit/s: must be positive", rateKbit)
	}
	// The bucket holds at least one full-size frame and about 20 ms of the rate.
	burst := max(rateKbit*1000/8/50, 4096)
	args := []string{"qdisc", "replace", "dev", Dev, "root", "tbf", "rate", fmt.Sprintf("%dkbit", rateKbit), "burst", fmt.Sprint(burst), "latency", fmt.Sprintf("%dms", SlowLatencyMs)}
	if out, err := exec.Command("ip", append([]string{"netns", "exec", n.NS(i), "tc"}, args...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("tc %s in %s: %v: %s", strings.Join(args, " "), n.NS(i), err, strings.TrimSpace(string(out)))
	}
	args[3] = n.HostVeth(i)
	if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("tc %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ClearSlow removes node i's rate limits (the same root queueing
// disciplines ClearNetem removes).
func (n *Net) ClearSlow(i int) error { return n.ClearNetem(i) }
