// Command sluice-chaos is Sluice's fault checker: it runs real sluice nodes,
// drives them with real Kafka clients while injecting faults on a seeded
// schedule, records every operation in a history (JSON lines), checks the
// history for the anomalies Jepsen's Kafka workload names, and prints a
// summary whose last line is "N operations, F faults, A anomalies". It exits 0
// only when faults were injected and no anomaly was found.
//
// Usage: sluice-chaos [--quick] [--nodes 1] [--rf N] [--min-insync M] [--time 60s] [--seed N]
//
//	[--faults kill,pause] [--bin path/to/sluice] [--dir run-dir]
//	sluice-chaos --check history.jsonl   (check an existing history)
//
// Everything listens on and talks to 127.0.0.1 only, or, with network
// faults (--faults partition), to the nodes' own network namespaces joined
// by a bridge on this machine (package netns).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/checker"
	"github.com/sluice-broker/sluice/test/chaos/history"
	"github.com/sluice-broker/sluice/test/chaos/nemesis"
	"github.com/sluice-broker/sluice/test/chaos/netns"
	"github.com/sluice-broker/sluice/test/chaos/node"
	"github.com/sluice-broker/sluice/test/chaos/workload"
)

func main() { os.Exit(run()) }

type options struct {
	quick      bool
	nodes      int
	total      time.Duration
	seed       uint64
	seedSet    bool
	faults     string
	bin        string
	dir        string
	workloads  string
	partitions int
	rate       int
	check      string
	rf         int
	minInsync  int
	maxFault   time.Duration
	flushEach  bool
	// kafkaTimeouts keeps Kafka's broker session and heartbeat defaults.
	kafkaTimeouts bool
}

var start = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

func run() int {
	var o options
	var seed int64
	flag.BoolVar(&o.quick, "quick", false, "short CI mode: 40s of faults and workloads unless --time is given")
	flag.IntVar(&o.nodes, "nodes", 1, "number of sluice nodes, 1 to 5 (2 and more form one cluster: every node a broker and a voter of the metadata quorum)")
	flag.DurationVar(&o.total, "time", 0, "how long the workloads and faults run (default 120s, 40s with --quick)")
	flag.Int64Var(&seed, "seed", -1, "seed of the fault schedule and workloads (default: from the clock, printed)")
	flag.StringVar(&o.faults, "faults", "kill,pause", "fault types: "+strings.Join(nemesis.Known, ","))
	flag.StringVar(&o.bin, "bin", "", "sluice binary (default: go build ./cmd/sluice of the enclosing repository)")
	flag.StringVar(&o.dir, "dir", "", "run directory for node data, logs and the history (default: a new one under $TMPDIR)")
	flag.StringVar(&o.workloads, "workloads", "append,txn,rdkafka", "workloads: append (franz-go), txn (franz-go transactions), rdkafka (librdkafka producer, and a read_committed consumer of the txn topic), metadata (CreateTopics, AlterConfigs, CreateAcls and DeleteAcls; the default adds it with --nodes above 1), group (a consumer group of the append topic: members joining, leaving, dying while committing), rdkafka-group (librdkafka members of the same group), compact (keyed writes and tombstones to a compacted topic)")
	flag.IntVar(&o.partitions, "partitions", 4, "partitions per workload topic")
	flag.IntVar(&o.rate, "rate", 250, "about how many write operations per second, all writers together")
	flag.StringVar(&o.check, "check", "", "only check this history file and print the summary")
	flag.IntVar(&o.rf, "rf", 0, "replication factor of the workload topics (default 3 with --nodes 3 or more, else 1)")
	flag.IntVar(&o.minInsync, "min-insync", 0, "min.insync.replicas of the workload topics (default 2 with --rf 3 or more, else the broker's default)")
	flag.DurationVar(&o.maxFault, "max-fault", 0, "longest fault (default 8s, 3s with --quick)")
	flag.BoolVar(&o.kafkaTimeouts, "kafka-timeouts", false, "on a cluster, keep Kafka's default broker.session.timeout.ms (9000), broker.heartbeat.interval.ms (2000) instead of 3000 and 500 (a kill is then detected by the controller's fast path or the 9 s session; a pause by the session only)")
	flag.BoolVar(&o.flushEach, "flush-each", true, "with --faults lose-unfsynced-2: every topic gets flush.messages=1 (log.flush.interval.messages=1); false shows what that prevents (two nodes losing their un-fsynced writes at once then may lose acknowledged writes, by design: expect anomalies)")
	faultsCheck := flag.Bool("faults-check", false, "only tell whether every fault type of --faults can be injected here with --nodes: exit 0 if so, 3 (with the reasons) if not")
	netnsCheck := flag.Bool("netns-check", false, "only tell whether network namespaces (partition faults) can be made here: exit 0 if so, 3 (with the reason) if not")
	reap := flag.String("reap", "", "(internal) PID,NODES,DIR: wait for end of file on stdin, then remove that run's network namespaces, bridge and tmpfs mounts under DIR")
	flag.Parse()
	if *reap != "" {
		parts := strings.SplitN(*reap, ",", 3)
		var pid, n int
		_, err1 := fmt.Sscan(parts[0], &pid)
		_, err2 := fmt.Sscan(parts[min(1, len(parts)-1)], &n)
		if len(parts) != 3 || err1 != nil || err2 != nil {
			fmt.Fprintln(os.Stderr, "sluice-chaos: --reap PID,NODES,DIR:", *reap)
			return 2
		}
		signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		netns.Reap(os.Stdin, pid, n)
		if err := node.UnmountUnder(parts[2]); err != nil {
			fmt.Fprintln(os.Stderr, "sluice-chaos reaper:", err)
		}
		return 0
	}
	if *netnsCheck {
		if err := netns.Available(); err != nil {
			fmt.Println("network namespaces cannot be made here:", err)
			return 3
		}
		fmt.Println("network namespaces can be made here")
		return 0
	}
	if *faultsCheck {
		if _, err := nemesis.Parse(o.faults, o.nodes); err != nil {
			fmt.Println(err)
			return 3
		}
		fmt.Printf("faults %s can be injected here\n", o.faults)
		return 0
	}
	workloadsSet := false
	flag.Visit(func(f *flag.Flag) { workloadsSet = workloadsSet || f.Name == "workloads" })
	if !workloadsSet && o.nodes > 1 {
		o.workloads += ",metadata"
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "sluice-chaos: unexpected arguments %q\n", flag.Args())
		return 2
	}
	if o.rf == 0 {
		o.rf = 1
		if o.nodes >= 3 {
			o.rf = 3
		}
	}
	if o.minInsync == 0 && o.rf >= 3 {
		o.minInsync = 2
	}
	if o.check == "" && (o.rf < 1 || o.rf > o.nodes) {
		fmt.Fprintf(os.Stderr, "sluice-chaos: --rf %d: between 1 and the number of nodes (%d)\n", o.rf, o.nodes)
		return 2
	}
	if o.minInsync < 0 || o.minInsync > o.rf {
		fmt.Fprintf(os.Stderr, "sluice-chaos: --min-insync %d: between 1 and --rf (%d)\n", o.minInsync, o.rf)
		return 2
	}
	if o.check != "" {
		ops, err := history.ReadFile(o.check)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sluice-chaos:", err)
			return 2
		}
		res := checker.Check(ops)
		if len(res.Anomalies) == 0 && !sabotageOK(ops) {
			fmt.Print(res.Summary(10))
			return 1
		}
		fmt.Print(res.Summary(10))
		return exitCode(res)
	}
	if o.total == 0 {
		o.total = 120 * time.Second
		if o.quick {
			o.total = 40 * time.Second
		}
	}
	if seed < 0 {
		o.seed = uint64(time.Now().UnixNano() % 1_000_000)
	} else {
		o.seed, o.seedSet = uint64(seed), true
	}
	faults, err := nemesis.Parse(o.faults, o.nodes)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sluice-chaos: --faults %s: %v\n", o.faults, err)
		return 2
	}
	if nemesis.NeedsFsyncShadow(faults) && (o.rf < 2 || o.minInsync < 2) {
		// Apache Kafka acknowledges acks=all writes that only the leader
		// holds when min.insync.replicas is 1, and fsyncs nothing by
		// default: one node's lost page cache may then lose them, by design.
		fmt.Fprintf(os.Stderr, "sluice-chaos: --faults %s: %q needs --rf and --min-insync of at least 2 (have %d and %d): with one copy acknowledged, losing a node's un-fsynced writes loses acknowledged ones by design\n", o.faults, nemesis.LoseUnfsynced, o.rf, o.minInsync)
		return 2
	}
	wl := map[string]bool{}
	for _, w := range strings.Split(o.workloads, ",") {
		switch w = strings.TrimSpace(w); w {
		case "append", "txn", "rdkafka", "metadata", "group", "rdkafka-group", "compact":
			wl[w] = true
		case "":
		default:
			fmt.Fprintf(os.Stderr, "sluice-chaos: unknown workload %q (append, txn, rdkafka, metadata, group, rdkafka-group, compact)\n", w)
			return 2
		}
	}

	// Every node we start dies with us: on return, on Ctrl-C, on errors;
	// the network namespaces and the bridge too (and, should this process
	// die without running this, the reaper removes them).
	defer teardown()
	defer func() {
		if p := recover(); p != nil {
			teardown()
			panic(p)
		}
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigs
		logf("%v: stopping every node", s)
		teardown()
		os.Exit(130)
	}()

	if o.dir == "" {
		o.dir, err = os.MkdirTemp("", fmt.Sprintf("sluice-chaos-%d-", o.seed))
		if err != nil {
			fmt.Fprintln(os.Stderr, "sluice-chaos:", err)
			return 2
		}
	} else if err := os.MkdirAll(o.dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-chaos:", err)
		return 2
	}
	if o.dir, err = filepath.Abs(o.dir); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-chaos:", err)
		return 2
	}
	if nemesis.NeedsNamespaces(faults) || nemesis.NeedsTmpfs(faults) {
		self, err := os.Executable()
		if err == nil {
			err = netns.StartReaper(self, "--reap", fmt.Sprintf("%d,%d,%s", os.Getpid(), o.nodes, o.dir))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "sluice-chaos: the reaper (removes namespaces and mounts if this process dies):", err)
			return 2
		}
	}
	if nemesis.NeedsNamespaces(faults) {
		if removed := netns.CleanStale(); len(removed) > 0 {
			logf("removed what an earlier run left behind: %s", strings.Join(removed, ", "))
		}
		nw, err := netns.Setup(o.nodes)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sluice-chaos: network namespaces:", err)
			return 2
		}
		netMu.Lock()
		network = nw
		netMu.Unlock()
		logf("network: bridge %s (%s); node 1 in namespace %s at %s, and so on", nw.Bridge, nw.BridgeIP(), nw.NS(1), nw.IP(1))
	}
	if o.bin == "" {
		o.bin, err = buildSluice(o.dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sluice-chaos:", err)
			return 2
		}
	}
	code, err := runChaos(o, faults, wl)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice-chaos:", err)
		return 2
	}
	return code
}

var (
	netMu   sync.Mutex
	network *netns.Net
)

// teardown stops every node, then removes the network namespaces.
func teardown() {
	node.StopAll()
	if err := node.UnmountAll(); err != nil {
		logf("tmpfs data directories: %v", err)
	}
	netMu.Lock()
	nw := network
	netMu.Unlock()
	nw.Teardown()
}

// buildSluice builds ./cmd/sluice of the repository enclosing the working
// directory into dir.
func buildSluice(dir string) (string, error) {
	root, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/sluice-broker/sluice\n") {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "", fmt.Errorf("no --bin given and no sluice repository above the working directory")
		}
		root = parent
	}
	bin := filepath.Join(dir, "sluice")
	logf("building %s from %s", bin, root)
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/sluice")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/sluice: %w", err)
	}
	return bin, nil
}

func exitCode(res checker.Result) int {
	if len(res.Anomalies) > 0 || res.FaultTotal() == 0 {
		return 1
	}
	return 0
}

func runChaos(o options, faults []string, wl map[string]bool) (int, error) {
	schedule := nemesis.ScheduleMax(o.seed, faults, o.nodes, o.total-3*time.Second, o.quick, o.maxFault)
	logf("seed %d, %d node(s), %v, faults %s, workloads %s, %s; run directory %s", o.seed, o.nodes, o.total, strings.Join(faults, ","), o.workloads, rfText(o), o.dir)
	logf("reproduce with: --seed %d --time %v --faults %s --nodes %d --workloads %s --rf %d --min-insync %d --quick=%v --max-fault %v --flush-each=%v --kafka-timeouts=%v", o.seed, o.total, strings.Join(faults, ","), o.nodes, o.workloads, o.rf, o.minInsync, o.quick, o.maxFault, o.flushEach, o.kafkaTimeouts)
	for i, s := range schedule {
		logf("  schedule %d: %s", i+1, s)
	}
	if len(schedule) == 0 {
		return 0, fmt.Errorf("--time %v is too short for any fault", o.total)
	}
	props := map[string]string{
		"num.partitions":                                              fmt.Sprint(o.partitions),
		"auto.create.topics.enable":                                   "false",
		"offsets.topic.num.partitions":                                "4",
		"transaction.state.log.num.partitions":                        "4",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
	}
	if wl["compact"] {
		// The cleaner looks for work every second (Kafka's default: 15 s).
		props["log.cleaner.backoff.ms"] = "1000"
	}
	if nemesis.NeedsClockControl(faults) {
		// Test only: /test/clock on each node's metrics listener.
		props[node.ClockControlConfig] = "true"
	}
	if nemesis.NeedsFsyncShadow(faults) {
		// Test only: each node keeps a copy of its data directory as of its
		// fsyncs, which lose-unfsynced restores after a SIGKILL. The
		// internal topics (__consumer_offsets) get min.insync.replicas 2
		// too (Apache Kafka's default, 1, acknowledges offset commits only
		// their leader holds).
		props[node.FsyncShadowConfig] = node.FsyncShadowPerNode
		props["min.insync.replicas"] = "2"
	}
	if nemesis.NeedsFlushEach(faults) && o.flushEach {
		// Two nodes losing their un-fsynced writes at once lose
		// acknowledged ones unless every replica fsyncs before its position
		// counts (Apache Kafka relies on replication, not fsync): every
		// topic, the internal ones too, gets flush.messages=1.
		props["log.flush.interval.messages"] = "1"
	}
	if wl["metadata"] {
		// ACL bindings in the metadata workload: stored only with an
		// authorizer (every connection a super user).
		for k, v := range workload.AclProps {
			props[k] = v
		}
	}
	if o.nodes > 1 {
		// Fence a silent broker after 3 s (Kafka's default is 9 s): a pause
		// or kill of a few seconds then exercises fencing and unfencing, not
		// only a missed heartbeat or two.
		if !o.kafkaTimeouts {
			props["broker.session.timeout.ms"] = "3000"
			props["broker.heartbeat.interval.ms"] = "500"
		}
		props["controller.quorum.election.timeout.ms"] = "1000"
	}
	netMu.Lock()
	nw := network
	netMu.Unlock()
	var cluster *node.Cluster
	var err error
	if nw != nil {
		cluster, err = node.NewClusterIn(o.bin, o.dir, o.nodes, props, nw)
	} else {
		cluster, err = node.NewCluster(o.bin, o.dir, o.nodes, props)
	}
	if err != nil {
		return 0, err
	}
	if nemesis.NeedsTmpfs(faults) {
		// Each data directory on its own small file system, for disk-full.
		for _, n := range cluster.Nodes {
			if err := n.MountDataTmpfs("256m"); err != nil {
				return 0, err
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	err = cluster.Start(ctx)
	cancel()
	if err != nil {
		return 0, err
	}
	histPath := filepath.Join(o.dir, "history.jsonl")
	rec, err := history.NewRecorder(histPath)
	if err != nil {
		return 0, err
	}
	writers := 0
	for w, n := range map[string]int{"append": 2, "txn": 2, "rdkafka": 1} {
		if wl[w] {
			writers += n
		}
	}
	env := &workload.Env{Rec: rec, Addrs: cluster.Addrs(), Partitions: o.partitions, Logf: logf,
		WriterPause: time.Duration(writers) * time.Second / time.Duration(max(o.rate, 1)), PollPause: 100 * time.Millisecond,
		ACLs: wl["metadata"]}
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	// With replication factor 1 a killed node's partitions are offline
	// until it is back, with all their data; with more, a new leader takes
	// over from the in-sync set.
	err = env.CreateTopics(ctx, int16(o.rf), o.minInsync)
	if err == nil && wl["compact"] {
		err = env.CreateCompactTopic(ctx, int16(o.rf), o.minInsync)
	}
	cancel()
	if err != nil {
		return 0, err
	}

	// Workloads run until stopWork; the nemesis until its schedule ends or
	// stopFaults.
	workCtx, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	var wg sync.WaitGroup
	spawn := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	seed := o.seed
	if wl["append"] {
		for i := range 2 {
			spawn(func() { env.AppendFranz(workCtx, seed*100+uint64(i)) })
		}
		spawn(func() { env.Consumer(workCtx, workload.AppendTopic, history.ReadUncommitted, seed*100+10) })
	}
	if wl["rdkafka"] {
		spawn(func() { env.AppendRdkafka(workCtx, seed*100+20) })
		if wl["txn"] {
			spawn(func() { env.ConsumerRdkafka(workCtx, workload.TxnTopic, history.ReadCommitted, seed*100+21) })
		}
	}
	if wl["txn"] {
		for i := range 2 {
			spawn(func() { env.Txn(workCtx, i, seed*100+30+uint64(i)) })
		}
		spawn(func() { env.Consumer(workCtx, workload.TxnTopic, history.ReadCommitted, seed*100+40) })
		spawn(func() { env.Consumer(workCtx, workload.TxnTopic, history.ReadUncommitted, seed*100+41) })
	}
	spawn(func() { env.Watermarks(workCtx, 250*time.Millisecond) })
	if wl["compact"] {
		spawn(func() { env.Compact(workCtx, seed*100+70) })
	}
	if wl["group"] {
		for i := range 3 {
			spawn(func() { env.GroupMember(workCtx, i, seed*100+60+uint64(i)) })
		}
	}
	if wl["rdkafka-group"] {
		// Two librdkafka members, one beside franz-go's three (every
		// member joining or leaving rebalances the whole group).
		n := 2
		if wl["group"] {
			n = 1
		}
		for i := range n {
			spawn(func() { env.GroupMemberRdkafka(workCtx, i, seed*100+80+uint64(i)) })
		}
	}
	if wl["group"] || wl["rdkafka-group"] {
		spawn(func() { env.GroupOffsets(workCtx, 500*time.Millisecond) })
	}
	if wl["metadata"] {
		spawn(func() { env.Metadata(workCtx, 300*time.Millisecond, seed*100+50) })
	}
	if o.nodes > 1 {
		// Which controller each node names, as clients see it.
		for _, n := range cluster.Nodes {
			spawn(func() { env.ObserveController(workCtx, n.ID, n.Listen, 250*time.Millisecond) })
		}
	}

	nem := &nemesis.Nemesis{Rec: rec, Cluster: cluster, Net: nw, HealTimeout: 60 * time.Second, Logf: logf,
		LeaderTopics: []string{workload.AppendTopic, workload.TxnTopic}, ClientClock: env.SetClientClock}
	faultCtx, stopFaults := context.WithTimeout(context.Background(), o.total)
	defer stopFaults()
	nemErr := nem.Run(faultCtx, schedule)
	if nemErr != nil {
		logf("nemesis: %v", nemErr)
	}
	<-faultCtx.Done()
	if err := nem.HealAll(); err != nil {
		logf("heal: %v", err)
	}
	logf("faults over, every node healed; workloads run 3s more")
	time.Sleep(3 * time.Second)
	rec.Record(history.Op{Process: history.NemesisProcess, Type: history.Invoke, F: history.FStopWorkloads})
	stopWork()
	rec.Record(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FStopWorkloads})
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(60 * time.Second):
		logf("some workload did not stop within 60s; its open operations count as indeterminate")
	}

	ctx, cancel = context.WithTimeout(context.Background(), 40*time.Second)
	if err := env.WaitStable(ctx); err != nil {
		logf("before the final read: %v", err)
	}
	cancel()
	if wl["metadata"] || o.nodes > 1 {
		// Every node's view of the metadata, once they agree (30 s at most).
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		env.FinalMetadata(ctx, cluster.Addrs())
		cancel()
	}
	for _, iso := range []string{history.ReadUncommitted, history.ReadCommitted} {
		ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
		err := env.FinalRead(ctx, iso)
		cancel()
		if err != nil {
			logf("final %s read: %v", iso, err)
		}
	}
	if wl["compact"] {
		ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
		if err := env.FinalCompactRead(ctx); err != nil {
			logf("final compacted read: %v", err)
		}
		cancel()
	}
	if wl["group"] || wl["rdkafka-group"] {
		ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
		env.FinalGroupOffsets(ctx)
		cancel()
	}
	if o.rf > 1 {
		// Every replica back in sync before the nodes stop, so that each
		// holds the log up to the high watermark (30 s at most; a replica
		// still behind is then named by the replica comparison).
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		if err := env.WaitInSync(ctx, cluster.Addrs()); err != nil {
			logf("before stopping the nodes: %v", err)
		}
		cancel()
	}
	for _, n := range cluster.Nodes {
		if err := n.Stop(10 * time.Second); err != nil {
			logf("stop node %d: %v", n.ID, err)
		}
	}
	if o.rf > 1 {
		var compactBelow map[string]int64
		if wl["compact"] {
			compactBelow = finalTargets(rec.Ops(), history.FKVFinal)
		}
		recordReplicaLogs(rec, env, cluster, o.partitions, compactBelow)
	}
	if err := rec.Close(); err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	res := checker.Check(rec.Ops())
	summary := res.Summary(10)
	head := fmt.Sprintf("sluice-chaos seed %d, %d node(s), --time %v, faults %s, workloads %s\nhistory: %s\n",
		o.seed, o.nodes, o.total, strings.Join(faults, ","), o.workloads, histPath)
	if o.nodes > 1 {
		head += fmt.Sprintf("topics: %s\n", rfText(o))
	}
	if nemesis.NeedsFlushEach(faults) {
		if o.flushEach {
			head += "flush.messages=1 on every topic (log.flush.interval.messages=1): two nodes losing their un-fsynced writes at once must lose nothing acknowledged\n"
		} else {
			head += "--flush-each=false: no topic fsyncs each append, so two nodes losing their un-fsynced writes at once may lose acknowledged writes, by design\n"
		}
	}
	_ = os.WriteFile(filepath.Join(o.dir, "summary.txt"), []byte(head+summary), 0o644)
	fmt.Print(head)
	if len(res.Anomalies) == 0 && !sabotageOK(rec.Ops()) {
		fmt.Print(summary)
		return 1, nil
	}
	fmt.Print(summary)
	return exitCode(res), nil
}

// sabotageOK plants each anomaly the checker can plant into a copy of a clean
// real history and reports whether every one was named.
func sabotageOK(ops []history.Op) bool {
	lines, err := checker.SabotageAll(ops)
	fmt.Println("checker self-test: anomalies planted into copies of this history:")
	for _, l := range lines {
		fmt.Println("  " + l)
	}
	if err != nil {
		fmt.Println("checker self-test FAILED:", err)
		return false
	}
	return true
}

// rfText names the workload topics' replication factor and min.insync.replicas.
func rfText(o options) string {
	if o.rf == 1 {
		return "replication factor 1 (a killed node's partitions are offline until it is back)"
	}
	mi := "the broker's default min.insync.replicas"
	if o.minInsync > 0 {
		mi = fmt.Sprintf("min.insync.replicas %d", o.minInsync)
	}
	return fmt.Sprintf("replication factor %d, %s, acks=all and idempotent producers", o.rf, mi)
}

// finalTargets is the high watermark per partition the last completed
// operation f (a final read) aimed at.
func finalTargets(ops []history.Op, f string) map[string]int64 {
	var t map[string]int64
	for _, op := range ops {
		if op.F == f && op.Type != history.Invoke && op.Targets != nil {
			t = op.Targets
		}
	}
	return t
}

// recordReplicaLogs reads, from every stopped node's data directory, the
// batch headers of its copy of each workload partition and records them, one
// replica-log operation per node: the checker compares the replicas below
// the final high watermark. With compactBelow (the final compacted read's
// high watermarks), each copy of the compacted topic's partitions gives the
// latest record of every record key below it (replica-kv mops): replicas
// compact on their own, so their batches differ, but not what they keep.
func recordReplicaLogs(rec *history.Recorder, env *workload.Env, cluster *node.Cluster, partitions int, compactBelow map[string]int64) {
	for _, n := range cluster.Nodes {
		id := n.ID
		proc := env.NextProcess()
		rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FReplicaLog, Node: &id})
		var ms []history.Mop
		var errs []string
		for _, t := range []string{workload.AppendTopic, workload.TxnTopic} {
			for p := range partitions {
				bs, ok, err := node.ReplicaBatches(n.DataDir(), t, int32(p))
				if err != nil {
					errs = append(errs, err.Error())
				}
				if ok {
					ab, _, err := node.ReplicaAbortedTxns(n.DataDir(), t, int32(p))
					if err != nil {
						errs = append(errs, err.Error())
					}
					ms = append(ms, history.Mop{F: history.MReplica, Key: workload.Key(t, int32(p)), Batches: bs, Aborted: ab})
				}
			}
		}
		for p := range partitions {
			key := workload.Key(workload.CompactTopic, int32(p))
			below, ok := compactBelow[key]
			if !ok {
				continue
			}
			latest, ok, err := node.ReplicaLatest(n.DataDir(), workload.CompactTopic, int32(p), below)
			if err != nil {
				errs = append(errs, err.Error())
			}
			if !ok || err != nil {
				continue
			}
			ms = append(ms, history.Mop{F: history.MReplicaKV, Key: key})
			items := make([]string, 0, len(latest))
			for it := range latest {
				items = append(items, it)
			}
			sort.Strings(items)
			for _, it := range items {
				kv := latest[it]
				m := history.Mop{F: history.MReplicaKV, Key: key, Item: it, Offset: history.I64(kv.Offset)}
				if kv.Value != nil {
					v, err := strconv.ParseInt(string(kv.Value), 10, 64)
					if err != nil {
						v = -1
					}
					m.Value = history.I64(v)
				}
				ms = append(ms, m)
			}
		}
		typ, errS := history.OK, ""
		if len(errs) > 0 {
			typ, errS = history.Info, strings.Join(errs, "; ")
		}
		rec.Record(history.Op{Process: proc, Type: typ, F: history.FReplicaLog, Node: &id, Value: ms, Error: errS})
	}
}
