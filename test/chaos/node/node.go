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
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config describes one node.
type Config struct {
	ID      int
	Dir     string            // the node's own directory
	Listen  string            // host:port of its PLAINTEXT listener (127.0.0.1)
	Metrics string            // host:port of its /metrics listener (127.0.0.1)
	Props   map[string]string // further broker configs for server.properties
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
}

var (
	liveMu sync.Mutex
	live   = map[*Node]bool{}
)

// New writes the node's server.properties and returns it, not yet started.
func New(bin string, cfg Config) (*Node, error) {
	for _, a := range []string{cfg.Listen, cfg.Metrics} {
		host, _, err := net.SplitHostPort(a)
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
	for k, v := range cfg.Props {
		props[k] = v
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
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(pctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Brokers) == 0 {
		return errors.New("metadata names no broker")
	}
	var d net.Dialer
	conn, err := d.DialContext(pctx, "tcp", n.Metrics)
	if err != nil {
		return fmt.Errorf("metrics listener: %w", err)
	}
	conn.Close()
	return nil
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// SingleNodeOnly tells whether the binary says it runs a single node only
// (its --help does until the cluster lands).
func SingleNodeOnly(bin string) (bool, error) {
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if len(out) == 0 && err != nil {
		return false, fmt.Errorf("%s --help: %w", bin, err)
	}
	return bytes.Contains(out, []byte("single-node")), nil
}

// Cluster is the set of nodes of one run.
type Cluster struct {
	Nodes []*Node
}

// NewCluster lays out n nodes under dir with the given broker configs. For n
// above one it needs a binary that runs a cluster; Sluice does not yet, and
// NewCluster says so rather than starting n unrelated brokers.
func NewCluster(bin, dir string, n int, props map[string]string) (*Cluster, error) {
	if n < 1 || n > 5 {
		return nil, fmt.Errorf("--nodes %d: between 1 and 5 nodes", n)
	}
	if n > 1 {
		single, err := SingleNodeOnly(bin)
		if err != nil {
			return nil, err
		}
		if single {
			return nil, fmt.Errorf("--nodes %d: this sluice binary runs a single node only (its --help says so); "+
				"multi-node runs wait for the cluster (controller.quorum.voters and replication)", n)
		}
		// When the cluster lands: write controller.quorum.voters and the
		// controller listener here, one entry per node.
		return nil, fmt.Errorf("--nodes %d: cluster server.properties are not written yet", n)
	}
	c := &Cluster{}
	for i := 1; i <= n; i++ {
		listen, err := FreeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		metrics, err := FreeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		nd, err := New(bin, Config{ID: i, Dir: filepath.Join(dir, fmt.Sprintf("node%d", i)), Listen: listen, Metrics: metrics, Props: props})
		if err != nil {
			return nil, err
		}
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

// Start starts every node and waits until all are healthy.
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
