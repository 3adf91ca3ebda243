// Command compare is Sluice's benchmark harness (issue #7): it starts Sluice
// (built from this tree), Apache Kafka 4.x (single-node KRaft, from Maven
// Central) and franz-go's in-memory kfake on loopback, drives all three with
// the same franz-go client in alternating runs (A/B/C, C/B/A, ...), and
// writes medians and per-pair ratios to bench/results/latest.json, a Markdown
// summary to bench/results/latest.md and an SVG chart of the ratios.
//
//	go -C bench run ./cmd/compare --quick          # ~3 minutes, smoke numbers
//	go -C bench run ./cmd/compare                  # full run, ~15 minutes; updates docs/
//	go -C bench run ./cmd/compare --profile --targets sluice   # CPU profiles of Sluice
//
// It is its own Go module (bench/go.mod, with kfake and the harness's other
// dependencies), so the Sluice module never requires them; hence `go -C bench`
// from the repository root, or bench/run.sh.
//
// It owns bench/ only; it must not change the broker: a profile comes from
// bench/cmd/sluice-profiled, a wrapper of the same broker.Server with pprof.
// Benchmarks are never part of the test suite.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type options struct {
	quick        bool
	reps         int
	duration     time.Duration
	latencyDur   time.Duration
	latencyRate  float64
	consumeBytes int64
	diskBytes    int64
	targets      []string
	only         string // substring filter on workload names
	allCombos    bool
	profile      bool
	compaction   bool
	updateDoc    bool
	syncBetween  bool
	recycleMiB   int64 // --recycle-mib (recycle.go)
	warmUpMiB    int64 // --warm-up-mib (replicated.go)
	kafkaVersion string
	resultsName  string
	replicated   bool // three-node clusters, RF 3 (replicated.go)

	root, cacheDir, workDir, tmpDir, resultsDir string
	running                                     map[string]*target
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func main() {
	o := &options{}
	flag.BoolVar(&o.quick, "quick", false, "a few seconds per workload, 2 reps (smoke numbers)")
	flag.IntVar(&o.reps, "reps", 0, "runs per target and workload (default 3 full, 2 quick)")
	flag.DurationVar(&o.duration, "duration", 0, "length of one produce run (default 4s full, 2s quick)")
	flag.DurationVar(&o.latencyDur, "latency-duration", 0, "length of one latency run (default 10s full, 3s quick)")
	flag.Float64Var(&o.latencyRate, "latency-rate", 20, "offered load of the latency workload, MB/s")
	flag.Int64Var(&o.consumeBytes, "consume-bytes", 0, "bytes pre-filled for the consume workloads (default 1 GiB full, 256 MiB quick)")
	targets := flag.String("targets", "sluice,kafka,kfake", "comma-separated targets to run")
	flag.StringVar(&o.only, "only", "", "run only workloads whose name contains this")
	flag.BoolVar(&o.allCombos, "all-combos", false, "every size × partitions × codec produce combination (18 instead of 10)")
	flag.BoolVar(&o.profile, "profile", false, "run Sluice with pprof and save a CPU profile of each workload's first run to bench/results/tmp/")
	compaction := flag.String("compaction", "auto", "run internal/compact's Go benchmark too: yes, no, auto (= full mode only)")
	doc := flag.String("doc", "auto", "rewrite the harness section of docs/performance.md and the chart in docs/: yes, no, auto (= full mode without --only/--profile)")
	flag.BoolVar(&o.syncBetween, "sync", true, "sync(2) between runs so every run starts without dirty pages from the last")
	flag.Int64Var(&o.warmUpMiB, "warm-up-mib", 0, "--replicated: MiB each cluster's warm-up produces and reads back before its measured runs, the same for every target (default 1280, 256 with --quick)")
	flag.Int64Var(&o.recycleMiB, "recycle-mib", 0, "before each produce run, write and delete this many MiB in the data directory so the run writes into recycled page-cache memory (A/B comparisons of broker code on a VM that returns freed memory to its host; never rewrites docs/)")
	flag.StringVar(&o.resultsName, "name", "latest", "base name of the result files in bench/results/ (NAME.json, NAME.md, NAME.svg)")
	flag.StringVar(&o.kafkaVersion, "kafka-version", "4.4.0", "Apache Kafka version (Maven Central org.apache.kafka:kafka_2.13)")
	flag.BoolVar(&o.replicated, "replicated", false, "three-node Sluice and three-node Kafka, one after the other: RF 3, min.insync.replicas=2 (writes bench/results/replicated.*; see bench/README.md)")
	fromJSON := flag.String("from-json", "", "run nothing: re-render latest.md, the SVG (and, with --doc yes, docs/) from this result file")
	flag.Parse()

	o.targets = strings.Split(*targets, ",")
	def := func(full, quick time.Duration) time.Duration {
		if o.quick {
			return quick
		}
		return full
	}
	if o.reps == 0 {
		o.reps = 3
		if o.quick {
			o.reps = 2
		}
	}
	if o.duration == 0 {
		o.duration = def(4*time.Second, 2*time.Second)
	}
	if o.latencyDur == 0 {
		o.latencyDur = def(10*time.Second, 3*time.Second)
	}
	if o.consumeBytes == 0 {
		o.consumeBytes = 1 << 30
		if o.quick {
			o.consumeBytes = 256 << 20
		}
	}
	o.diskBytes = 256 << 20
	if o.quick {
		o.diskBytes = 64 << 20
	}
	o.compaction = *compaction == "yes" || (*compaction == "auto" && !o.quick && o.only == "" && !o.profile)
	o.updateDoc = *doc == "yes" || (*doc == "auto" && !o.quick && o.only == "" && !o.profile && o.recycleMiB == 0)

	if *fromJSON != "" {
		if err := render(o, *fromJSON, *doc == "yes"); err != nil {
			logf("error: %v", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.replicated {
		if o.resultsName == "latest" {
			o.resultsName = "replicated"
		}
		if err := runReplicated(ctx, o); err != nil {
			logf("error: %v", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, o); err != nil {
		logf("error: %v", err)
		os.Exit(1)
	}
}

// render rewrites the outputs from a saved result file.
func render(o *options, path string, doc bool) error {
	root, err := findRoot()
	if err != nil {
		return err
	}
	o.root, o.resultsDir, o.updateDoc = root, filepath.Join(root, "bench", "results"), doc
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	rep.Goals = evaluateGoals(&rep)
	return writeResults(o, &rep, true)
}

// findRoot walks up from the working directory to the Sluice module's go.mod
// (the repository root; the harness itself is the module in bench/).
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/sluice-broker/sluice\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the Sluice repository")
		}
		dir = parent
	}
}

func run(ctx context.Context, o *options) error {
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
	rep := &report{Targets: map[string]targetInfo{}}
	rep.Meta = machineMeta(o)
	logf("load average at start: %s", rep.Meta.LoadStart)

	// Build and start the targets.
	binDir := filepath.Join(o.cacheDir, "bin")
	running := map[string]*target{}
	o.running = running
	defer func() {
		for _, t := range running {
			t.stop(20 * time.Second)
		}
		// The brokers' data is gigabytes of benchmark records (Kafka
		// deletes topics a minute late): leave none of it behind.
		if err := os.RemoveAll(o.workDir); err != nil {
			logf("removing %s: %v", o.workDir, err)
		}
	}()
	for _, name := range o.targets {
		var t *target
		switch name {
		case "sluice":
			// cmd/sluice is in the Sluice module (the repository root);
			// sluice-profiled, like kfake, is in the bench module (bench/).
			dir, pkg, out := o.root, "./cmd/sluice", "sluice"
			if o.profile {
				dir, pkg, out = filepath.Join(o.root, "bench"), "./cmd/sluice-profiled", "sluice-profiled"
			}
			bin, err := buildGo(dir, binDir, pkg, out)
			if err != nil {
				return err
			}
			t, err = startSluice(o, bin, o.profile)
			if err != nil {
				return err
			}
		case "kafka":
			if t, err = startKafka(o); err != nil {
				return err
			}
		case "kfake":
			bin, err := buildGo(filepath.Join(o.root, "bench"), binDir, "./cmd/kfake", "kfake")
			if err != nil {
				return err
			}
			if t, err = startKfake(o, bin); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown target %q (sluice, kafka, kfake)", name)
		}
		running[name] = t
		if err := t.waitReady(ctx, 90*time.Second); err != nil {
			return err
		}
		logf("%s ready on %s (pid %d)", name, t.addr, t.pid())
	}

	if running["sluice"] != nil || running["kafka"] != nil {
		logf("measuring fdatasync bandwidth of the data disk (%d MiB)", o.diskBytes>>20)
		d, err := measureDisk(o.workDir, o.diskBytes)
		if err != nil {
			logf("disk baseline failed: %v", err)
		} else {
			rep.Disk = &d
			logf("disk: bulk fdatasync %.0f MB/s; fdatasync per 1 MiB %.0f MB/s; per 16 KiB %.1f MB/s (%.2f ms/sync)",
				d.BulkMBps, d.PerWrite1MiBMBps, d.PerWrite16KiBMBps, d.SyncLatencyMs)
			// Full mode only: the probe idles 15 s first, long enough for
			// memory freed earlier to go back to the host on a VM that
			// reports free pages (shorter idles measure recycled pages).
			var pc pageCacheProbe
			var err error
			if o.quick {
				err = errors.New("skipped in quick mode")
			} else {
				pc, err = measurePageCache(o.workDir, 4<<30, 15*time.Second)
			}
			if err != nil {
				logf("page-cache probe: %v", err)
			} else {
				rep.Disk.PageCache = &pc
				logf("page cache: %d MiB written into fresh memory %.0f MB/s (%.2f CPU s/GB), into just-freed pages %.0f MB/s (%.2f CPU s/GB)",
					pc.Bytes>>20, pc.FreshMBps, pc.FreshCPUSPerGB, pc.ReusedMBps, pc.ReusedCPUSPerG)
			}
		}
	}

	for _, w := range plan(o) {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err := checkFree(o.workDir); err != nil {
			return err
		}
		wr, err := runWorkload(ctx, o, w, running)
		if err != nil {
			return err
		}
		rep.Workloads = append(rep.Workloads, wr)
		// Write as we go, so an interrupted run still leaves its numbers.
		if err := writeResults(o, rep, false); err != nil {
			return err
		}
	}

	for _, name := range o.targets {
		t := running[name]
		_, hwm, _ := memStatus(t.pid())
		cpu, _ := cpuSeconds(t.pid())
		rep.Targets[name] = targetInfo{PeakRSSBytes: hwm, CPUSeconds: cpu, Addr: t.addr}
	}
	for name, t := range running {
		t.stop(20 * time.Second)
		delete(running, name)
	}
	if o.compaction {
		rep.Compaction = runCompactionBench(ctx, o)
	}
	rep.Meta.LoadEnd = loadAvg()
	rep.Meta.Finished = time.Now().UTC().Format(time.RFC3339)
	rep.Goals = evaluateGoals(rep)
	if err := writeResults(o, rep, true); err != nil {
		return err
	}
	fmt.Println(markdown(rep))
	return nil
}

// plan lists the workloads in the order they run.
func plan(o *options) []workload {
	var ws []workload
	add := func(w workload) {
		if o.only == "" || strings.Contains(w.Name, o.only) {
			ws = append(ws, w)
		}
	}
	sizeName := map[int]string{1024: "1KiB", 100: "100B"}
	for _, size := range []int{1024, 100} {
		for _, p := range []int{1, 4, 16} {
			for _, c := range []string{"none", "lz4", "zstd"} {
				if c != "none" && p != 4 && !o.allCombos {
					continue
				}
				add(workload{Name: fmt.Sprintf("produce %s p%d %s", sizeName[size], p, c), Kind: "produce", RecordSize: size, Partitions: p, Codec: c})
			}
		}
	}
	add(workload{Name: "durable produce 1KiB p4 flush.messages=1", Kind: "durable", RecordSize: 1024, Partitions: 4, Codec: "none"})
	add(workload{Name: "consume 1KiB p4 (franz-go consumer)", Kind: "consume", RecordSize: 1024, Partitions: 4, Codec: "none"})
	add(workload{Name: "fetch 1KiB p4 (raw Fetch, no decode)", Kind: "fetch", RecordSize: 1024, Partitions: 4, Codec: "none"})
	add(workload{Name: fmt.Sprintf("e2e latency 1KiB p4 at %g MB/s", o.latencyRate), Kind: "latency", RecordSize: 1024, Partitions: 4, Codec: "none", RateMBps: o.latencyRate})
	return ws
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

func createTopic(ctx context.Context, addr, topic string, partitions int, configs map[string]*string) error {
	return createTopicRF(ctx, addr, topic, partitions, 1, configs)
}

// createTopicRF creates topic with the given replication factor and waits
// until every partition has a leader.
func createTopicRF(ctx context.Context, addr, topic string, partitions, rf int, configs map[string]*string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := adm.CreateTopic(cctx, int32(partitions), int16(rf), configs, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	// Wait until every partition has a leader in metadata.
	for cctx.Err() == nil {
		md, err := adm.Metadata(cctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == partitions {
				ready := true
				for _, p := range td.Partitions {
					ready = ready && p.Err == nil && p.Leader >= 0
				}
				if ready {
					return nil
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("topic %s has no leaders after 30 s", topic)
}

func deleteTopic(ctx context.Context, addr, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return
	}
	defer cl.Close()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).DeleteTopics(dctx, topic); err != nil {
		logf("delete topic %s: %v", topic, err)
	}
}

// order alternates the target order by rep: A B C, then C B A, ...
func order(targets []string, rep int) []string {
	s := slices.Clone(targets)
	if rep%2 == 1 {
		slices.Reverse(s)
	}
	return s
}

func runWorkload(ctx context.Context, o *options, w workload, running map[string]*target) (*workloadResult, error) {
	wr := &workloadResult{workload: w, Metric: "mb_s", Better: "higher"}
	if w.Kind == "latency" {
		wr.Metric, wr.Better = "p99_ms", "lower"
	}
	logf("== %s  (load %s)", w.Name, loadAvg())
	var names []string
	for _, n := range o.targets {
		if w.Kind == "durable" && !running[n].durable {
			continue // kfake keeps nothing on disk
		}
		names = append(names, n)
	}

	// The consume workloads read one pre-filled topic per target.
	src := "bench-" + slug(w.Name)
	var want int64
	if w.Kind == "consume" || w.Kind == "fetch" {
		for _, n := range names {
			t := running[n]
			if err := createTopic(ctx, t.addr, src, w.Partitions, nil); err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			start := time.Now()
			got, err := fill(ctx, t.addr, src, w, o.consumeBytes)
			if err != nil {
				return nil, fmt.Errorf("%s: fill: %w", n, err)
			}
			want = got
			logf("   %s: filled %d MiB in %.1fs", n, o.consumeBytes>>20, time.Since(start).Seconds())
		}
		defer func() {
			for _, n := range names {
				deleteTopic(ctx, running[n].addr, src)
			}
		}()
		if o.syncBetween {
			syscall.Sync()
		}
	}

	for rep := range o.reps {
		for _, n := range order(names, rep) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			t := running[n]
			settled := settle(ctx, running)
			r := oneRun(ctx, o, w, t, rep, src, want)
			r.SettleSeconds = settled.Seconds()
			wr.Runs = append(wr.Runs, r)
			if r.Err != "" {
				logf("   %-6s rep %d: ERROR %s", n, rep, r.Err)
			} else if w.Kind == "latency" {
				logf("   %-6s rep %d: p50 %.2f ms  p99 %.2f ms  p99.9 %.2f ms  (%d samples, cpu %.1fs)", n, rep, r.P50ms, r.P99ms, r.P999ms, r.Samples, r.CPUSeconds)
			} else {
				var bg float64
				for _, c := range r.OthersCPU {
					bg += c
				}
				logf("   %-6s rep %d: %8.1f MB/s  %9.0f rec/s  cpu %.2f s/GB (user %.2f sys %.2f)  rss %d MiB  load %.2f  client cpu %.2f s/GB  other brokers' cpu %.2fs  settled %.1fs",
					n, rep, r.MBps, float64(r.Records)/r.Seconds, r.CPUPerGB, r.CPUUserPerGB, r.CPUSysPerGB, r.RSSBytes>>20, r.Load1, r.ClientCPUPerGB, bg, r.SettleSeconds)
			}
		}
	}
	wr.summarize(o.targets)
	for _, rt := range wr.Ratios {
		logf("   sluice vs %s: %.2fx (median of pairs %v)", rt.Versus, rt.MedianOfPairs, fmtPairs(rt.Pairs))
	}
	return wr, nil
}

// settle waits (at most 5 s) until the brokers are idle — together under
// 12% of a core over 250 ms — so that no run pays for another target's
// leftovers (deferred topic deletion, garbage collection, JIT). It returns
// how long it waited.
func settle(ctx context.Context, running map[string]*target) time.Duration {
	start := time.Now()
	total := func() float64 {
		var sum float64
		for _, t := range running {
			c, _ := cpuSeconds(t.pid())
			sum += c
		}
		return sum
	}
	for time.Since(start) < 5*time.Second && ctx.Err() == nil {
		before := total()
		time.Sleep(250 * time.Millisecond)
		if total()-before < 0.03 {
			break
		}
	}
	return time.Since(start)
}

func fmtPairs(ps []float64) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprintf("%.2f", p)
	}
	return "[" + strings.Join(s, " ") + "]"
}

func oneRun(ctx context.Context, o *options, w workload, t *target, rep int, src string, want int64) runResult {
	r := runResult{Target: t.name, Rep: rep, OthersCPU: map[string]float64{}}
	var cpu0, cpu1, user0, user1, sys0, sys1 float64
	others0 := map[string]float64{}
	var client0 float64
	var profDone chan struct{}
	stats := func(begin bool) {
		u, st, _ := cpuTimes(t.pid())
		c := u + st
		self, _ := cpuSeconds(os.Getpid())
		if begin {
			client0 = self
		} else {
			r.ClientCPU = self - client0
		}
		for name, ot := range o.running {
			if ot != t {
				oc, _ := cpuSeconds(ot.pid())
				if begin {
					others0[name] = oc
				} else {
					r.OthersCPU[name] = oc - others0[name]
				}
			}
		}
		if begin {
			cpu0, user0, sys0 = c, u, st
			if o.profile && t.pprof != "" && rep == 0 {
				profDone = make(chan struct{})
				secs := int(o.duration.Seconds())
				if w.Kind == "latency" {
					secs = int(o.latencyDur.Seconds())
				}
				go saveProfile(t.pprof, max(secs, 1), filepath.Join(o.tmpDir, slug(w.Name)+".cpu.pprof"), profDone)
			}
		} else {
			cpu1, user1, sys1 = c, u, st
		}
	}
	var m measurement
	var err error
	switch w.Kind {
	case "produce", "durable", "latency":
		topic := fmt.Sprintf("bench-%s-r%d", slug(w.Name), rep)
		var cfg map[string]*string
		if w.Kind == "durable" {
			one := "1"
			cfg = map[string]*string{"flush.messages": &one}
		}
		if err = createTopic(ctx, t.addr, topic, w.Partitions, cfg); err != nil {
			break
		}
		if o.recycleMiB > 0 && w.Kind != "latency" {
			if err = recycleMemory(o.workDir, o.recycleMiB); err != nil {
				break
			}
		}
		if w.Kind == "latency" {
			m, err = latencyAt(ctx, t.addr, topic, w, o.latencyDur, stats)
		} else {
			m, err = produceFor(ctx, t.addr, topic, w, o.duration, stats)
		}
		deleteTopic(ctx, t.addr, topic)
	case "consume":
		m, err = consumeAll(ctx, t.addr, src, w.Partitions, want, stats)
	case "fetch":
		m, err = fetchAll(ctx, t.addr, src, w.Partitions, stats)
	}
	if profDone != nil {
		<-profDone
	}
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.Bytes, r.Records, r.Seconds = m.Bytes, m.Records, m.Seconds
	r.MBps = float64(m.Bytes) / m.Seconds / 1e6
	r.CPUSeconds = cpu1 - cpu0
	if m.Bytes > 0 {
		r.CPUPerGB = r.CPUSeconds / (float64(m.Bytes) / 1e9)
		r.CPUUserPerGB = (user1 - user0) / (float64(m.Bytes) / 1e9)
		r.CPUSysPerGB = (sys1 - sys0) / (float64(m.Bytes) / 1e9)
		r.ClientCPUPerGB = r.ClientCPU / (float64(m.Bytes) / 1e9)
	}
	r.P50ms, r.P99ms, r.P999ms, r.Samples = m.P50, m.P99, m.P999, m.Samples
	r.RSSBytes, _, _ = memStatus(t.pid())
	if o.syncBetween && w.Kind != "consume" && w.Kind != "fetch" {
		syscall.Sync() // the next run should not pay for this run's writeback
	}
	r.Load1 = load1()
	return r
}

func saveProfile(addr string, secs int, path string, done chan struct{}) {
	defer close(done)
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs))
	if err != nil {
		logf("profile: %v", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		logf("profile: %v", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		logf("profile: %v", err)
		return
	}
	logf("   profile saved to %s", path)
}

func machineMeta(o *options) meta {
	m := meta{
		Started: time.Now().UTC().Format(time.RFC3339), Reps: o.reps, CPUs: runtime.NumCPU(),
		Go: runtime.Version(), KafkaVersion: o.kafkaVersion, LoadStart: loadAvg(), Targets: o.targets,
		Duration: o.duration.String(),
	}
	m.Mode = "full"
	if o.quick {
		m.Mode = "quick"
	}
	if o.profile {
		m.Mode += "+profile"
	}
	if o.recycleMiB > 0 {
		m.Mode += fmt.Sprintf("+recycle-%dMiB", o.recycleMiB)
	}
	m.Host, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemTotal = strings.Join(strings.Fields(strings.SplitN(string(b), "\n", 2)[0])[1:], " ")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if slices.Contains(o.targets, "kafka") {
		m.Java = javaVersion()
	}
	if b, err := exec.Command("git", "-C", o.root, "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(b))
		if st, err := exec.Command("git", "-C", o.root, "status", "--porcelain").Output(); err == nil && len(st) > 0 {
			m.Commit += "+dirty"
		}
	}
	m.Notes = []string{
		"All targets run at once on the same 2-core machine as the client; runs alternate A/B/C, C/B/A so drift cancels in the per-pair ratios.",
		"Ratios are oriented so that > 1 means Sluice is better (more MB/s, or lower p99).",
		"Client: franz-go with defaults (acks=all, idempotent, linger 10 ms, 1 MiB batches, 5 requests in flight), 64 MiB producer buffer; linger 0 for the latency workload. It runs in the harness process on the same cores.",
		"Apache Kafka runs with its start script's JVM defaults (-Xmx1G -Xms1G, G1) and default broker configs.",
	}
	return m
}

func writeResults(o *options, rep *report, final bool) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	name := o.resultsName + ".json"
	if !final {
		name = "tmp/partial.json"
	}
	if err := os.WriteFile(filepath.Join(o.resultsDir, name), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if !final {
		return nil
	}
	svg := chartSVG(rep)
	if err := os.WriteFile(filepath.Join(o.resultsDir, o.resultsName+".svg"), []byte(svg), 0o644); err != nil {
		return err
	}
	md := markdown(rep)
	if err := os.WriteFile(filepath.Join(o.resultsDir, o.resultsName+".md"), []byte(md), 0o644); err != nil {
		return err
	}
	logf("wrote bench/results/%s.{json,md,svg}", o.resultsName)
	if o.updateDoc {
		if err := os.WriteFile(filepath.Join(o.root, "docs", "performance-ratios.svg"), []byte(svg), 0o644); err != nil {
			return err
		}
		if err := updateDoc(filepath.Join(o.root, "docs", "performance.md"), md); err != nil {
			return err
		}
		logf("updated docs/performance.md and docs/performance-ratios.svg")
	}
	return nil
}
