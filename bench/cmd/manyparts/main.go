// Command manyparts measures one Sluice node holding many partitions (issue
// #14, item 2): it builds cmd/sluice, starts it on a fresh data directory
// and measures creating the partitions with CreateTopics, the RSS and the
// descriptors with all of them idle, a Metadata request for all of them,
// produce and consume spread over a subset, graceful shutdown, and restart
// to serving after a clean shutdown and after SIGKILL. The descriptor limit
// is the one it runs under (run it under `ulimit -n 20000`).
//
//	go -C bench run ./cmd/manyparts --topics 100 --partitions 1000
//
// It prints a Markdown table; the data directory is removed at the end.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type options struct {
	root       string
	workDir    string
	topics     int
	partitions int
	active     int
	records    int
	recordSize int
	perRequest int
	keep       bool
	restarts   bool
	idle       time.Duration
	createOnly bool
}

func main() {
	var o options
	flag.StringVar(&o.root, "root", "..", "repository root (cmd/sluice is built from it)")
	flag.StringVar(&o.workDir, "dir", "", "work directory (default: a new one under /tmp)")
	flag.IntVar(&o.topics, "topics", 100, "topics to create")
	flag.IntVar(&o.partitions, "partitions", 1000, "partitions per topic")
	flag.IntVar(&o.active, "active", 10000, "partitions produced to and consumed from (the first topics')")
	flag.IntVar(&o.records, "records", 10, "records produced per active partition")
	flag.IntVar(&o.recordSize, "record-size", 100, "record value size in bytes")
	flag.IntVar(&o.perRequest, "topics-per-request", 10, "topics per CreateTopics request")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory")
	flag.BoolVar(&o.restarts, "restarts-only", false, "only measure restarts of the data directory a --keep run left in --dir (no create, produce or consume; --topics and --partitions must match that run)")
	flag.DurationVar(&o.idle, "idle", 0, "after creating, measure the broker's CPU over this long with every partition idle (0: not measured)")
	flag.BoolVar(&o.createOnly, "create-only", false, "stop after the create and idle measurements")
	flag.Parse()
	if err := run(&o); err != nil {
		fmt.Fprintln(os.Stderr, "manyparts:", err)
		os.Exit(1)
	}
}

// topicPrefix starts the name of every topic created.
const topicPrefix = "mp"

type row struct{ what, value string }

var rows []row

func report(what, format string, args ...any) {
	v := fmt.Sprintf(format, args...)
	rows = append(rows, row{what, v})
	fmt.Fprintf(os.Stderr, "%s: %s\n", what, v)
}

func run(o *options) (err error) {
	if o.workDir == "" {
		if o.workDir, err = os.MkdirTemp("", "sluice-manyparts-"); err != nil {
			return err
		}
	}
	if !o.keep {
		defer os.RemoveAll(o.workDir)
	}
	root, err := filepath.Abs(o.root)
	if err != nil {
		return err
	}
	bin := filepath.Join(o.workDir, "sluice")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sluice")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	var lim syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	total := o.topics * o.partitions
	report("descriptor limit (RLIMIT_NOFILE)", "%d", lim.Cur)
	report("partitions", "%d (%d topics × %d)", total, o.topics, o.partitions)

	dataDir := filepath.Join(o.workDir, "data")
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	if o.restarts {
		return restartsOnly(bin, addr, dataDir, filepath.Join(o.workDir, "sluice.log"), total)
	}
	b, err := startBroker(bin, addr, dataDir, filepath.Join(o.workDir, "sluice.log"))
	if err != nil {
		return err
	}
	defer func() { b.kill() }()
	if _, err := waitServing(addr, 0, 60*time.Second); err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestTimeoutOverhead(15*time.Minute),
		kgo.RetryTimeout(30*time.Minute), kgo.MaxBufferedRecords(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := context.Background()

	// Create.
	names := make([]string, o.topics)
	for i := range names {
		names[i] = fmt.Sprintf("%s%03d", topicPrefix, i)
	}
	cpu0 := b.cpu()
	start := time.Now()
	peakFDs := 0
	for i := 0; i < len(names); i += o.perRequest {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = int32((10 * time.Minute).Milliseconds())
		for _, n := range names[i:min(i+o.perRequest, len(names))] {
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = n, int32(o.partitions), 1
			req.Topics = append(req.Topics, t)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("CreateTopics: %w", err)
		}
		for _, t := range resp.Topics {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				return fmt.Errorf("CreateTopics %s after %d partitions: %w (%s)", t.Topic, i*o.partitions, err, strOr(t.ErrorMessage))
			}
		}
		peakFDs = max(peakFDs, b.fds())
		fmt.Fprintf(os.Stderr, "  created %d partitions in %v (fds %d)\n", (i+len(req.Topics))*o.partitions, time.Since(start).Round(time.Millisecond), b.fds())
	}
	created := time.Since(start)
	report("CreateTopics, all partitions", "%.1f s (%.0f partitions/s), broker CPU %.1f s", created.Seconds(), float64(total)/created.Seconds(), b.cpu()-cpu0)
	report("broker descriptors, peak seen while creating", "%d", peakFDs)

	// Idle.
	time.Sleep(5 * time.Second) // a few housekeeping passes
	rss, hwm := b.mem()
	report("RSS, all partitions idle", "%s (peak so far %s)", mib(rss), mib(hwm))
	report("broker descriptors, idle", "%d", b.fds())
	if o.idle > 0 {
		cpu0 := b.cpu()
		time.Sleep(o.idle)
		report(fmt.Sprintf("broker CPU over %v, all partitions idle", o.idle), "%.2f s", b.cpu()-cpu0)
	}
	if o.createOnly {
		return nil
	}

	// Metadata for everything.
	var best time.Duration
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		n, err := metadataPartitions(ctx, cl)
		d := time.Since(t0)
		if err != nil {
			return err
		}
		if n != total {
			return fmt.Errorf("metadata lists %d partitions, want %d", n, total)
		}
		if i == 0 || d < best {
			best = d
		}
	}
	report("Metadata request for all topics (best of 3, client decode included)", "%d ms", best.Milliseconds())

	// Produce and consume over the active partitions.
	active := min(o.active, total)
	value := make([]byte, o.recordSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(1<<20), kgo.ProducerLinger(5*time.Millisecond), kgo.RequestTimeoutOverhead(5*time.Minute))
	if err != nil {
		return err
	}
	cpu0 = b.cpu()
	start = time.Now()
	var perr error
	nrec := 0
	for r := 0; r < o.records; r++ {
		for p := 0; p < active; p++ {
			rec := &kgo.Record{Topic: names[p/o.partitions], Partition: int32(p % o.partitions), Value: value}
			nrec++
			pcl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
				if err != nil && perr == nil {
					perr = err
				}
			})
		}
	}
	if err := pcl.Flush(ctx); err != nil {
		return err
	}
	pcl.Close()
	if perr != nil {
		return fmt.Errorf("produce: %w", perr)
	}
	pd := time.Since(start)
	report(fmt.Sprintf("produce %d × %d B records over %d partitions (acks=all)", nrec, o.recordSize, active), "%.2f s (%.0f records/s), broker CPU %.1f s, descriptors after %d",
		pd.Seconds(), float64(nrec)/pd.Seconds(), b.cpu()-cpu0, b.fds())

	activeTopics := names[:(active+o.partitions-1)/o.partitions]
	ccl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(activeTopics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return err
	}
	cpu0 = b.cpu()
	start = time.Now()
	got := 0
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	for got < nrec {
		fs := ccl.PollFetches(cctx)
		if err := cctx.Err(); err != nil {
			cancel()
			return fmt.Errorf("consume: %d of %d records: %w", got, nrec, err)
		}
		fs.EachError(func(t string, p int32, err error) {
			fmt.Fprintf(os.Stderr, "  fetch error %s-%d: %v\n", t, p, err)
		})
		got += fs.NumRecords()
	}
	cancel()
	ccl.Close()
	cd := time.Since(start)
	report(fmt.Sprintf("consume the %d records from %d partitions", nrec, active), "%.2f s (%.0f records/s), broker CPU %.1f s, descriptors after %d",
		cd.Seconds(), float64(nrec)/cd.Seconds(), b.cpu()-cpu0, b.fds())
	rss, hwm = b.mem()
	report("RSS after produce/consume", "%s (peak %s)", mib(rss), mib(hwm))
	cl.Close()

	// Graceful shutdown, restart.
	d, err := b.stop(10 * time.Minute)
	if err != nil {
		return err
	}
	report("graceful shutdown (SIGTERM to exit)", "%.2f s", d.Seconds())
	if b, err = startBroker(bin, addr, dataDir, filepath.Join(o.workDir, "sluice.log")); err != nil {
		return err
	}
	ready, err := waitServing(addr, total, 10*time.Minute)
	if err != nil {
		return err
	}
	report("restart to serving after a clean shutdown (start to a Metadata answer with every partition)", "%.2f s", ready.Seconds())
	rss, _ = b.mem()
	report("RSS after restart, idle", "%s", mib(rss))

	// SIGKILL, restart.
	b.kill()
	if b, err = startBroker(bin, addr, dataDir, filepath.Join(o.workDir, "sluice.log")); err != nil {
		return err
	}
	ready, err = waitServing(addr, total, 10*time.Minute)
	if err != nil {
		return err
	}
	report("restart to serving after SIGKILL", "%.2f s", ready.Seconds())
	sum, err := endOffsetSum(addr, activeTopics)
	if err != nil {
		return err
	}
	if sum != int64(nrec) {
		return fmt.Errorf("after SIGKILL the active partitions hold %d records, want %d", sum, nrec)
	}
	report("records on the active partitions after SIGKILL and restart", "%d (all)", sum)
	d, err = b.stop(10 * time.Minute)
	if err != nil {
		return err
	}
	report("graceful shutdown after the SIGKILL restart", "%.2f s", d.Seconds())

	fmt.Println("| measurement | value |")
	fmt.Println("| --- | --- |")
	for _, r := range rows {
		fmt.Printf("| %s | %s |\n", r.what, r.value)
	}
	return nil
}

// restartsOnly starts the broker on an existing data directory and measures
// restarts: the first start (as the directory was left), a graceful
// shutdown, a restart after it, a SIGKILL and a restart after that, and a
// last graceful shutdown.
func restartsOnly(bin, addr, dataDir, logPath string, total int) error {
	if _, err := os.Stat(dataDir); err != nil {
		return fmt.Errorf("--restarts-only needs the data directory of a --keep run: %w", err)
	}
	b, err := startBroker(bin, addr, dataDir, logPath)
	if err != nil {
		return err
	}
	defer func() { b.kill() }()
	ready, err := waitServing(addr, total, 10*time.Minute)
	if err != nil {
		return err
	}
	report("first start to serving (as the directory was left)", "%.2f s, broker CPU %.1f s", ready.Seconds(), b.cpu())
	d, err := b.stop(10 * time.Minute)
	if err != nil {
		return err
	}
	report("graceful shutdown (SIGTERM to exit)", "%.2f s", d.Seconds())
	if b, err = startBroker(bin, addr, dataDir, logPath); err != nil {
		return err
	}
	if ready, err = waitServing(addr, total, 10*time.Minute); err != nil {
		return err
	}
	report("restart to serving after a clean shutdown", "%.2f s, broker CPU %.1f s", ready.Seconds(), b.cpu())
	time.Sleep(2 * time.Second)
	b.kill()
	if b, err = startBroker(bin, addr, dataDir, logPath); err != nil {
		return err
	}
	if ready, err = waitServing(addr, total, 10*time.Minute); err != nil {
		return err
	}
	report("restart to serving after SIGKILL", "%.2f s, broker CPU %.1f s", ready.Seconds(), b.cpu())
	if d, err = b.stop(10 * time.Minute); err != nil {
		return err
	}
	report("graceful shutdown after the SIGKILL restart", "%.2f s", d.Seconds())
	fmt.Println("| measurement | value |")
	fmt.Println("| --- | --- |")
	for _, r := range rows {
		fmt.Printf("| %s | %s |\n", r.what, r.value)
	}
	return nil
}

func strOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func metadataPartitions(ctx context.Context, cl *kgo.Client) (int, error) {
	req := kmsg.NewPtrMetadataRequest() // Topics nil: all topics
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range resp.Topics {
		if t.Topic == nil || !strings.HasPrefix(*t.Topic, topicPrefix) {
			continue // internal topics
		}
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 && p.Leader >= 0 {
				n++
			}
		}
	}
	return n, nil
}

// waitServing polls until the broker answers a Metadata request listing
// want partitions with a leader (0: any answer), and returns the time since
// the broker process started.
func waitServing(addr string, want int, limit time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestTimeoutOverhead(time.Minute), kgo.RequestRetries(0),
			kgo.DialTimeout(time.Second))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			n, err := metadataPartitions(ctx, cl)
			cancel()
			cl.Close()
			if err == nil && n >= want {
				return time.Since(lastStart), nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("broker at %s not serving %d partitions within %v", addr, want, limit)
}

func endOffsetSum(addr string, topics []string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	meta := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(t)
		meta.Topics = append(meta.Topics, mt)
	}
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	for _, t := range mresp.Topics {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = *t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p.Partition, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return 0, fmt.Errorf("ListOffsets %s-%d: %w", t.Topic, p.Partition, err)
			}
			sum += p.Offset
		}
	}
	return sum, nil
}

type broker struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

var lastStart time.Time

func startBroker(bin, addr, dataDir, logPath string) (*broker, error) {
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--listen", addr, "--data-dir", dataDir)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	lastStart = time.Now()
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	b := &broker{cmd: cmd, done: make(chan struct{})}
	go func() {
		b.err = cmd.Wait()
		lf.Close()
		close(b.done)
	}()
	return b, nil
}

func (b *broker) pid() int { return b.cmd.Process.Pid }

func (b *broker) stop(limit time.Duration) (time.Duration, error) {
	t0 := time.Now()
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
		if b.err != nil {
			return 0, fmt.Errorf("broker exit: %w", b.err)
		}
		return time.Since(t0), nil
	case <-time.After(limit):
		b.kill()
		return 0, errors.New("broker did not stop in time")
	}
}

func (b *broker) kill() {
	select {
	case <-b.done:
		return
	default:
	}
	_ = b.cmd.Process.Kill()
	<-b.done
}

func (b *broker) fds() int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", b.pid()))
	if err != nil {
		return -1
	}
	return len(ents)
}

// cpu is the broker's user+system CPU seconds (/proc/PID/stat, USER_HZ 100).
func (b *broker) cpu() float64 {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.pid()))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(s), ')')
	f := strings.Fields(string(s[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return float64(u+st) / 100
}

// mem is VmRSS and VmHWM in bytes.
func (b *broker) mem() (rss, hwm int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", b.pid()))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &rss
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &hwm
		default:
			continue
		}
		fs := strings.Fields(line)
		if len(fs) >= 2 {
			kb, _ := strconv.ParseInt(fs[1], 10, 64)
			*dst = kb << 10
		}
	}
	return rss, hwm
}
