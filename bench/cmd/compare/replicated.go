package main

// The replicated path (issue #14 item 3): `compare --replicated` starts a
// three-node Sluice (three processes, each from its own server.properties
// with controller.quorum.voters) and, after stopping it, a three-node Apache
// Kafka in KRaft combined mode, and drives both with the same workloads on a
// topic with replication factor 3 and min.insync.replicas=2. The two clusters
// never run at the same time: each rep starts a fresh cluster of one target,
// runs every workload, and stops it, alternating the order of the targets
// (S K, then K S, ...). Broker CPU is summed over the three processes of a
// cluster and reported per GB of record values moved, user and system time
// apart; RSS is summed too.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// replNodes is the size of the replicated clusters.
const replNodes = 3

// cluster is one running three-node cluster of one target.
type cluster struct {
	name  string
	nodes []*target
}

func (c *cluster) addr() string { return c.nodes[0].addr }

func (c *cluster) pids() []int {
	ps := make([]int, len(c.nodes))
	for i, n := range c.nodes {
		ps[i] = n.pid()
	}
	return ps
}

// stop stops every node (SIGTERM to each process group at once, then
// SIGKILL after grace), so that no node waits for a quorum that its peers
// took away by stopping first.
func (c *cluster) stop(grace time.Duration) {
	if c == nil {
		return
	}
	done := make(chan struct{})
	for _, n := range c.nodes {
		go func() { n.stop(grace); done <- struct{}{} }()
	}
	for range c.nodes {
		<-done
	}
}

// cpu returns the user and system CPU seconds of all nodes together.
func (c *cluster) cpu() (user, sys float64) {
	for _, p := range c.pids() {
		u, s, _ := cpuTimes(p)
		user += u
		sys += s
	}
	return user, sys
}

// rss returns the summed VmRSS and VmHWM of the nodes.
func (c *cluster) rss() (rss, hwm int64) {
	for _, p := range c.pids() {
		r, h, _ := memStatus(p)
		rss += r
		hwm += h
	}
	return rss, hwm
}

// freePorts returns n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ps []int
	for len(ps) < n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	return ps, nil
}

// nodeProperties is one combined broker+controller node of a three-node
// KRaft cluster on loopback, in the names Apache Kafka and Sluice share.
// Everything not listed keeps its default (internal topics with 3 replicas).
func nodeProperties(id int, ports, ctrlPorts []int, dataDir string) string {
	var voters []string
	for i, cp := range ctrlPorts {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, cp))
	}
	return strings.Join([]string{
		"process.roles=broker,controller",
		fmt.Sprintf("node.id=%d", id),
		"controller.quorum.voters=" + strings.Join(voters, ","),
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[id-1], ctrlPorts[id-1]),
		fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d", ports[id-1]),
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs=" + dataDir,
		"",
	}, "\n")
}

// startCluster writes three server.properties files under
// workDir/NAME-cluster and starts the three nodes of target name.
func startCluster(ctx context.Context, o *options, name, sluiceBin string) (*cluster, error) {
	ports, err := freePorts(2 * replNodes)
	if err != nil {
		return nil, err
	}
	kports, cports := ports[:replNodes], ports[replNodes:]
	base := filepath.Join(o.workDir, name+"-cluster")
	if err := freshDir(base); err != nil {
		return nil, err
	}
	c := &cluster{name: name}
	var cp, logOpt, clusterID string
	if name == "kafka" {
		libs, err := kafkaLibs(o)
		if err != nil {
			return nil, err
		}
		cp = filepath.Join(libs, "*")
		log4j := filepath.Join(o.tmpDir, "kafka-log4j2.properties")
		if err := os.WriteFile(log4j, []byte(kafkaLog4j), 0o644); err != nil {
			return nil, err
		}
		logOpt = "-Dlog4j2.configurationFile=" + log4j
		var out strings.Builder
		uuid := exec.Command("java", logOpt, "-cp", cp, "kafka.tools.StorageTool", "random-uuid")
		uuid.Stdout = &out
		if err := uuid.Run(); err != nil {
			return nil, fmt.Errorf("kafka StorageTool random-uuid: %w", err)
		}
		clusterID = strings.TrimSpace(lastLine(out.String()))
	}
	for id := 1; id <= replNodes; id++ {
		dir := filepath.Join(base, fmt.Sprintf("node-%d", id))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			c.stop(5 * time.Second)
			return nil, err
		}
		props := filepath.Join(base, fmt.Sprintf("node-%d.properties", id))
		if err := os.WriteFile(props, []byte(nodeProperties(id, kports, cports, dir)), 0o644); err != nil {
			c.stop(5 * time.Second)
			return nil, err
		}
		logPath := filepath.Join(o.tmpDir, fmt.Sprintf("%s-node-%d.log", name, id))
		var t *target
		switch name {
		case "sluice":
			args := []string{"--config", props}
			var onLine func(string)
			pprofCh := make(chan string, 1)
			if o.profile {
				args = append(args, "--pprof-listen", "127.0.0.1:0")
				onLine = func(l string) {
					if a, ok := strings.CutPrefix(l, "pprof "); ok {
						pprofCh <- a
					}
				}
			} else {
				args = append(args, "--metrics-listen", "") // no fixed port on a shared machine
			}
			t, err = startProcess(fmt.Sprintf("sluice-%d", id), exec.Command(sluiceBin, args...), logPath, onLine)
			if err == nil && o.profile {
				select {
				case t.pprof = <-pprofCh:
				case <-t.done:
					err = fmt.Errorf("sluice-profiled node %d exited during startup (see %s)", id, logPath)
				case <-time.After(60 * time.Second):
					err = fmt.Errorf("sluice-profiled node %d did not announce its pprof address", id)
				}
			}
		case "kafka":
			format := exec.Command("java", logOpt, "-cp", cp, "kafka.tools.StorageTool", "format", "-t", clusterID, "-c", props)
			if b, ferr := format.CombinedOutput(); ferr != nil {
				c.stop(5 * time.Second)
				return nil, fmt.Errorf("kafka StorageTool format node %d: %w\n%s", id, ferr, b)
			}
			args := append([]string{}, kafkaJVMOpts...) // -Xmx1G per node
			args = append(args, logOpt, "-cp", cp, "kafka.Kafka", props)
			t, err = startProcess(fmt.Sprintf("kafka-%d", id), exec.Command("java", args...), logPath, nil)
		default:
			return nil, fmt.Errorf("unknown replicated target %q (sluice, kafka)", name)
		}
		if t != nil {
			t.addr, t.dataDir, t.durable = fmt.Sprintf("127.0.0.1:%d", kports[id-1]), dir, true
			c.nodes = append(c.nodes, t)
		}
		if err != nil {
			c.stop(5 * time.Second)
			return nil, err
		}
	}
	if err := c.waitReady(ctx, 180*time.Second); err != nil {
		c.stop(20 * time.Second)
		return nil, err
	}
	return c, nil
}

// waitReady polls until Metadata lists all three brokers and a topic with
// replication factor 3 can be created (and deleted).
func (c *cluster) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, n := range c.nodes {
			select {
			case <-n.done:
				return fmt.Errorf("%s exited during startup (see %s)", n.name, n.log.Name())
			default:
			}
		}
		if last = probeCluster(ctx, c.addr()); last == nil {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("%s cluster not ready after %v: %v", c.name, timeout, last)
}

func probeCluster(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	md, err := adm.BrokerMetadata(pctx)
	if err != nil {
		return err
	}
	if len(md.Brokers) < replNodes {
		return fmt.Errorf("%d of %d brokers in metadata", len(md.Brokers), replNodes)
	}
	name := fmt.Sprintf("bench-probe-%d", time.Now().UnixNano())
	r, err := adm.CreateTopic(pctx, 1, replNodes, nil, name)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return err
	}
	_, _ = adm.DeleteTopics(pctx, name)
	return nil
}

// replRun is one run of one replicated workload against one cluster.
type replRun struct {
	Target  string  `json:"target"`
	Rep     int     `json:"rep"`
	MBps    float64 `json:"mb_s"`
	Records int64   `json:"records"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// Broker CPU summed over the three nodes, user and system apart.
	UserCPU   float64 `json:"broker_user_cpu_s"`
	SysCPU    float64 `json:"broker_sys_cpu_s"`
	CPUPerGB  float64 `json:"broker_cpu_s_per_gb"`
	UserPerGB float64 `json:"broker_user_cpu_s_per_gb"`
	SysPerGB  float64 `json:"broker_sys_cpu_s_per_gb"`
	// Per-node CPU (user+system) in the run, node 1 first.
	NodeCPU   []float64 `json:"node_cpu_s"`
	RSSBytes  int64     `json:"broker_rss_bytes_sum_after"`
	ClientCPU float64   `json:"client_cpu_s"`
	P50ms     float64   `json:"p50_ms,omitempty"`
	P99ms     float64   `json:"p99_ms,omitempty"`
	P999ms    float64   `json:"p999_ms,omitempty"`
	Samples   int       `json:"latency_samples,omitempty"`
	LoadStart string    `json:"load_start"`
	LoadEnd   string    `json:"load_end"`
	Err       string    `json:"error,omitempty"`
}

type replSummary struct {
	MBps      float64 `json:"mb_s"`
	CPUPerGB  float64 `json:"broker_cpu_s_per_gb"`
	UserPerGB float64 `json:"broker_user_cpu_s_per_gb"`
	SysPerGB  float64 `json:"broker_sys_cpu_s_per_gb"`
	RSSBytes  int64   `json:"broker_rss_bytes_sum"`
	P50ms     float64 `json:"p50_ms,omitempty"`
	P99ms     float64 `json:"p99_ms,omitempty"`
	P999ms    float64 `json:"p999_ms,omitempty"`
	Runs      int     `json:"runs"`
}

type replWorkload struct {
	workload
	Runs   []replRun              `json:"runs"`
	Median map[string]replSummary `json:"median"`
	// CPURatio is Sluice's CPU per GB over Kafka's (median of the per-rep
	// pairs; the target is ≤ 0.5); P99Ratio the same for p99 latency
	// (target ≤ 0.5); MBpsRatio Sluice's throughput over Kafka's.
	CPURatio  float64 `json:"sluice_over_kafka_cpu_per_gb,omitempty"`
	P99Ratio  float64 `json:"sluice_over_kafka_p99,omitempty"`
	MBpsRatio float64 `json:"sluice_over_kafka_mb_s,omitempty"`
}

type replReport struct {
	Meta      meta            `json:"meta"`
	Nodes     int             `json:"nodes"`
	Topic     string          `json:"topic_setup"`
	Workloads []*replWorkload `json:"workloads"`
	// PeakRSS is the sum of the nodes' VmHWM at the end of each cluster's
	// life, per target (the largest over reps).
	PeakRSS map[string]int64 `json:"peak_rss_bytes_sum"`
	// WarmUps are the warm-ups before each cluster's runs (not measured).
	WarmUps []warmUpRun `json:"warm_ups"`
}

type warmUpRun struct {
	Target  string  `json:"target"`
	Rep     int     `json:"rep"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
}

// replPlan lists the replicated workloads in the order they run on a
// cluster.
func replPlan(o *options) []workload {
	ws := []workload{
		{Name: "RF3 produce 1KiB p16 acks=all", Kind: "produce", RecordSize: 1024, Partitions: 16, Codec: "none"},
		{Name: "RF3 consume 1KiB p16 (franz-go consumer)", Kind: "consume", RecordSize: 1024, Partitions: 16, Codec: "none"},
		{Name: fmt.Sprintf("RF3 e2e latency 1KiB p4 at %g MB/s", o.latencyRate), Kind: "latency", RecordSize: 1024, Partitions: 4, Codec: "none", RateMBps: o.latencyRate},
	}
	var out []workload
	for _, w := range ws {
		if o.only == "" || strings.Contains(w.Name, o.only) {
			out = append(out, w)
		}
	}
	return out
}

// replTopicConfigs is the replicated topics' config: min.insync.replicas=2.
func replTopicConfigs() map[string]*string {
	two := "2"
	return map[string]*string{"min.insync.replicas": &two}
}

func runReplicated(ctx context.Context, o *options) error {
	var err error
	if o.root, err = findRoot(); err != nil {
		return err
	}
	o.cacheDir = filepath.Join(o.root, "bench", ".cache")
	o.workDir = filepath.Join(o.cacheDir, "data")
	o.resultsDir = filepath.Join(o.root, "bench", "results")
	o.tmpDir = filepath.Join(o.resultsDir, "tmp")
	for _, d := range []string{o.workDir, o.tmpDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := checkFree(o.workDir); err != nil {
		return err
	}
	ctx, stopGuard := guardDisk(ctx, o.workDir)
	defer stopGuard()
	var targets []string
	for _, t := range o.targets {
		if t == "kfake" {
			continue // one in-memory broker: nothing to replicate
		}
		targets = append(targets, t)
	}
	o.targets = targets
	rep := &replReport{Meta: machineMeta(o), Nodes: replNodes, PeakRSS: map[string]int64{},
		Topic: "replication factor 3, min.insync.replicas=2; producer acks=all, idempotent"}
	rep.Meta.Mode += "+replicated"
	rep.Meta.Notes = []string{
		"Three-node clusters (combined broker+controller nodes, static voters) on one shared 2-core machine with the client; the Sluice and Apache Kafka clusters run one after the other, never at once: each rep starts a fresh cluster, runs every workload, and stops it, alternating the target order.",
		"Broker CPU is summed over the three processes (/proc/PID/stat utime and stime) per GB of record values produced or consumed; RSS is summed.",
		"Ratios are Sluice over Kafka (lower is better for CPU and p99, higher for MB/s), median over reps of back-to-back pairs.",
		"Apache Kafka runs with its start script's JVM options (-Xmx1G -Xms1G, G1) on each node.",
	}
	logf("replicated mode: %d-node clusters of %s; load average at start: %s", replNodes, strings.Join(targets, ", "), rep.Meta.LoadStart)

	binDir := filepath.Join(o.cacheDir, "bin")
	var sluiceBin string
	if slices.Contains(targets, "sluice") {
		dir, pkg, out := o.root, "./cmd/sluice", "sluice"
		if o.profile {
			dir, pkg, out = filepath.Join(o.root, "bench"), "./cmd/sluice-profiled", "sluice-profiled"
		}
		if sluiceBin, err = buildGo(dir, binDir, pkg, out); err != nil {
			return err
		}
	}
	var live *cluster
	defer func() {
		live.stop(20 * time.Second)
		if err := os.RemoveAll(o.workDir); err != nil {
			logf("removing %s: %v", o.workDir, err)
		}
	}()

	plan := replPlan(o)
	byName := map[string]*replWorkload{}
	for _, w := range plan {
		rw := &replWorkload{workload: w}
		rep.Workloads = append(rep.Workloads, rw)
		byName[w.Name] = rw
	}
	for r := range o.reps {
		for _, name := range order(targets, r) {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if err := checkFree(o.workDir); err != nil {
				return err
			}
			start := time.Now()
			live, err = startCluster(ctx, o, name, sluiceBin)
			if err != nil {
				return err
			}
			logf("%s cluster ready in %.1fs on %s (pids %v)", name, time.Since(start).Seconds(), live.addr(), live.pids())
			// Warm-up, not measured: a fresh JVM compiles its hot paths
			// during its first seconds of load, and both targets open
			// their replica connections; without it the first workload
			// of each cluster would pay for that.
			wu, err := warmUp(ctx, o, live)
			if err != nil {
				return fmt.Errorf("%s warm-up: %w", name, err)
			}
			wu.Rep = r
			rep.WarmUps = append(rep.WarmUps, wu)
			for _, w := range plan {
				res := replOneRun(ctx, o, w, live, r)
				byName[w.Name].Runs = append(byName[w.Name].Runs, res)
				logReplRun(w, res)
				if err := writeReplResults(o, rep, false); err != nil {
					return err
				}
			}
			_, hwm := live.rss()
			rep.PeakRSS[name] = max(rep.PeakRSS[name], hwm)
			live.stop(20 * time.Second)
			live = nil
			// The next cluster starts on fresh directories; the
			// stopped one's gigabytes go now.
			_ = os.RemoveAll(filepath.Join(o.workDir, name+"-cluster"))
			if o.syncBetween {
				syscall.Sync()
			}
		}
	}
	for _, rw := range rep.Workloads {
		rw.summarize(targets)
	}
	rep.Meta.LoadEnd = loadAvg()
	rep.Meta.Finished = time.Now().UTC().Format(time.RFC3339)
	if err := writeReplResults(o, rep, true); err != nil {
		return err
	}
	fmt.Println(replMarkdown(rep))
	return nil
}

func logReplRun(w workload, r replRun) {
	switch {
	case r.Err != "":
		logf("   %-6s rep %d %s: ERROR %s", r.Target, r.Rep, w.Name, r.Err)
	case w.Kind == "latency":
		logf("   %-6s rep %d %s: p50 %.2f ms  p99 %.2f ms  p99.9 %.2f ms  (%d samples)  cpu %.2f s/GB (user %.2f sys %.2f)  load %s -> %s",
			r.Target, r.Rep, w.Name, r.P50ms, r.P99ms, r.P999ms, r.Samples, r.CPUPerGB, r.UserPerGB, r.SysPerGB, r.LoadStart, r.LoadEnd)
	default:
		logf("   %-6s rep %d %s: %7.1f MB/s  cpu %.2f s/GB (user %.2f sys %.2f)  nodes %v s  rss %d MiB  load %s -> %s",
			r.Target, r.Rep, w.Name, r.MBps, r.CPUPerGB, r.UserPerGB, r.SysPerGB, fmtSecs(r.NodeCPU), r.RSSBytes>>20, r.LoadStart, r.LoadEnd)
	}
}

func fmtSecs(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// warmUp produces --warm-up-mib (replWarmUpBytes by default, 256 MiB with
// --quick) to an RF 3 topic and reads it back, then deletes the topic.
func warmUp(ctx context.Context, o *options, c *cluster) (warmUpRun, error) {
	w := workload{Name: "warm-up", Kind: "produce", RecordSize: 1024, Partitions: 16, Codec: "none"}
	wu := warmUpRun{Target: c.name}
	topic := fmt.Sprintf("bench-warm-up-%d", time.Now().UnixNano())
	if err := createTopicRF(ctx, c.addr(), topic, w.Partitions, replNodes, replTopicConfigs()); err != nil {
		return wu, err
	}
	defer deleteTopic(ctx, c.addr(), topic)
	start := time.Now()
	bytes := int64(replWarmUpBytes)
	switch {
	case o.warmUpMiB > 0:
		bytes = o.warmUpMiB << 20
	case o.quick:
		bytes = 256 << 20
	}
	n, err := fill(ctx, c.addr(), topic, w, bytes)
	if err != nil {
		return wu, err
	}
	if _, err := consumeAll(ctx, c.addr(), topic, w.Partitions, n, nil); err != nil {
		return wu, err
	}
	wu.Bytes, wu.Seconds = n*int64(w.RecordSize), time.Since(start).Seconds()
	logf("   %s: warm-up (not measured) produced and consumed %d MiB in %.1fs", c.name, wu.Bytes>>20, wu.Seconds)
	return wu, nil
}

// replWarmUpBytes is what a warm-up writes, the same for every target. (A
// warm-up of a fixed time had the faster cluster write three times the
// bytes, three page-cache copies each, and so go into its measured runs
// with less of the memory the machine had recently used: see
// docs/performance.md, "Where the replicated produce's system time goes".)
const replWarmUpBytes = 1280 << 20

// replOneRun runs workload w once on cluster c: a new topic (RF 3,
// min.insync.replicas=2) per run, deleted afterwards.
func replOneRun(ctx context.Context, o *options, w workload, c *cluster, rep int) replRun {
	r := replRun{Target: c.name, Rep: rep}
	topic := fmt.Sprintf("bench-%s-r%d", slug(w.Name), rep)
	addr := c.addr()
	if err := createTopicRF(ctx, addr, topic, w.Partitions, replNodes, replTopicConfigs()); err != nil {
		r.Err = err.Error()
		return r
	}
	defer deleteTopic(ctx, addr, topic)
	var want int64
	if w.Kind == "consume" {
		start := time.Now()
		got, err := fill(ctx, addr, topic, w, o.consumeBytes)
		if err != nil {
			r.Err = "fill: " + err.Error()
			return r
		}
		want = got
		logf("   %s: filled %d MiB in %.1fs", c.name, o.consumeBytes>>20, time.Since(start).Seconds())
		if o.syncBetween {
			syscall.Sync()
		}
	}
	settleCluster(ctx, c)
	var u0, s0, client0 float64
	node0 := make([]float64, len(c.nodes))
	var profDone []chan struct{}
	stats := func(begin bool) {
		u, s := c.cpu()
		self, _ := cpuSeconds(os.Getpid())
		if begin {
			u0, s0, client0 = u, s, self
			for i, p := range c.pids() {
				node0[i], _ = cpuSeconds(p)
			}
			r.LoadStart = loadAvg()
			if o.profile && rep == 0 {
				secs := int(o.duration.Seconds())
				if w.Kind == "latency" {
					secs = int(o.latencyDur.Seconds())
				}
				for i, n := range c.nodes {
					if n.pprof == "" {
						continue
					}
					d := make(chan struct{})
					profDone = append(profDone, d)
					path := filepath.Join(o.tmpDir, fmt.Sprintf("%s-node%d.cpu.pprof", slug(w.Name), i+1))
					go saveProfile(n.pprof, max(secs, 1), path, d)
				}
			}
			return
		}
		r.UserCPU, r.SysCPU, r.ClientCPU = u-u0, s-s0, self-client0
		for i, p := range c.pids() {
			v, _ := cpuSeconds(p)
			r.NodeCPU = append(r.NodeCPU, v-node0[i])
		}
		r.LoadEnd = loadAvg()
	}
	var m measurement
	var err error
	switch w.Kind {
	case "produce":
		m, err = produceFor(ctx, addr, topic, w, o.duration, stats)
	case "consume":
		m, err = consumeAll(ctx, addr, topic, w.Partitions, want, stats)
	case "latency":
		m, err = latencyAt(ctx, addr, topic, w, o.latencyDur, stats)
	}
	for _, d := range profDone {
		<-d
	}
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.Bytes, r.Records, r.Seconds = m.Bytes, m.Records, m.Seconds
	r.MBps = float64(m.Bytes) / m.Seconds / 1e6
	if m.Bytes > 0 {
		gb := float64(m.Bytes) / 1e9
		r.UserPerGB, r.SysPerGB = r.UserCPU/gb, r.SysCPU/gb
		r.CPUPerGB = r.UserPerGB + r.SysPerGB
	}
	r.P50ms, r.P99ms, r.P999ms, r.Samples = m.P50, m.P99, m.P999, m.Samples
	r.RSSBytes, _ = c.rss()
	if o.syncBetween && w.Kind != "consume" {
		syscall.Sync()
	}
	return r
}

// settleCluster waits (at most 5 s) until the cluster's nodes together use
// under 12% of a core over 250 ms.
func settleCluster(ctx context.Context, c *cluster) {
	start := time.Now()
	total := func() float64 { u, s := c.cpu(); return u + s }
	for time.Since(start) < 5*time.Second && ctx.Err() == nil {
		before := total()
		time.Sleep(250 * time.Millisecond)
		if total()-before < 0.03 {
			return
		}
	}
}

func (rw *replWorkload) summarize(targets []string) {
	rw.Median = map[string]replSummary{}
	for _, t := range targets {
		var mb, cpu, user, sys, p50, p99, p999, rss []float64
		for _, r := range rw.Runs {
			if r.Target != t || r.Err != "" {
				continue
			}
			mb, cpu, user, sys = append(mb, r.MBps), append(cpu, r.CPUPerGB), append(user, r.UserPerGB), append(sys, r.SysPerGB)
			p50, p99, p999 = append(p50, r.P50ms), append(p99, r.P99ms), append(p999, r.P999ms)
			rss = append(rss, float64(r.RSSBytes))
		}
		rw.Median[t] = replSummary{MBps: median(mb), CPUPerGB: median(cpu), UserPerGB: median(user), SysPerGB: median(sys),
			RSSBytes: int64(median(rss)), P50ms: median(p50), P99ms: median(p99), P999ms: median(p999), Runs: len(mb)}
	}
	// Per-rep pairs: the Sluice and Kafka runs of the same rep.
	var cpuR, p99R, mbR []float64
	for _, s := range rw.Runs {
		if s.Target != "sluice" || s.Err != "" {
			continue
		}
		for _, k := range rw.Runs {
			if k.Target != "kafka" || k.Rep != s.Rep || k.Err != "" {
				continue
			}
			if k.CPUPerGB > 0 {
				cpuR = append(cpuR, s.CPUPerGB/k.CPUPerGB)
			}
			if k.P99ms > 0 {
				p99R = append(p99R, s.P99ms/k.P99ms)
			}
			if k.MBps > 0 {
				mbR = append(mbR, s.MBps/k.MBps)
			}
		}
	}
	rw.CPURatio, rw.P99Ratio, rw.MBpsRatio = median(cpuR), median(p99R), median(mbR)
}

func replMarkdown(rep *replReport) string {
	var b strings.Builder
	m := rep.Meta
	fmt.Fprintf(&b, "Replicated path: %d-node clusters, %s. Mode %s, %d reps, produce runs of %s; started %s, load average %s at start and %s at the end; %d CPUs (%s), %s, Apache Kafka %s, %s, commit %s.\n\n",
		rep.Nodes, rep.Topic, m.Mode, m.Reps, m.Duration, m.Started, m.LoadStart, m.LoadEnd, m.CPUs, m.CPUModel, m.Go, m.KafkaVersion, m.Java, m.Commit)
	b.WriteString("| workload | target | MB/s | broker CPU s/GB (user + sys), 3 nodes | RSS sum after | p50 / p99 / p99.9 ms | load at start → end of each run |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | --- |\n")
	for _, w := range rep.Workloads {
		for _, t := range rep.Meta.Targets {
			s, ok := w.Median[t]
			if !ok || s.Runs == 0 {
				fmt.Fprintf(&b, "| %s | %s | failed | | | | |\n", w.Name, t)
				continue
			}
			var loads []string
			for _, r := range w.Runs {
				if r.Target == t {
					loads = append(loads, r.LoadStart[:min(4, len(r.LoadStart))]+"→"+r.LoadEnd[:min(4, len(r.LoadEnd))])
				}
			}
			lat := ""
			if w.Kind == "latency" {
				lat = fmt.Sprintf("%.2f / %.2f / %.2f", s.P50ms, s.P99ms, s.P999ms)
			}
			fmt.Fprintf(&b, "| %s | %s | %.1f | %.2f (%.2f + %.2f) | %d MiB | %s | %s |\n",
				w.Name, t, s.MBps, s.CPUPerGB, s.UserPerGB, s.SysPerGB, s.RSSBytes>>20, lat, strings.Join(loads, ", "))
		}
	}
	b.WriteString("\n| workload | Sluice/Kafka CPU per GB (target ≤ 0.5) | Sluice/Kafka MB/s | Sluice/Kafka p99 (target ≤ 0.5) |\n| --- | ---: | ---: | ---: |\n")
	for _, w := range rep.Workloads {
		p99 := "—"
		if w.Kind == "latency" {
			p99 = fmt.Sprintf("%.2f", w.P99Ratio)
		}
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %s |\n", w.Name, w.CPURatio, w.MBpsRatio, p99)
	}
	if len(rep.PeakRSS) > 0 {
		b.WriteString("\nPeak RSS summed over the three nodes (VmHWM):")
		for _, t := range rep.Meta.Targets {
			fmt.Fprintf(&b, " %s %d MiB;", t, rep.PeakRSS[t]>>20)
		}
		b.WriteString("\n")
	}
	if len(rep.WarmUps) > 0 {
		b.WriteString("\nWarm-ups (not measured; produced and read back before each cluster's runs):")
		for _, wu := range rep.WarmUps {
			fmt.Fprintf(&b, " %s rep %d %d MiB in %.1f s;", wu.Target, wu.Rep, wu.Bytes>>20, wu.Seconds)
		}
		b.WriteString("\n")
	}
	for _, n := range m.Notes {
		b.WriteString("\n- " + n)
	}
	b.WriteString("\n")
	return b.String()
}

func writeReplResults(o *options, rep *replReport, final bool) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	name := o.resultsName
	if !final {
		name = "tmp/partial-replicated"
	}
	if err := os.WriteFile(filepath.Join(o.resultsDir, name+".json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if !final {
		return nil
	}
	if err := os.WriteFile(filepath.Join(o.resultsDir, name+".md"), []byte(replMarkdown(rep)), 0o644); err != nil {
		return err
	}
	logf("wrote bench/results/%s.{json,md}", name)
	return nil
}
