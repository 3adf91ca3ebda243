// Package nemesis injects faults into the nodes on a schedule drawn from a
// seed, records each fault and its healing in the history, and heals
// everything when told to stop.
//
// Fault types the checker knows: kill (SIGKILL, then restart on the same data
// directory), pause (SIGSTOP, then SIGCONT), terminate (SIGTERM: a clean,
// controlled shutdown, then restart), rolling-restart (terminate every node
// in turn, waiting for /readyz), partition (network namespaces), netem
// (where the kernel has it), lossy (a random fraction of a node's packets
// dropped, nftables) and slow (a node's link rate-limited, tc tbf): lossy
// and slow links for kernels without netem, disk-full (tmpfs data directories), clock (a
// node's wall clock jumped through its test-only /test/clock),
// client-clock (the CreateTime the producers stamp jumped; no node),
// lose-unfsynced-2 (two nodes' un-fsynced writes lost at once) and
// lose-unfsynced (SIGKILL, then the data directory as of the broker's last
// fsyncs, from its test-only copy). Asking for one that cannot be injected
// here is an error, never a silent skip.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/history"
	"github.com/sluice-broker/sluice/test/chaos/netns"
	"github.com/sluice-broker/sluice/test/chaos/node"
)

// Whether network namespaces and netem can be made here (variables for
// the tests).
var (
	namespacesAvailable = netns.Available
	netemAvailable      = netns.NetemAvailable
	lossyAvailable      = netns.LossyAvailable
	slowAvailable       = netns.SlowAvailable
	tmpfsAvailable      = node.TmpfsAvailable
)

// NeedsTmpfs tells whether the nodes' data directories go on tmpfs mounts.
func NeedsTmpfs(faults []string) bool {
	for _, f := range faults {
		if f == DiskFull {
			return true
		}
	}
	return false
}

// NeedsNamespaces tells whether a fault type runs the nodes in network
// namespaces.
func NeedsNamespaces(faults []string) bool {
	for _, f := range faults {
		if f == Partition || f == Netem || f == Lossy || f == Slow {
			return true
		}
	}
	return false
}

// Fault type names.
const (
	Kill      = "kill"
	Pause     = "pause"
	Terminate = "terminate"
	Partition = "partition"
	Netem     = "netem"
	// Lossy: a random fraction of the packets to and from a node dropped
	// (nftables in its namespace; LossyPct).
	Lossy = history.FLossy
	// Slow: a node's link limited to a low rate, both directions (tc tbf
	// on both ends of its veth pair; SlowRate).
	Slow          = history.FSlow
	Clock         = "clock"
	DiskFull      = "disk-full"
	LoseUnfsynced = "lose-unfsynced"
	// LoseUnfsynced2: lose-unfsynced on two nodes at once (SIGKILL both,
	// then both data directories as of their last fsyncs), a power loss
	// of two machines. With acks=all, RF 3 and min.insync.replicas 2 this
	// loses acknowledged writes by design unless every replica fsyncs
	// before its position counts: runs with it set
	// log.flush.interval.messages=1 (every topic's flush.messages=1).
	LoseUnfsynced2 = "lose-unfsynced-2"
	// ClientClock: the clients' clock jumped (the CreateTime the franz-go
	// producers stamp their records with), as the clock of the machine the
	// clients run on would be; no node is faulted.
	ClientClock = "client-clock"
	// Rolling: a rolling restart, every node in turn from the step's node:
	// SIGTERM, start again after the step's duration, wait until /readyz
	// answers ready (every partition it leads fully in sync), next node.
	Rolling = "rolling-restart"
)

// why a fault type cannot be injected (empty: it can).
func unavailable(f string, nodes int) string {
	switch f {
	case Kill, Pause, Terminate, Rolling:
		return ""
	case Partition:
		if nodes < 2 {
			return fmt.Sprintf("a network partition needs at least 2 nodes (--nodes %d)", nodes)
		}
		if err := namespacesAvailable(); err != nil {
			return "network namespaces cannot be made here: " + err.Error()
		}
		return ""
	case Netem:
		if nodes < 2 {
			return fmt.Sprintf("a slow link between nodes needs at least 2 nodes (--nodes %d)", nodes)
		}
		if err := netemAvailable(); err != nil {
			return "slow and lossy links (tc netem in the nodes' network namespaces) cannot be made here: " + err.Error()
		}
		return ""
	case Lossy, Slow:
		if nodes < 2 {
			return fmt.Sprintf("a %s link between nodes needs at least 2 nodes (--nodes %d)", f, nodes)
		}
		check, what := lossyAvailable, "lossy links (random drops with nftables in the nodes' network namespaces)"
		if f == Slow {
			check, what = slowAvailable, "slow links (tc tbf rate limits on the nodes' veth pairs)"
		}
		if err := check(); err != nil {
			return what + " cannot be made here: " + err.Error()
		}
		return ""
	case Clock, ClientClock:
		return ""
	case DiskFull:
		if err := tmpfsAvailable(); err != nil {
			return "a full data directory needs each node's data directory on its own tmpfs mount, which cannot be made here: " + err.Error()
		}
		return ""
	case LoseUnfsynced2:
		if nodes < 3 {
			return fmt.Sprintf("losing two nodes' un-fsynced writes at once needs at least 3 nodes (--nodes %d), with --rf 3 and --min-insync 2", nodes)
		}
		return ""
	case LoseUnfsynced:
		if nodes < 3 {
			return fmt.Sprintf("losing one node's un-fsynced writes loses acknowledged ones by design unless other replicas hold them: it needs at least 3 nodes (--nodes %d), with --rf and --min-insync at least 2", nodes)
		}
		return ""
	}
	return "unknown fault type"
}

// ClockOffset draws a clock fault's jump from pick: 30 s to 10 min, forward
// or backward.
func ClockOffset(pick uint64) time.Duration {
	d := 30*time.Second + time.Duration(pick>>1%uint64(570))*time.Second
	if pick&1 == 1 {
		d = -d
	}
	return d
}

// NeedsFsyncShadow tells whether the nodes keep a copy of their data
// directories as of their fsyncs (sluice.test.fsync.shadow.dir).
func NeedsFsyncShadow(faults []string) bool {
	for _, f := range faults {
		if f == LoseUnfsynced || f == LoseUnfsynced2 {
			return true
		}
	}
	return false
}

// NeedsClockControl tells whether the nodes run with the test-only clock
// control (sluice.test.clock.control).
func NeedsClockControl(faults []string) bool {
	for _, f := range faults {
		if f == Clock {
			return true
		}
	}
	return false
}

// Known lists every fault type name.
var Known = []string{Kill, Pause, Terminate, Rolling, Partition, Netem, Lossy, Slow, Clock, ClientClock, DiskFull, LoseUnfsynced, LoseUnfsynced2}

// NeedsFlushEach tells whether every topic must fsync each append
// (log.flush.interval.messages=1): losing two nodes' un-fsynced writes at
// once loses acknowledged ones otherwise, in Apache Kafka too.
func NeedsFlushEach(faults []string) bool {
	for _, f := range faults {
		if f == LoseUnfsynced2 {
			return true
		}
	}
	return false
}

// Parse splits a --faults list and checks that every type can be injected
// with the given number of nodes; the error names each that cannot, and why.
func Parse(list string, nodes int) ([]string, error) {
	var out, bad []string
	seen := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" || seen[f] {
			continue
		}
		seen[f] = true
		known := false
		for _, k := range Known {
			known = known || k == f
		}
		if !known {
			bad = append(bad, fmt.Sprintf("%q: unknown fault type (known: %s)", f, strings.Join(Known, ", ")))
			continue
		}
		if why := unavailable(f, nodes); why != "" {
			bad = append(bad, fmt.Sprintf("%q cannot be injected here: %s", f, why))
			continue
		}
		out = append(out, f)
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no fault types given (--faults %q)", list)
	}
	sort.Strings(out)
	return out, nil
}

// Step is one scheduled fault: after Quiet with no fault, inject Fault on
// node Node (index) and heal it after Duration. On a cluster, a step with
// Controller set targets whichever node is the active controller when it
// begins (Node is the fallback when no node names one).
type Step struct {
	Quiet      time.Duration
	Fault      string
	Node       int
	Controller bool
	Duration   time.Duration
	// Network faults: the partition's kind (Isolate, Halves, Bridge,
	// Ring) and Pick, which draws the other nodes' places (and a netem
	// fault's delay and loss).
	Kind string
	Pick uint64
	// Leader: on a cluster, the step targets the node leading a workload
	// partition when it begins (LeaderPick chooses the partition; Node is
	// the fallback when none has a leader).
	Leader     bool
	LeaderPick uint64
}

func (s Step) String() string {
	target := fmt.Sprintf("node %d", s.Node+1)
	if s.Fault == ClientClock {
		target = "(the clients)"
	}
	if s.Controller {
		target = "the active controller"
	}
	if s.Leader {
		target = "the leader of a workload partition"
	}
	f := s.Fault
	if s.Kind != "" {
		f += " (" + s.Kind + ")"
	}
	return fmt.Sprintf("after %.1fs quiet: %s %s for %.1fs", s.Quiet.Seconds(), f, target, s.Duration.Seconds())
}

// Schedule draws the steps for a run of length total from seed. The same seed,
// fault list, node count and length give the same schedule. Quick mode uses
// shorter quiet periods and faults, so that a short run still sees several.
// With more than one node, a third of the steps target the active controller
// and a third of the others the leader of a workload partition (a single
// node's schedules are those of the checker's first version).
func Schedule(seed uint64, faults []string, nodes int, total time.Duration, quick bool) []Step {
	return ScheduleMax(seed, faults, nodes, total, quick, 0)
}

// ScheduleMax is Schedule with faults lasting at most maxFault (0: the
// mode's longest, 8 s or 3 s quick).
func ScheduleMax(seed uint64, faults []string, nodes int, total time.Duration, quick bool, maxFault time.Duration) []Step {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	// (leader targeting from its own generator: the other fields of a
	// seed's steps stay those of earlier versions)
	lrng := rand.New(rand.NewPCG(seed, 0x1eade))
	quietMin, quietMax, durMin, durMax := 3*time.Second, 10*time.Second, 1*time.Second, 8*time.Second
	if quick {
		quietMin, quietMax, durMin, durMax = 2*time.Second, 4*time.Second, 500*time.Millisecond, 3*time.Second
	}
	if maxFault > 0 {
		durMax = maxFault
		durMin = min(durMin, durMax)
	}
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	var steps []Step
	var at time.Duration
	for {
		s := Step{Quiet: between(quietMin, quietMax), Fault: faults[rng.IntN(len(faults))], Node: rng.IntN(nodes), Duration: between(durMin, durMax)}
		if nodes > 1 {
			s.Controller = rng.IntN(3) == 0
		}
		// (drawn only for network faults: the other faults' schedules
		// stay those of earlier versions)
		switch s.Fault {
		case Partition:
			kinds := PartitionKinds(nodes)
			s.Kind, s.Pick = kinds[rng.IntN(len(kinds))], rng.Uint64()
		case Netem, Clock, Lossy, Slow, LoseUnfsynced2, ClientClock:
			s.Pick = rng.Uint64()
		}
		leader, pick := lrng.IntN(3) == 0, lrng.Uint64()
		if s.Fault == ClientClock {
			s.Controller = false
		}
		if nodes > 1 && !s.Controller && s.Fault != Rolling && s.Fault != ClientClock {
			s.Leader, s.LeaderPick = leader, pick
		}
		at += s.Quiet + s.Duration
		if at > total {
			return steps
		}
		steps = append(steps, s)
	}
}

// Nemesis runs a schedule against a cluster.
type Nemesis struct {
	Rec     *history.Recorder
	Cluster *node.Cluster
	// Net is the nodes' network namespaces (network faults need it).
	Net *netns.Net
	// HealTimeout bounds waiting for a node to serve again after a heal.
	HealTimeout time.Duration
	Logf        func(format string, args ...any)
	// LeaderTopics are the workload topics whose partition leaders steps
	// with Leader target.
	LeaderTopics []string
	// ClientClock moves the clients' clock (the client-clock fault).
	ClientClock func(time.Duration)
}

func (n *Nemesis) record(typ, f string, nd int, errText string) {
	n.recordOp(history.Op{Type: typ, F: f, Error: errText}, nd)
}

func (n *Nemesis) recordOp(op history.Op, nd int) {
	id := nd + 1
	op.Process, op.Node = history.NemesisProcess, &id
	n.Rec.Record(op)
}

// Run injects the steps until they are done or ctx ends, healing each fault
// before the next quiet period, and always leaves every node running and
// unpaused. It returns an error when a node did not recover (the schedule
// stops there: faults on a node that is not serving would say nothing).
func (n *Nemesis) Run(ctx context.Context, steps []Step) error {
	for i, s := range steps {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.Quiet):
		}
		if s.Fault == ClientClock {
			n.Logf("nemesis: step %d/%d: %s", i+1, len(steps), s)
			if err := n.clientClock(s); err != nil {
				return err
			}
			continue
		}
		role, target := "", ""
		if len(n.Cluster.Nodes) > 1 {
			// Who is the controller right now (as clients see it)?
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			ctrl := n.Cluster.Controller(ctx)
			cancel()
			target = "node"
			if s.Controller {
				target = history.RoleController
				if ctrl >= 1 && ctrl <= len(n.Cluster.Nodes) {
					s.Node = ctrl - 1
				} else {
					n.Logf("nemesis: no node names a controller; %s node %d instead", s.Fault, s.Node+1)
				}
			}
			if s.Leader {
				target = "node"
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				leaders := n.Cluster.Leaders(ctx, n.LeaderTopics...)
				cancel()
				keys := make([]string, 0, len(leaders))
				for k := range leaders {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				if len(keys) > 0 && leaders[keys[s.LeaderPick%uint64(len(keys))]] >= 1 && leaders[keys[s.LeaderPick%uint64(len(keys))]] <= len(n.Cluster.Nodes) {
					k := keys[s.LeaderPick%uint64(len(keys))]
					s.Node, target = leaders[k]-1, "leader:"+k
				} else {
					n.Logf("nemesis: no node names a leader of a workload partition; %s node %d instead", s.Fault, s.Node+1)
				}
			}
			if ctrl == s.Node+1 {
				role = history.RoleController
			}
		}
		what := s.String()
		if s.Controller {
			what += fmt.Sprintf(": node %d", s.Node+1)
		}
		if strings.HasPrefix(target, "leader:") {
			what += fmt.Sprintf(": node %d, leader of %s", s.Node+1, strings.TrimPrefix(target, "leader:"))
		}
		if role != "" {
			what += " (the active controller)"
		}
		n.Logf("nemesis: step %d/%d: %s", i+1, len(steps), what)
		if s.Fault == Rolling {
			if err := n.rolling(s, role, target); err != nil {
				return err
			}
			continue
		}
		if err := n.inject(s, role, target); err != nil {
			return err
		}
		// The fault lasts its duration even if ctx ends meanwhile: healing
		// is always done, just not cut short.
		time.Sleep(s.Duration)
		if err := n.heal(s); err != nil {
			return err
		}
	}
	return nil
}

func (n *Nemesis) inject(s Step, role, target string) error {
	nd := n.Cluster.Nodes[s.Node]
	n.recordOp(history.Op{Type: history.Invoke, F: s.Fault, Role: role, Target: target, Kind: s.Kind}, s.Node)
	var err error
	kind := history.Op{Kind: s.Kind}
	switch s.Fault {
	case Kill:
		err = nd.Kill(10 * time.Second)
	case LoseUnfsynced:
		kind.Kind, err = nd.LoseUnfsynced(10 * time.Second)
	case LoseUnfsynced2:
		return n.loseTwo(s, role, target)
	case Pause:
		err = nd.Pause()
	case Terminate:
		err = nd.Terminate(30 * time.Second)
	case DiskFull:
		err = nd.Fill()
	case Partition:
		if n.Net == nil {
			err = errors.New("no network namespaces")
			break
		}
		cut := Grudge(s.Kind, len(n.Cluster.Nodes), s.Node+1, s.Pick)
		for _, p := range cut {
			kind.Cut = append(kind.Cut, [2]int{p.A, p.B})
		}
		err = n.Net.Cut(cut)
	case Netem:
		if n.Net == nil {
			err = errors.New("no network namespaces")
			break
		}
		d, j, l := NetemParams(s.Pick)
		kind.Kind = fmt.Sprintf("delay %dms ±%dms, loss %.1f%%", d, j, l)
		err = n.Net.Netem(s.Node+1, d, j, l)
	case Lossy:
		if n.Net == nil {
			err = errors.New("no network namespaces")
			break
		}
		pct := LossyPct(s.Pick)
		kind.Kind = fmt.Sprintf("loss %d%%", pct)
		err = n.Net.Lossy(s.Node+1, pct)
	case Slow:
		if n.Net == nil {
			err = errors.New("no network namespaces")
			break
		}
		rate := SlowRate(s.Pick)
		kind.Kind = fmt.Sprintf("rate %d kbit/s", rate)
		err = n.Net.Slow(s.Node+1, rate)
	case Clock:
		off := ClockOffset(s.Pick)
		kind.Kind = fmt.Sprintf("clock %+ds", int64(off/time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = nd.SetClock(ctx, off)
		cancel()
	default:
		err = fmt.Errorf("fault %q cannot be injected", s.Fault)
	}
	errText := ""
	if err != nil {
		errText = err.Error()
	}
	n.recordOp(history.Op{Type: history.Info, F: s.Fault, Role: role, Target: target, Error: errText, Kind: kind.Kind, Cut: kind.Cut}, s.Node)
	return err
}

func (n *Nemesis) heal(s Step) error {
	nd := n.Cluster.Nodes[s.Node]
	f := history.FStart
	switch s.Fault {
	case Pause:
		f = history.FResume
	case Partition, Netem, Lossy, Slow, DiskFull, Clock:
		f = history.FHeal
	}
	n.record(history.Invoke, f, s.Node, "")
	var err error
	note := ""
	switch s.Fault {
	case Kill, Terminate, LoseUnfsynced:
		err = nd.Start()
	case LoseUnfsynced2:
		return n.startTwo(s)
	case Pause:
		err = nd.Resume()
	case Partition:
		err = n.Net.HealAll()
	case Netem:
		err = n.Net.ClearNetem(s.Node + 1)
	case Lossy:
		err = n.Net.ClearLossy(s.Node + 1)
	case Slow:
		err = n.Net.ClearSlow(s.Node + 1)
	case Clock:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = nd.SetClock(ctx, 0)
		cancel()
	case DiskFull:
		err = nd.Unfill()
		if err == nil && nd.Exited() {
			// The broker stopped on the full disk (Apache Kafka's does when
			// its only log directory fails): start it again.
			note = "restarted: the node had exited on the full disk"
			n.Logf("nemesis: node %d exited while its disk was full; restarting it", s.Node+1)
			if err = nd.Kill(5 * time.Second); err == nil {
				err = nd.Start()
			}
		}
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), n.HealTimeout)
		err = nd.WaitHealthy(ctx)
		if s.Fault == Partition {
			// Every node of a partition serves again.
			for _, o := range n.Cluster.Nodes {
				if err == nil && o != nd {
					err = o.WaitHealthy(ctx)
				}
			}
		}
		cancel()
	}
	errText := ""
	if err != nil {
		errText = err.Error()
	}
	n.recordOp(history.Op{Type: history.Info, F: f, Error: errText, Kind: note}, s.Node)
	return err
}

// rolling restarts every node in turn, from s.Node: a clean shutdown
// (SIGTERM, recorded as a rolling-restart fault of that node), s.Duration
// down, a start, and a wait until the node serves and its /readyz says
// ready, before the next node.
func (n *Nemesis) rolling(s Step, role, target string) error {
	nodes := len(n.Cluster.Nodes)
	for k := range nodes {
		i := (s.Node + k) % nodes
		nd := n.Cluster.Nodes[i]
		r, t := "", "node"
		if k == 0 {
			r, t = role, target
		}
		n.recordOp(history.Op{Type: history.Invoke, F: Rolling, Role: r, Target: t}, i)
		err := nd.Terminate(30 * time.Second)
		errText := ""
		if err != nil {
			errText = err.Error()
		}
		n.recordOp(history.Op{Type: history.Info, F: Rolling, Role: r, Target: t, Error: errText}, i)
		if err != nil {
			return err
		}
		time.Sleep(s.Duration)
		n.record(history.Invoke, history.FStart, i, "")
		err = nd.Start()
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), n.HealTimeout)
			err = nd.WaitHealthy(ctx)
			if err == nil {
				err = nd.WaitReady(ctx)
			}
			cancel()
		}
		errText = ""
		if err != nil {
			errText = err.Error()
		}
		n.record(history.Info, history.FStart, i, errText)
		if err != nil {
			return err
		}
	}
	return nil
}

// HealAll makes sure every node is running, unpaused and healthy (after an
// interrupted schedule).
func (n *Nemesis) HealAll() error {
	if n.ClientClock != nil {
		n.ClientClock(0)
	}
	if n.Net != nil {
		// (a lossy or slow link whose injection failed half-way; clearing
		// a link that has none is a no-op)
		for i := range n.Cluster.Nodes {
			_ = n.Net.ClearLossy(i + 1)
			_ = n.Net.ClearNetem(i + 1)
		}
	}
	if n.Net != nil && len(n.Net.CutPairs()) > 0 {
		if err := n.heal(Step{Fault: Partition}); err != nil {
			return err
		}
	}
	for i, nd := range n.Cluster.Nodes {
		if nd.Full() {
			if err := n.heal(Step{Fault: DiskFull, Node: i}); err != nil {
				return err
			}
		}
		if nd.Paused() {
			if err := n.heal(Step{Fault: Pause, Node: i}); err != nil {
				return err
			}
		}
		if !nd.Running() || nd.Exited() {
			if nd.Exited() {
				_ = nd.Kill(5 * time.Second) // reap the dead process's state
			}
			if err := n.heal(Step{Fault: Kill, Node: i}); err != nil {
				return err
			}
		}
	}
	return nil
}
