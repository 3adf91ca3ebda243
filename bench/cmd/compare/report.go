package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

func (rep *report) workload(kind string) *workloadResult {
	for _, w := range rep.Workloads {
		if w.Kind == kind {
			return w
		}
	}
	return nil
}

// ratioGoal checks that Sluice's ratio against other is at least min on
// every workload of kind.
func ratioGoal(rep *report, name, kind, other string, threshold float64) (goal, bool) {
	g := goal{Name: name, Target: fmt.Sprintf("≥ %g× %s on every workload", threshold, other)}
	lo, worst := math.Inf(1), ""
	var logSum float64
	n := 0
	for _, w := range rep.Workloads {
		if w.Kind != kind {
			continue
		}
		r, ok := w.ratioVs(other)
		if !ok || r.MedianOfPairs <= 0 {
			continue
		}
		if r.MedianOfPairs < lo {
			lo, worst = r.MedianOfPairs, w.Name
		}
		logSum += math.Log(r.MedianOfPairs)
		n++
	}
	if n == 0 {
		return g, false
	}
	g.Value = lo
	g.Met = lo >= threshold
	if n == 1 {
		g.Measured = fmt.Sprintf("%.2f×", lo)
	} else {
		g.Measured = fmt.Sprintf("min %.2f× (%s), geometric mean %.2f× over %d workloads", lo, worst, math.Exp(logSum/float64(n)), n)
	}
	return g, true
}

func evaluateGoals(rep *report) []goal {
	var gs []goal
	add := func(g goal, ok bool) {
		if ok {
			gs = append(gs, g)
		}
	}
	add(ratioGoal(rep, "Produce vs Apache Kafka", "produce", "kafka", 2))
	add(ratioGoal(rep, "Produce vs kfake", "produce", "kfake", 1))
	add(ratioGoal(rep, "Consume vs Apache Kafka (franz-go consumer)", "consume", "kafka", 1.5))
	add(ratioGoal(rep, "Consume vs Apache Kafka (raw fetch)", "fetch", "kafka", 1.5))
	for _, kind := range []string{"consume", "fetch"} {
		if w := rep.workload(kind); w != nil {
			if s, ok := w.Median["sluice"]; ok {
				gs = append(gs, goal{
					Name: "Consume throughput, 1 KiB records (" + kind + ")", Target: "≥ 1000 MB/s",
					Measured: fmt.Sprintf("%.0f MB/s", s.MBps), Value: s.MBps, Met: s.MBps >= 1000,
				})
			}
		}
	}
	if w := rep.workload("latency"); w != nil {
		if r, ok := w.ratioVs("kafka"); ok {
			s, k := w.Median["sluice"], w.Median["kafka"]
			gs = append(gs, goal{
				Name: "p99 end-to-end latency vs Apache Kafka", Target: "≤ Kafka's",
				Measured: fmt.Sprintf("%.2f ms vs %.2f ms (Kafka/Sluice %.2f×)", s.P99ms, k.P99ms, r.MedianOfPairs),
				Value:    r.MedianOfPairs, Met: r.MedianOfPairs >= 1,
			})
		}
	}
	if s, ok := rep.Targets["sluice"]; ok {
		if k, ok := rep.Targets["kafka"]; ok && k.PeakRSSBytes > 0 {
			f := float64(s.PeakRSSBytes) / float64(k.PeakRSSBytes)
			gs = append(gs, goal{
				Name: "Peak RSS vs Apache Kafka", Target: "≤ ¼ of Kafka's",
				Measured: fmt.Sprintf("%d MiB vs %d MiB (%.2f of Kafka's)", s.PeakRSSBytes>>20, k.PeakRSSBytes>>20, f),
				Value:    f, Met: f <= 0.25,
			})
		}
	}
	if w := rep.workload("durable"); w != nil && rep.Disk != nil && rep.Disk.BulkMBps > 0 {
		if s, ok := w.Median["sluice"]; ok {
			f := s.MBps / rep.Disk.BulkMBps
			gs = append(gs, goal{
				Name: "Durable produce (flush.messages=1)", Target: "≥ 80% of the disk's fdatasync bandwidth",
				Measured: fmt.Sprintf("%.0f MB/s = %.0f%% of %.0f MB/s", s.MBps, 100*f, rep.Disk.BulkMBps),
				Value:    f, Met: f >= 0.8,
				Note: fmt.Sprintf("for scale: fdatasync after every 1 MiB write gives %.0f MB/s, after every 16 KiB %.1f MB/s",
					rep.Disk.PerWrite1MiBMBps, rep.Disk.PerWrite16KiBMBps),
			})
		}
	}
	return gs
}

func fmtMB(v float64) string {
	if v == 0 {
		return "–"
	}
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func fmtRatio(w *workloadResult, other string) string {
	r, ok := w.ratioVs(other)
	if !ok || r.MedianOfPairs == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", r.MedianOfPairs)
}

// markdown renders the report as the "Harness results" body.
func markdown(rep *report) string {
	var b strings.Builder
	m := rep.Meta
	fmt.Fprintf(&b, "Run: %s mode, %s → %s, Sluice %s, Apache Kafka %s (%s), %s.\n", m.Mode, m.Started, m.Finished, m.Commit, m.KafkaVersion, m.Java, m.Go)
	fmt.Fprintf(&b, "Machine: %d × %s, %s RAM, Linux %s. Load average (1/5/15 min) at start %s, at end %s.\n",
		m.CPUs, m.CPUModel, m.MemTotal, m.Kernel, m.LoadStart, m.LoadEnd)
	fmt.Fprintf(&b, "%d runs per target and workload (%s each for produce), alternating A/B/C then C/B/A; medians shown; ratios are the median of the per-pair ratios, > 1 means Sluice is better.\n\n", m.Reps, m.Duration)
	if d := rep.Disk; d != nil {
		fmt.Fprintf(&b, "Disk (data directory): %d MiB written then one fdatasync: **%.0f MB/s**; fdatasync after each 1 MiB write: %.0f MB/s; after each 16 KiB write: %.1f MB/s (%.2f ms per sync).\n\n",
			d.Bytes>>20, d.BulkMBps, d.PerWrite1MiBMBps, d.PerWrite16KiBMBps, d.SyncLatencyMs)
		if pc := d.PageCache; pc != nil {
			fmt.Fprintf(&b, "Page cache (no sync): %d MiB written into fresh memory after 15 s idle: **%.0f MB/s** (%.2f CPU s/GB); the same again into the pages just freed: **%.0f MB/s** (%.2f CPU s/GB). Every broker that writes to disk pays the first rate for memory the machine has not recycled (see [What is in the way](#what-is-in-the-way-on-this-machine)).\n\n",
				pc.Bytes>>20, pc.FreshMBps, pc.FreshCPUSPerGB, pc.ReusedMBps, pc.ReusedCPUSPerG)
		}
	}
	b.WriteString("| workload | Sluice | Kafka | kfake | Sluice vs Kafka | Sluice vs kfake | broker CPU s/GB (Sluice / Kafka / kfake; user + system) | client CPU s/GB (same runs) |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |\n")
	for _, w := range rep.Workloads {
		cell := func(t string) string {
			s, ok := w.Median[t]
			if !ok {
				return "–"
			}
			if w.Metric == "p99_ms" {
				return fmt.Sprintf("p50 %.2f / p99 **%.2f** / p99.9 %.2f ms", s.P50ms, s.P99ms, s.P999ms)
			}
			return fmtMB(s.MBps) + " MB/s"
		}
		cpu := func(t string) string {
			s, ok := w.Median[t]
			if !ok || s.CPUPerGB == 0 {
				return "–"
			}
			if s.CPUUserPerGB == 0 && s.CPUSysPerGB == 0 {
				return fmt.Sprintf("%.2f", s.CPUPerGB) // a result file from before the split
			}
			return fmt.Sprintf("%.2f (%.2f + %.2f)", s.CPUPerGB, s.CPUUserPerGB, s.CPUSysPerGB)
		}
		ccpu := func(t string) string {
			s, ok := w.Median[t]
			if !ok || s.ClientCPUPerGB == 0 {
				return "–"
			}
			return fmt.Sprintf("%.2f", s.ClientCPUPerGB)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s / %s / %s | %s / %s / %s |\n", w.Name,
			cell("sluice"), cell("kafka"), cell("kfake"), fmtRatio(w, "kafka"), fmtRatio(w, "kfake"),
			cpu("sluice"), cpu("kafka"), cpu("kfake"), ccpu("sluice"), ccpu("kafka"), ccpu("kfake"))
	}
	var errs []string
	for _, w := range rep.Workloads {
		for _, r := range w.Runs {
			if r.Err != "" {
				errs = append(errs, fmt.Sprintf("%s, %s rep %d: %s", w.Name, r.Target, r.Rep, r.Err))
			}
		}
	}
	if len(errs) > 0 {
		b.WriteString("\nFailed runs (left out of the medians):\n\n")
		for _, e := range errs {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	if len(rep.Targets) > 0 {
		b.WriteString("\n| target | peak RSS (VmHWM) over the whole run | broker CPU seconds, whole run |\n| --- | ---: | ---: |\n")
		for _, t := range m.Targets {
			if ti, ok := rep.Targets[t]; ok {
				fmt.Fprintf(&b, "| %s | %d MiB | %.0f |\n", t, ti.PeakRSSBytes>>20, ti.CPUSeconds)
			}
		}
	}
	if len(rep.Goals) > 0 {
		b.WriteString("\n| target (issue #7) | wanted | measured | |\n| --- | --- | --- | --- |\n")
		for _, g := range rep.Goals {
			met := "**missed**"
			if g.Met {
				met = "met"
			}
			measured := g.Measured
			if g.Note != "" {
				measured += "; " + g.Note
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", g.Name, g.Target, measured, met)
		}
	}
	if len(rep.Compaction) > 0 {
		b.WriteString("\nCompaction (Sluice only, `go test -bench Clean ./internal/compact`, one cleaner thread):\n\n| benchmark | dirty log MB/s | record MB/s |\n| --- | ---: | ---: |\n")
		for _, c := range rep.Compaction {
			fmt.Fprintf(&b, "| %s | %.0f | %.0f |\n", c.Benchmark, c.MBps, c.RecordMBs)
		}
	}
	return b.String()
}

const (
	docBegin = "<!-- bench:harness:begin (generated by bench/run.sh (bench/cmd/compare); edits inside are overwritten) -->"
	docEnd   = "<!-- bench:harness:end -->"
)

// updateDoc replaces the generated part of the "Harness results" section of
// docs/performance.md (between the markers), appending the section if the
// markers are missing. Text outside the markers is left alone.
func updateDoc(path, body string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	s := string(old)
	gen := docBegin + "\n\n![Sluice vs Apache Kafka and kfake](performance-ratios.svg)\n\n" + body + "\n" + docEnd
	i, j := strings.Index(s, docBegin), strings.Index(s, docEnd)
	if i >= 0 && j > i {
		s = s[:i] + gen + s[j+len(docEnd):]
	} else {
		if !strings.HasSuffix(s, "\n") && s != "" {
			s += "\n"
		}
		s += "\n## Harness results\n\n" + gen + "\n"
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

// runCompactionBench runs internal/compact's Go benchmark and reads its
// MB/s and record-MB/s columns.
func runCompactionBench(ctx context.Context, o *options) []compactionResult {
	logf("== compaction: go test -run '^$' -bench Clean -benchtime 3x ./internal/compact  (load %s)", loadAvg())
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "Clean", "-benchtime", "3x", "./internal/compact")
	cmd.Dir = o.root
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(o.tmpDir+"/compaction-bench.txt", out, 0o644)
	if err != nil {
		logf("compaction benchmark failed: %v (output in bench/results/tmp/compaction-bench.txt)", err)
		return nil
	}
	var res []compactionResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || !strings.HasPrefix(f[0], "BenchmarkClean") {
			continue
		}
		c := compactionResult{Benchmark: f[0]}
		for i := 1; i < len(f); i++ {
			switch f[i] {
			case "MB/s":
				c.MBps, _ = strconv.ParseFloat(f[i-1], 64)
			case "record-MB/s":
				c.RecordMBs, _ = strconv.ParseFloat(f[i-1], 64)
			}
		}
		res = append(res, c)
	}
	return res
}
