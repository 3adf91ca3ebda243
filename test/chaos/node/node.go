// Package node runs real sluice processes for the fault checker: each node
// has its own directory holding its server.properties, its data directory and
// its log file, and listens on loopback only. A node's process runs in its own
// process group, so that SIGKILL, SIGSTOP and SIGCONT reach everything it
// started, and every node still running is killed when the checker exits
// (StopAll, and the parent-death signal if the checker itself is killed).
package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config describes one node.
type Config struct {
	ID      int
	Dir     string // the node's own directory
	Listen  string // host:port of its PLAINTEXT listener (127.0.0.1)
	Metrics string // host:port of its /metrics listener (127.0.0.1)
	// Controller is host:port of its CONTROLLER listener (the metadata
	// quorum's peer listener) on a cluster node; empty on a single node.
	Controller string
	// Voters is controller.quorum.voters of a cluster node ("1@host:port,…").
	Voters string
	Props  map[string]string // further broker configs for server.properties
	// Netns is the network namespace the node runs in (ip netns exec);
	// empty: the root namespace, on loopback.
	Netns string
}

// PropertiesPath is where the node's server.properties is written.
func (c Config) PropertiesPath() string { return filepath.Join(c.Dir, "server.properties") }

// DataDir is the node's log.dirs.
func (c Config) DataDir() string { return filepath.Join(c.Dir, "data") }

// LogPath is the file the node's stdout and stderr go to (appended across restarts).
func (c Config) LogPath() string { return filepath.Join(c.Dir, "node.log") }

// Node is one sluice process (or none, while killed).
type Node struct {
	Config
	bin string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
	starts int
	// members are the node ids of the whole cluster (a cluster node is
	// healthy once its metadata lists them all).
	members []int
}

var (
	liveMu sync.Mutex
	live   = map[*Node]bool{}
)

// New writes the node's server.properties and returns it, not yet started.
func New(bin string, cfg Config) (*Node, error) {
	addrs := []string{cfg.Listen, cfg.Metrics}
	if cfg.Controller != "" {
		addrs = append(addrs, cfg.Controller)
	}
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if cfg.Netns != "" {
			// In its own namespace: an address of the run's bridge subnet.
			if err != nil || net.ParseIP(host) == nil || !namespaceNet.Contains(net.ParseIP(host)) {
				return nil, fmt.Errorf("node %d: %q is not a host:port of %v", cfg.ID, a, namespaceNet)
			}
			continue
		}
		if err != nil || net.ParseIP(host) == nil || !net.ParseIP(host).IsLoopback() {
			return nil, fmt.Errorf("node %d: %q is not a loopback host:port", cfg.ID, a)
		}
	}
	if err := os.MkdirAll(cfg.DataDir(), 0o755); err != nil {
		return nil, err
	}
	props := map[string]string{
		"node.id":              fmt.Sprint(cfg.ID),
		"listeners":            "PLAINTEXT://" + cfg.Listen,
		"advertised.listeners": "PLAINTEXT://" + cfg.Listen,
		"log.dirs":             cfg.DataDir(),
	}
	if cfg.Controller != "" {
		// A combined broker and controller, Kafka's KRaft names.
		props["process.roles"] = "broker,controller"
		props["controller.quorum.voters"] = cfg.Voters
		props["listeners"] = "PLAINTEXT://" + cfg.Listen + ",CONTROLLER://" + cfg.Controller
		props["controller.listener.names"] = "CONTROLLER"
		props["listener.security.protocol.map"] = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
	}
	for k, v := range cfg.Props {
		props[k] = v
	}
	if props[FsyncShadowConfig] == FsyncShadowPerNode {
		props[FsyncShadowConfig] = cfg.FsyncedDir()
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "# written by sluice-chaos for node %d\n", cfg.ID)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	if err := os.WriteFile(cfg.PropertiesPath(), []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return &Node{Config: cfg, bin: bin}, nil
}

// Start starts the process (it must not be running).
func (n *Node) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("node %d is already running", n.ID)
	}
	logf, err := os.OpenFile(n.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	n.starts++
	fmt.Fprintf(logf, "\n==== sluice-chaos: start %d of node %d at %s\n", n.starts, n.ID, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(n.bin, "--config", n.PropertiesPath(), "--metrics-listen", n.Metrics)
	if n.Netns != "" {
		// ip netns exec enters the namespace and execs sluice (same pid).
		cmd = exec.Command("ip", "netns", "exec", n.Netns, n.bin, "--config", n.PropertiesPath(), "--metrics-listen", n.Metrics)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group (signals reach the whole node); killed if we die.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start node %d: %w", n.ID, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	n.cmd, n.exited, n.paused = cmd, exited, false
	liveMu.Lock()
	live[n] = true
	liveMu.Unlock()
	return nil
}

// Pid is the process id of the running node, or 0.
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Running tells whether the node has a process (paused or not).
func (n *Node) Running() bool { return n.Pid() != 0 }

// Paused tells whether the node is stopped with SIGSTOP.
func (n *Node) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused
}

func (n *Node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("node %d is not running", n.ID)
	}
	// The process group id is the node's pid (Setpgid).
	if err := syscall.Kill(-n.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("signal %v to node %d: %w", sig, n.ID, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
	return nil
}

// Kill sends SIGKILL to the node's process group and waits (at most
// timeout) for the process to be gone.
func (n *Node) Kill(timeout time.Duration) error {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := n.signal(syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	select {
	case <-exited:
	case <-time.After(timeout):
		return fmt.Errorf("node %d (pid %d) still there %v after SIGKILL", n.ID, cmd.Process.Pid, timeout)
	}
	n.mu.Lock()
	n.cmd, n.paused = nil, false
	n.mu.Unlock()
	liveMu.Lock()
	delete(live, n)
	liveMu.Unlock()
	return nil
}

// Pause sends SIGSTOP to the node's process group.
func (n *Node) Pause() error { return n.signal(syscall.SIGSTOP) }

// Resume sends SIGCONT to the node's process group.
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT) }

// Stop ends the node gracefully (SIGCONT, SIGTERM), and with SIGKILL if it is
// not gone within timeout.
func (n *Node) Stop(timeout time.Duration) error {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = n.signal(syscall.SIGCONT)
	_ = n.signal(syscall.SIGTERM)
	select {
	case <-exited:
		n.mu.Lock()
		n.cmd, n.paused = nil, false
		n.mu.Unlock()
		liveMu.Lock()
		delete(live, n)
		liveMu.Unlock()
		return nil
	case <-time.After(timeout):
		return n.Kill(timeout)
	}
}

// Terminate ends the node with SIGTERM alone (a clean, controlled shutdown)
// and waits for it; if it is still there after timeout it gets SIGKILL and
// the error says so.
func (n *Node) Terminate(timeout time.Duration) error {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := n.signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-exited:
		n.mu.Lock()
		n.cmd, n.paused = nil, false
		n.mu.Unlock()
		liveMu.Lock()
		delete(live, n)
		liveMu.Unlock()
		return nil
	case <-time.After(timeout):
		if err := n.Kill(timeout); err != nil {
			return err
		}
		return fmt.Errorf("node %d still running %v after SIGTERM: killed", n.ID, timeout)
	}
}

// Exited tells whether the process ended by itself (it was not killed by us).
func (n *Node) Exited() bool {
	n.mu.Lock()
	exited := n.exited
	running := n.cmd != nil
	n.mu.Unlock()
	if !running {
		return false
	}
	select {
	case <-exited:
		return true
	default:
		return false
	}
}

// WaitHealthy polls the node until it answers a Metadata request and its
// metrics endpoint, or the context ends.
func (n *Node) WaitHealthy(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Listen), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second),
		kgo.DialTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	var last error
	for {
		if n.Exited() {
			return fmt.Errorf("node %d exited; last lines of %s:\n%s", n.ID, n.LogPath(), n.LogTail(20))
		}
		last = n.probe(ctx, cl)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d not healthy: %w (last probe: %v)", n.ID, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (n *Node) probe(ctx context.Context, cl *kgo.Client) error {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := MetadataOf(pctx, cl, n.Controller != "")
	if err != nil {
		return err
	}
	if len(resp.Brokers) == 0 {
		return errors.New("metadata names no broker")
	}
	if n.Controller != "" {
		// A cluster node serves once its own view of the cluster holds every
		// node (registered and unfenced, itself included) and a controller.
		have := map[int32]bool{}
		for _, b := range resp.Brokers {
			have[b.NodeID] = true
		}
		for _, id := range n.members {
			if !have[int32(id)] {
				return fmt.Errorf("its metadata does not list broker %d yet (brokers %v, controller %d)", id, brokerIDs(resp), resp.ControllerID)
			}
		}
		if resp.ControllerID < 0 {
			return errors.New("its metadata names no controller yet")
		}
		// A restarted node answers Metadata from the quorum's image before
		// the controller has taken its new registration (its old session
		// must expire first), and the image still names it leader of its
		// partitions: it serves once it answers ListOffsets for each.
		if err := n.servesItsPartitions(pctx, cl, resp); err != nil {
			return err
		}
	}
	var d net.Dialer
	conn, err := d.DialContext(pctx, "tcp", n.Metrics)
	if err != nil {
		return fmt.Errorf("metrics listener: %w", err)
	}
	conn.Close()
	return nil
}

// servesItsPartitions asks the node (directly) for the end offset of every
// partition its metadata says it leads.
func (n *Node) servesItsPartitions(ctx context.Context, cl *kgo.Client, md *kmsg.MetadataResponse) error {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for _, t := range md.Topics {
		if t.Topic == nil {
			continue
		}
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = *t.Topic
		for _, p := range t.Partitions {
			if p.Leader == int32(n.ID) {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition = p.Partition
				rp.CurrentLeaderEpoch = -1
				rp.Timestamp = -1
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		if len(rt.Partitions) > 0 {
			req.Topics = append(req.Topics, rt)
		}
	}
	if len(req.Topics) == 0 {
		return nil
	}
	kr, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return fmt.Errorf("list offsets of its partitions: %w", err)
	}
	for _, t := range kr.(*kmsg.ListOffsetsResponse).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return fmt.Errorf("it does not serve %s-%d yet: %v", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	return nil
}

func brokerIDs(resp *kmsg.MetadataResponse) []int32 {
	var out []int32
	for _, b := range resp.Brokers {
		out = append(out, b.NodeID)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// MetadataOf asks cl's first seed broker, and only it, for the cluster's
// metadata (with every topic, or none): what that one node sees, never
// another broker's view.
func MetadataOf(ctx context.Context, cl *kgo.Client, allTopics bool) (*kmsg.MetadataResponse, error) {
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return nil, errors.New("client without seed brokers")
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // none
	if allTopics {
		req.Topics = nil // every topic
	}
	kr, err := seeds[0].Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return kr.(*kmsg.MetadataResponse), nil
}

// LogTail returns the last lines of the node's log.
func (n *Node) LogTail(lines int) string {
	b, err := os.ReadFile(n.LogPath())
	if err != nil {
		return err.Error()
	}
	ls := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return string(bytes.Join(ls, []byte("\n")))
}

// StopAll kills every node still running (used on exit, on errors and on
// Ctrl-C). It resumes paused nodes first so that they can die.
func StopAll() {
	liveMu.Lock()
	nodes := make([]*Node, 0, len(live))
	for n := range live {
		nodes = append(nodes, n)
	}
	liveMu.Unlock()
	for _, n := range nodes {
		_ = n.Stop(5 * time.Second)
	}
}

// FreeLoopbackAddr returns 127.0.0.1:port with a port free right now.
func FreeLoopbackAddr() (string, error) {
	as, err := FreeLoopbackAddrs(1)
	if err != nil {
		return "", err
	}
	return as[0], nil
}

// FreeLoopbackAddrs returns n distinct 127.0.0.1:port addresses free right
// now: every listener stays open until all are chosen, so that the kernel
// cannot hand the same port out twice (with one listener at a time, a
// node's metrics port once came back as another node's controller port).
func FreeLoopbackAddrs(n int) ([]string, error) {
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// ClusterSupport tells whether the binary runs cluster nodes: its --help
// names controller.quorum.voters (a binary from before the cluster says it is
// single-node and does not). The error explains a binary that cannot.
func ClusterSupport(bin string) error {
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if len(out) == 0 && err != nil {
		return fmt.Errorf("%s --help: %w", bin, err)
	}
	if bytes.Contains(out, []byte("controller.quorum.voters")) {
		return nil
	}
	if bytes.Contains(out, []byte("single-node")) {
		return fmt.Errorf("this sluice binary (%s) runs a single node only (its --help says so): build one with the cluster (controller.quorum.voters)", bin)
	}
	return fmt.Errorf("this sluice binary (%s) does not say it runs cluster nodes (its --help does not mention controller.quorum.voters)", bin)
}

// Cluster is the set of nodes of one run.
type Cluster struct {
	Nodes []*Node
}

// NewCluster lays out n nodes under dir with the given broker configs. One
// node is a single-node broker; two to five form one cluster, every node a
// combined broker and controller (a voter of the metadata quorum), which
// needs a binary with cluster support (ClusterSupport).
func NewCluster(bin, dir string, n int, props map[string]string) (*Cluster, error) {
	return NewClusterIn(bin, dir, n, props, nil)
}

// namespaceNet holds the addresses nodes in network namespaces may have.
var namespaceNet = &net.IPNet{IP: net.IPv4(10, 250, 0, 0), Mask: net.CIDRMask(16, 32)}

// Namespaces places nodes in network namespaces: node i (1-based) runs in
// NS(i) and has the address IP(i) (netns.Net does).
type Namespaces interface {
	NS(i int) string
	IP(i int) string
}

// NewClusterIn is NewCluster with every node in its own network namespace
// (ns non-nil): each listens on its namespace's address, the same ports on
// every node.
func NewClusterIn(bin, dir string, n int, props map[string]string, ns Namespaces) (*Cluster, error) {
	if n < 1 || n > 5 {
		return nil, fmt.Errorf("--nodes %d: between 1 and 5 nodes", n)
	}
	if n > 1 {
		if err := ClusterSupport(bin); err != nil {
			return nil, fmt.Errorf("--nodes %d: %w", n, err)
		}
	}
	type addrs struct{ listen, metrics, controller string }
	var as []addrs
	var voters []string
	var members []int
	var free []string
	var err error
	if ns == nil {
		free, err = FreeLoopbackAddrs(3 * n)
		if err != nil {
			return nil, err
		}
	} else {
		for i := 1; i <= n; i++ {
			free = append(free, ns.IP(i)+":9092", ns.IP(i)+":9100", ns.IP(i)+":9093")
		}
	}
	for i := 1; i <= n; i++ {
		a := addrs{listen: free[3*i-3], metrics: free[3*i-2], controller: free[3*i-1]}
		if n == 1 {
			a.controller = ""
		}
		as = append(as, a)
		voters = append(voters, fmt.Sprintf("%d@%s", i, a.controller))
		members = append(members, i)
	}
	c := &Cluster{}
	for i, a := range as {
		cfg := Config{ID: i + 1, Dir: filepath.Join(dir, fmt.Sprintf("node%d", i+1)), Listen: a.listen, Metrics: a.metrics, Props: props}
		if n > 1 {
			cfg.Controller, cfg.Voters = a.controller, strings.Join(voters, ",")
		}
		if ns != nil {
			cfg.Netns = ns.NS(i + 1)
		}
		nd, err := New(bin, cfg)
		if err != nil {
			return nil, err
		}
		nd.members = members
		c.Nodes = append(c.Nodes, nd)
	}
	return c, nil
}

// Addrs are the nodes' Kafka listeners.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Listen)
	}
	return out
}

// Start starts every node and waits until all are healthy (on a cluster:
// each node's metadata lists every node and a controller).
func (c *Cluster) Start(ctx context.Context) error {
	for _, n := range c.Nodes {
		if err := n.Start(); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes {
		if err := n.WaitHealthy(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Controller asks every running, unpaused node (directly) which node is the
// active controller and returns the id most of the answers name (a node
// just back from a pause may still name the old one); -1 when none names
// one within ctx.
func (c *Cluster) Controller(ctx context.Context) int {
	votes := map[int]int{}
	best := -1
	for _, n := range c.Nodes {
		if !n.Running() || n.Paused() {
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.Listen), kgo.RequestRetries(0), kgo.DialTimeout(time.Second))
		if err != nil {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := MetadataOf(qctx, cl, false)
		cancel()
		cl.Close()
		if err != nil || resp.ControllerID < 0 {
			continue
		}
		id := int(resp.ControllerID)
		votes[id]++
		if best < 0 || votes[id] > votes[best] {
			best = id
		}
	}
	return best
}

// WaitReady polls the node's /readyz (on its metrics listener) until it
// answers 200, or the context ends.
func (n *Node) WaitReady(ctx context.Context) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	last := ""
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.Metrics+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d not ready: %w (last /readyz: %s)", n.ID, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
