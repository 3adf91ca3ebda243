// Package netns puts each node of a fault-checker run in its own Linux
// network namespace, joined by a bridge in the root namespace, so that
// network faults drop real packets: a partition between two nodes is a
// static neighbour entry in each of the two namespaces pointing the other
// node's address at a MAC address nobody has (the frames are flooded by the
// bridge and dropped by every receiver, silently, as a firewall DROP would),
// and healing deletes those entries. The clients stay in the root namespace
// and reach every node through the bridge, whatever the partition (as in
// Jepsen, a partition is between the nodes).
//
// Everything stays on this machine: the bridge and the namespaces have
// addresses of one 10.250.X.0/24 subnet no interface uses yet, no route
// leaves it, and nothing is forwarded. Names carry the checker's process
// id (slcb<pid> for the bridge, slc<pid>n<i> for namespaces, slc<pid>h<i>
// for the root ends of the veth pairs), so that several runs can share a
// machine and Setup removes what a dead run left behind. Teardown removes
// everything; a reaper process (Reap) does it too when the checker dies
// without running it (SIGKILL, a panic in any goroutine).
package netns

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Prefix starts the name of everything this package creates.
const Prefix = "slc"

// Net is the bridge and the namespaces of one run.
type Net struct {
	Pid    int    // the owning checker's process id (in every name)
	Bridge string // the bridge's name
	Subnet string // 10.250.X (the /24 without its last byte)
	Nodes  int

	mu   sync.Mutex
	cut  map[[2]int]bool // node pairs (1-based, a < b) partitioned now
	gone bool
}

// NS is the namespace of node i (1-based).
func (n *Net) NS(i int) string { return fmt.Sprintf("%s%dn%d", Prefix, n.Pid, i) }

// HostVeth is the root-namespace end of node i's veth pair.
func (n *Net) HostVeth(i int) string { return fmt.Sprintf("%s%dh%d", Prefix, n.Pid, i) }

// IP is node i's address.
func (n *Net) IP(i int) string { return fmt.Sprintf("%s.%d", n.Subnet, 10+i) }

// BridgeIP is the root namespace's address on the bridge (the clients').
func (n *Net) BridgeIP() string { return n.Subnet + ".1" }

// Dev is the name of a node's interface inside its namespace.
const Dev = "eth0"

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Available tells whether network namespaces, veth pairs and a bridge can be
// made here (root, the ip tool, the kernel's support); the error says why not.
// It makes and removes a namespace and a veth pair to find out.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root (the checker runs as uid " + strconv.Itoa(os.Geteuid()) + ")")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("the ip tool (iproute2) is not installed")
	}
	probe := fmt.Sprintf("%s%dprobe", Prefix, os.Getpid())
	if err := ip("netns", "add", probe); err != nil {
		return err
	}
	defer func() { _ = ip("netns", "del", probe) }()
	if err := ip("-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1"); err != nil {
		return err
	}
	if err := ip("-n", probe, "link", "add", "b0", "type", "bridge"); err != nil {
		return err
	}
	return nil
}

// NetemAvailable tells whether tc's netem queueing discipline (delay, loss)
// can be added here (the tc tool, the kernel's sch_netem); the error says why not.
func NetemAvailable() error {
	return qdiscAvailable("netem", "delay", "10ms")
}

// CleanStale removes the bridges, namespaces (and the processes still in
// them) that a checker run no longer alive left behind. It returns what it
// removed.
func CleanStale() []string {
	var removed []string
	alive := func(pid int) bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		return err == nil
	}
	for _, ns := range listNetns() {
		pid, ok := ownerPid(ns, 'n')
		if !ok || alive(pid) {
			continue
		}
		killIn(ns)
		if ip("netns", "del", ns) == nil {
			removed = append(removed, "namespace "+ns)
		}
	}
	for _, br := range listLinks() {
		if !strings.HasPrefix(br, Prefix+"b") {
			pid, ok := ownerPid(br, 'h')
			if !ok {
				pid, ok = ownerPid(br, 'p')
			}
			if ok && !alive(pid) && ip("link", "del", br) == nil {
				removed = append(removed, "veth "+br)
			}
			continue
		}
		pid, err := strconv.Atoi(strings.TrimPrefix(br, Prefix+"b"))
		if err != nil || alive(pid) {
			continue
		}
		if ip("link", "del", br) == nil {
			removed = append(removed, "bridge "+br)
		}
	}
	return removed
}

// ownerPid parses slc<pid><sep><i>.
func ownerPid(name string, sep byte) (int, bool) {
	if !strings.HasPrefix(name, Prefix) {
		return 0, false
	}
	rest := name[len(Prefix):]
	i := strings.IndexByte(rest, sep)
	if i <= 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(rest[:i])
	if err != nil {
		return 0, false
	}
	if _, err := strconv.Atoi(rest[i+1:]); err != nil {
		return 0, false
	}
	return pid, true
}

func listNetns() []string {
	ents, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), Prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func listLinks() []string {
	ents, _ := os.ReadDir("/sys/class/net")
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), Prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// killIn sends SIGKILL to every process in namespace ns (processes a
// fault-checker run started there).
func killIn(ns string) {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// freeSubnet picks 10.250.X with no address of any interface in 10.250.X.0/24.
func freeSubnet(seed int) (string, error) {
	used := map[int]bool{}
	ifs, _ := net.InterfaceAddrs()
	for _, a := range ifs {
		if ipn, ok := a.(*net.IPNet); ok {
			if v4 := ipn.IP.To4(); v4 != nil && v4[0] == 10 && v4[1] == 250 {
				used[int(v4[2])] = true
			}
		}
	}
	for k := range 256 {
		x := (seed + k) % 256
		if !used[x] {
			return fmt.Sprintf("10.250.%d", x), nil
		}
	}
	return "", errors.New("no free 10.250.X.0/24 subnet")
}

// Setup removes what dead runs left behind, then makes the bridge and one
// namespace per node (its loopback up, its veth's other end on the bridge).
func Setup(nodes int) (*Net, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	CleanStale()
	pid := os.Getpid()
	subnet, err := freeSubnet(pid)
	if err != nil {
		return nil, err
	}
	n := &Net{Pid: pid, Bridge: fmt.Sprintf("%sb%d", Prefix, pid), Subnet: subnet, Nodes: nodes, cut: map[[2]int]bool{}}
	fail := func(err error) (*Net, error) {
		n.Teardown()
		return nil, err
	}
	for _, args := range [][]string{
		{"link", "add", n.Bridge, "type", "bridge"},
		{"addr", "add", n.BridgeIP() + "/24", "dev", n.Bridge},
		{"link", "set", n.Bridge, "up"},
	} {
		if err := ip(args...); err != nil {
			return fail(err)
		}
	}
	for i := 1; i <= nodes; i++ {
		ns, host, peer := n.NS(i), n.HostVeth(i), fmt.Sprintf("%s%dp%d", Prefix, pid, i)
		for _, args := range [][]string{
			{"netns", "add", ns},
			{"-n", ns, "link", "set", "lo", "up"},
			{"link", "add", host, "type", "veth", "peer", "name", peer},
			{"link", "set", peer, "netns", ns},
			{"-n", ns, "link", "set", peer, "name", Dev},
			{"-n", ns, "addr", "add", n.IP(i) + "/24", "dev", Dev},
			{"-n", ns, "link", "set", Dev, "up"},
			{"link", "set", host, "master", n.Bridge},
			{"link", "set", host, "up"},
		} {
			if err := ip(args...); err != nil {
				return fail(err)
			}
		}
	}
	return n, nil
}

// Teardown removes the namespaces (killing what still runs in them) and the
// bridge. It can be called more than once.
func (n *Net) Teardown() {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.gone {
		return
	}
	n.gone = true
	Remove(n.Pid, n.Nodes)
}

// Remove deletes the namespaces, veths and bridge of the run of checker pid.
func Remove(pid, nodes int) {
	for i := 1; i <= nodes; i++ {
		ns := fmt.Sprintf("%s%dn%d", Prefix, pid, i)
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
			killIn(ns)
			_ = ip("netns", "del", ns)
		}
		host := fmt.Sprintf("%s%dh%d", Prefix, pid, i)
		if _, err := os.Stat(filepath.Join("/sys/class/net", host)); err == nil {
			_ = ip("link", "del", host)
		}
	}
	br := fmt.Sprintf("%sb%d", Prefix, pid)
	if _, err := os.Stat(filepath.Join("/sys/class/net", br)); err == nil {
		_ = ip("link", "del", br)
	}
}

// Reap is the body of the reaper process: it blocks until its stdin reaches
// end of file (its parent, the checker, has exited, however it ended) and
// then removes that run's namespaces, veths and bridge.
func Reap(stdin io.Reader, pid, nodes int) {
	_, _ = io.Copy(io.Discard, bufio.NewReader(stdin))
	Remove(pid, nodes)
}

// StartReaper starts `self reaperArgs...` in its own process group with a
// pipe as its stdin that only this process holds: when this process ends,
// however, the reaper reads end of file and tears the network down.
func StartReaper(self string, reaperArgs ...string) error {
	cmd := exec.Command(self, reaperArgs...)
	w, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	reaperStdin = w // kept open (and referenced) for the life of this process
	go func() { _ = cmd.Wait() }()
	return nil
}

var reaperStdin io.WriteCloser

// Pair is an unordered pair of nodes (1-based, A < B).
type Pair struct{ A, B int }

func pairOf(a, b int) [2]int {
	if a > b {
		a, b = b, a
	}
	return [2]int{a, b}
}

// blackhole is the MAC address partitioned peers are pointed at: locally
// administered, unicast, owned by nobody.
const blackhole = "02:00:5c:00:00:00"

// Cut partitions the given pairs of nodes: each stops receiving the other's
// packets (both directions), as DROP rules would.
func (n *Net) Cut(pairs []Pair) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range pairs {
		for _, d := range [][2]int{{p.A, p.B}, {p.B, p.A}} {
			if err := ip("-n", n.NS(d[0]), "neigh", "replace", n.IP(d[1]), "lladdr", blackhole, "nud", "permanent", "dev", Dev); err != nil {
				return err
			}
		}
		n.cut[pairOf(p.A, p.B)] = true
	}
	return nil
}

// HealAll removes every partition.
func (n *Net) HealAll() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	keys := make([][2]int, 0, len(n.cut))
	for k := range n.cut {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		for _, d := range [][2]int{{k[0], k[1]}, {k[1], k[0]}} {
			// A flushed entry is fine: the next packet resolves the peer again.
			if err := ip("-n", n.NS(d[0]), "neigh", "del", n.IP(d[1]), "dev", Dev); err != nil && !strings.Contains(err.Error(), "No such file") {
				errs = append(errs, err)
			}
		}
		delete(n.cut, k)
	}
	return errors.Join(errs...)
}

// CutPairs reports the pairs partitioned now.
func (n *Net) CutPairs() []Pair {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []Pair
	for k := range n.cut {
		out = append(out, Pair{k[0], k[1]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].A < out[j].A || out[i].A == out[j].A && out[i].B < out[j].B })
	return out
}

// Netem gives node i's link (both directions: its own interface and the
// bridge's end of it) a delay with jitter and a loss rate.
func (n *Net) Netem(i int, delayMs, jitterMs int, lossPct float64) error {
	args := []string{"qdisc", "replace", "dev", Dev, "root", "netem", "delay", fmt.Sprintf("%dms", delayMs), fmt.Sprintf("%dms", jitterMs), "loss", fmt.Sprintf("%.1f%%", lossPct)}
	if out, err := exec.Command("ip", append([]string{"netns", "exec", n.NS(i), "tc"}, args...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("tc %s in %s: %v: %s", strings.Join(args, " "), n.NS(i), err, strings.TrimSpace(string(out)))
	}
	args[3] = n.HostVeth(i)
	if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("tc %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ClearNetem removes node i's netem queueing disciplines.
func (n *Net) ClearNetem(i int) error {
	var errs []error
	if out, err := exec.Command("ip", "netns", "exec", n.NS(i), "tc", "qdisc", "del", "dev", Dev, "root").CombinedOutput(); err != nil && !strings.Contains(string(out), "No such file") && !strings.Contains(string(out), "Cannot delete qdisc with handle of zero") {
		errs = append(errs, fmt.Errorf("tc qdisc del in %s: %s", n.NS(i), strings.TrimSpace(string(out))))
	}
	if out, err := exec.Command("tc", "qdisc", "del", "dev", n.HostVeth(i), "root").CombinedOutput(); err != nil && !strings.Contains(string(out), "No such file") && !strings.Contains(string(out), "Cannot delete qdisc with handle of zero") {
		errs = append(errs, fmt.Errorf("tc qdisc del dev %s: %s", n.HostVeth(i), strings.TrimSpace(string(out))))
	}
	return errors.Join(errs...)
}

// Command returns argv prefixed to run it inside node i's namespace.
func (n *Net) Command(i int, argv ...string) []string {
	return append([]string{"ip", "netns", "exec", n.NS(i)}, argv...)
}
