package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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
Running it again on the same --dir restarts the same cluster.

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
		fs.PrintDefaults()
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
	type child struct {
		id   int
		cmd  *exec.Cmd
		log  string
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
		props := strings.Join([]string{
			"# written by sluice dev cluster",
			fmt.Sprintf("node.id=%d", i+1),
			"process.roles=broker,controller",
			"controller.quorum.voters=" + strings.Join(voters, ","),
			fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", *base+i, *base+100+i),
			"controller.listener.names=CONTROLLER",
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"log.dirs=" + filepath.Join(nd, "data"),
			"",
		}, "\n")
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
		cmd := exec.Command(self, "--config", propsFile, "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", *base+200+i))
		cmd.Stdout, cmd.Stderr = lf, lf
		cmd.Env = os.Environ()
		if err := cmd.Start(); err != nil {
			lf.Close()
			fmt.Fprintf(stderr, "sluice dev cluster: starting node %d: %v\n", i+1, err)
			stopAll()
			return 1
		}
		c := &child{id: i + 1, cmd: cmd, log: logPath, done: make(chan error, 1)}
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
		}
	}
}
