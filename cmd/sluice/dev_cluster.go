package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const devUsage = `Usage: sluice dev cluster [flags]

Starts a local cluster of sluice processes on 127.0.0.1 (node i: Kafka port
BASE+i-1, controller port BASE+100+i-1, metrics port BASE+200+i-1), each with
its own data directory and log file under --dir, prints the bootstrap
servers, and stops them all on Ctrl-C (SIGTERM, then SIGKILL after 30 s).
Running it again on the same --dir restarts the same cluster; it refuses to
start while any of the cluster's ports is busy (the cluster still runs). When
one node exits it prints the command that restarts that node alone:
sluice --config DIR/node-N/server.properties >> DIR/node-N/sluice.log 2>&1

Flags:
`

// devCommand is "sluice dev …": tools for trying Sluice on one machine.
func devCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		out := stderr
		if len(args) > 0 {
			out = stdout
		}
		fmt.Fprint(out, "Usage: sluice dev cluster [flags]   run a local multi-node cluster (sluice dev cluster --help)\n")
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] != "cluster" {
		fmt.Fprintf(stderr, "sluice dev: unknown command %q (sluice dev cluster)\n", args[0])
		return 2
	}
	fs := flag.NewFlagSet("sluice dev cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nodes := fs.Int("nodes", 3, "number of nodes (1-9)")
	base := fs.Int("base-port", 9092, "Kafka port of node 1")
	dir := fs.String("dir", "dev-cluster", "`directory` holding each node's server.properties, data and log")
	for _, a := range args[1:] {
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(stdout)
		}
	}
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), devUsage)
		printFlagDefaults(fs)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice dev cluster: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *nodes < 1 || *nodes > 9 || *base < 1 || *base+300 > 65535 {
		fmt.Fprintln(stderr, "sluice dev cluster: --nodes must be 1-9 and --base-port leave room for 300 ports")
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "sluice dev cluster: %v\n", err)
		return 1
	}
	var voters, bootstrap []string
	for i := 0; i < *nodes; i++ {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, *base+100+i))
		bootstrap = append(bootstrap, fmt.Sprintf("127.0.0.1:%d", *base+i))
	}
	if busy := devBusyPorts(*nodes, *base); len(busy) > 0 {
		fmt.Fprintf(stderr, "sluice dev cluster: ports already in use, is this cluster already running? %s\n", strings.Join(busy, "; "))
		fmt.Fprintf(stderr, "restart one stopped node with: %s\n", devRestartCommand(self, filepath.Join(*dir, "node-N")))
		return 1
	}
	type child struct {
		id   int
		cmd  *exec.Cmd
		log  string
		dir  string
		done chan error
	}
	var children []*child
	stopAll := func() {
		for _, c := range children {
			if c.cmd.Process != nil {
				c.cmd.Process.Signal(syscall.SIGTERM)
			}
		}
		deadline := time.After(30 * time.Second)
		for _, c := range children {
			select {
			case <-c.done:
			case <-deadline:
				c.cmd.Process.Kill()
				<-c.done
			}
		}
	}
	for i := 0; i < *nodes; i++ {
		nd := filepath.Join(*dir, fmt.Sprintf("node-%d", i+1))
		if err := os.MkdirAll(nd, 0o755); err != nil {
			fmt.Fprintf(stderr, "sluice dev cluster: %v\n", err)
			stopAll()
			return 1
		}
		props := devNodeProps(i+1, *base, voters, nd)
		propsFile := filepath.Join(nd, "server.properties")
		if err := os.WriteFile(propsFile, []byte(props), 0o644); err != nil {
			fmt.Fprintf(stderr, "sluice dev cluster: %v\n", err)
			stopAll()
			return 1
		}
		logPath := filepath.Join(nd, "sluice.log")
		lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "sluice dev cluster: %v\n", err)
			stopAll()
			return 1
		}
		cmd := exec.Command(self, "--config", propsFile)
		cmd.Stdout, cmd.Stderr = lf, lf
		cmd.Env = os.Environ()
		if err := cmd.Start(); err != nil {
			lf.Close()
			fmt.Fprintf(stderr, "sluice dev cluster: starting node %d: %v\n", i+1, err)
			stopAll()
			return 1
		}
		c := &child{id: i + 1, cmd: cmd, log: logPath, dir: nd, done: make(chan error, 1)}
		go func() { c.done <- cmd.Wait(); lf.Close() }()
		children = append(children, c)
		fmt.Fprintf(stdout, "node %d: pid %d, kafka 127.0.0.1:%d, controller 127.0.0.1:%d, metrics 127.0.0.1:%d, log %s\n",
			i+1, cmd.Process.Pid, *base+i, *base+100+i, *base+200+i, logPath)
	}
	fmt.Fprintf(stdout, "bootstrap servers: %s\n", strings.Join(bootstrap, ","))
	fmt.Fprintln(stdout, "Ctrl-C stops the cluster.")
	exited := make(chan *child, len(children))
	for _, c := range children {
		go func() {
			err := <-c.done
			c.done <- err // keep it for stopAll
			exited <- c
		}()
	}
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(stdout, "stopping the cluster")
			stopAll()
			return 0
		case c := <-exited:
			err := <-c.done
			c.done <- err
			fmt.Fprintf(stderr, "node %d (pid %d) exited: %v; see %s (the others keep running; Ctrl-C stops them)\n",
				c.id, c.cmd.Process.Pid, err, c.log)
			fmt.Fprintf(stderr, "restart node %d alone (same ports and data; Ctrl-C here does not stop it) with:\n  %s\n",
				c.id, devRestartCommand(self, c.dir))
		}
	}
}

// devNodeProps is the server.properties of node id of a dev cluster: the
// metrics address is in it too, so that a node restarted from the file alone
// keeps all its ports.
func devNodeProps(id, base int, voters []string, nodeDir string) string {
	i := id - 1
	return strings.Join([]string{
		"# written by sluice dev cluster",
		fmt.Sprintf("node.id=%d", id),
		"process.roles=broker,controller",
		"controller.quorum.voters=" + strings.Join(voters, ","),
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", base+i, base+100+i),
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"log.dirs=" + filepath.Join(nodeDir, "data"),
		fmt.Sprintf("sluice.metrics.listen=127.0.0.1:%d", base+200+i),
		"",
	}, "\n")
}

// devRestartCommand is the shell command that restarts one node of a dev
// cluster from its directory, appending to the same log file.
func devRestartCommand(self, nodeDir string) string {
	if abs, err := filepath.Abs(nodeDir); err == nil {
		nodeDir = abs
	}
	return fmt.Sprintf("%s --config %s >> %s 2>&1", self,
		filepath.Join(nodeDir, "server.properties"), filepath.Join(nodeDir, "sluice.log"))
}

// devBusyPorts lists the ports of a dev cluster that something already
// listens on, by node ("node 1: kafka 127.0.0.1:9092, …").
func devBusyPorts(nodes, base int) []string {
	var busy []string
	for i := 0; i < nodes; i++ {
		var ports []string
		for _, p := range []struct {
			name string
			port int
		}{{"kafka", base + i}, {"controller", base + 100 + i}, {"metrics", base + 200 + i}} {
			addr := fmt.Sprintf("127.0.0.1:%d", p.port)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				ports = append(ports, p.name+" "+addr)
				continue
			}
			ln.Close()
		}
		if len(ports) > 0 {
			busy = append(busy, fmt.Sprintf("node %d: %s", i+1, strings.Join(ports, ", ")))
		}
	}
	return busy
}
