package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A target is one running broker process under test.
type target struct {
	name    string // "sluice", "kafka", "kfake"
	addr    string // 127.0.0.1:port for clients
	dataDir string // "" for kfake (in memory)
	durable bool   // honours flush.messages (kfake does not persist)
	pprof   string // host:port of /debug/pprof (sluice-profiled only)

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	log  *os.File
}

func (t *target) pid() int { return t.cmd.Process.Pid }

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startProcess runs cmd with its output in logPath and returns a target whose
// done channel closes on exit. onLine, if set, sees each stdout line (used to
// read "ready"/"pprof" announcements).
func startProcess(name string, cmd *exec.Cmd, logPath string, onLine func(string)) (*target, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = lf
	var stdout io.ReadCloser
	if onLine != nil {
		if stdout, err = cmd.StdoutPipe(); err != nil {
			lf.Close()
			return nil, err
		}
	} else {
		cmd.Stdout = lf
	}
	// Own process group, so a stop reaches the JVM's children too and a
	// Ctrl-C on the harness does not race our orderly shutdown; and killed
	// with the harness, so no broker outlives a crashed or killed run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	t := &target{name: name, cmd: cmd, done: make(chan struct{}), log: lf}
	if stdout != nil {
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				line := sc.Text()
				fmt.Fprintln(lf, line)
				onLine(line)
			}
		}()
	}
	go func() { _ = cmd.Wait(); close(t.done) }()
	return t, nil
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs the process group.
func (t *target) stop(grace time.Duration) {
	if t == nil || t.cmd == nil || t.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-t.pid(), syscall.SIGTERM)
	select {
	case <-t.done:
	case <-time.After(grace):
		_ = syscall.Kill(-t.pid(), syscall.SIGKILL)
		<-t.done
	}
	t.log.Close()
}

// waitReady polls the broker until it answers Metadata with a broker and can
// create (and delete) a topic, or the deadline passes.
func (t *target) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-t.done:
			return fmt.Errorf("%s exited during startup (see %s)", t.name, t.log.Name())
		default:
		}
		last = probe(ctx, t.addr)
		if last == nil {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after %v: %v (see %s)", t.name, timeout, last, t.log.Name())
}

func probe(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	md, err := adm.BrokerMetadata(pctx)
	if err != nil {
		return err
	}
	if len(md.Brokers) == 0 {
		return errors.New("no brokers in metadata")
	}
	name := fmt.Sprintf("bench-probe-%d", time.Now().UnixNano())
	if _, err := adm.CreateTopic(pctx, 1, 1, nil, name); err != nil {
		return err
	}
	_, _ = adm.DeleteTopics(pctx, name)
	return nil
}

// buildGo builds package pkg of the module in dir (the repository root for
// cmd/sluice, bench/ for the harness's own commands) into binDir.
func buildGo(dir, binDir, pkg, out string) (string, error) {
	path := filepath.Join(binDir, out)
	cmd := exec.Command("go", "build", "-o", path, pkg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w", pkg, err)
	}
	return path, nil
}

// startSluice runs the broker built from this tree (or sluice-profiled when
// profiling) with default configs on a fresh data directory.
func startSluice(o *options, bin string, profiled bool) (*target, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.workDir, "sluice-data")
	if err := freshDir(dir); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{"--listen", addr, "--data-dir", dir}
	pprofCh := make(chan string, 1)
	var onLine func(string)
	if profiled {
		args = append(args, "--pprof-listen", "127.0.0.1:0")
		onLine = func(l string) {
			if a, ok := strings.CutPrefix(l, "pprof "); ok {
				pprofCh <- a
			}
		}
	}
	t, err := startProcess("sluice", exec.Command(bin, args...), filepath.Join(o.tmpDir, "sluice.log"), onLine)
	if err != nil {
		return nil, err
	}
	t.addr, t.dataDir, t.durable = addr, dir, true
	if profiled {
		select {
		case t.pprof = <-pprofCh:
		case <-t.done:
			return nil, fmt.Errorf("sluice-profiled exited during startup (see %s)", t.log.Name())
		case <-time.After(30 * time.Second):
			t.stop(5 * time.Second)
			return nil, errors.New("sluice-profiled did not announce its pprof address")
		}
	}
	return t, nil
}

// startKfake runs bench/cmd/kfake: franz-go's in-memory cluster, one broker.
func startKfake(o *options, bin string) (*target, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	t, err := startProcess("kfake", exec.Command(bin, "--port", fmt.Sprint(port)), filepath.Join(o.tmpDir, "kfake.log"), nil)
	if err != nil {
		return nil, err
	}
	t.addr = fmt.Sprintf("127.0.0.1:%d", port)
	return t, nil
}

func freshDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}
