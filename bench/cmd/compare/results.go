package main

import (
	"slices"
)

// run is one measurement of one workload against one target.
type runResult struct {
	Target     string  `json:"target"`
	Rep        int     `json:"rep"`
	MBps       float64 `json:"mb_s"`
	Records    int64   `json:"records"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"broker_cpu_s"`
	CPUPerGB   float64 `json:"broker_cpu_s_per_gb"`
	// CPUUserPerGB and CPUSysPerGB split CPUPerGB into the broker's user
	// and system (kernel) time, so that our own work and the kernel's
	// copies can be told apart.
	CPUUserPerGB float64 `json:"broker_cpu_user_s_per_gb"`
	CPUSysPerGB  float64 `json:"broker_cpu_sys_s_per_gb"`
	RSSBytes     int64   `json:"broker_rss_bytes_after"`
	// ClientCPU is the harness's own CPU (the franz-go client) in the run.
	ClientCPU      float64 `json:"client_cpu_s"`
	ClientCPUPerGB float64 `json:"client_cpu_s_per_gb"`
	P50ms          float64 `json:"p50_ms,omitempty"`
	P99ms          float64 `json:"p99_ms,omitempty"`
	P999ms         float64 `json:"p999_ms,omitempty"`
	Samples        int     `json:"latency_samples,omitempty"`
	Load1          float64 `json:"load1_after"`
	// SettleSeconds is how long the run waited for the brokers to go idle;
	// OthersCPU is the CPU the other brokers used during the run (background
	// work that competed with this one).
	SettleSeconds float64            `json:"settle_s"`
	OthersCPU     map[string]float64 `json:"other_brokers_cpu_s,omitempty"`
	Err           string             `json:"error,omitempty"`
}

// summary is the per-target median of a workload's runs.
type summary struct {
	MBps     float64 `json:"mb_s"`
	CPUPerGB float64 `json:"broker_cpu_s_per_gb"`
	// CPUUserPerGB and CPUSysPerGB are the medians of the runs' user and
	// system parts (each its own median, so they need not add up exactly).
	CPUUserPerGB float64 `json:"broker_cpu_user_s_per_gb,omitempty"`
	CPUSysPerGB  float64 `json:"broker_cpu_sys_s_per_gb,omitempty"`
	// ClientCPUPerGB is the client's (harness's) CPU per GB in the same runs.
	ClientCPUPerGB float64 `json:"client_cpu_s_per_gb"`
	P50ms          float64 `json:"p50_ms,omitempty"`
	P99ms          float64 `json:"p99_ms,omitempty"`
	P999ms         float64 `json:"p999_ms,omitempty"`
	Runs           int     `json:"runs"`
}

// ratio compares Sluice with another target on a workload's primary metric,
// oriented so that > 1 means Sluice is better (faster, or lower latency).
type ratio struct {
	Versus string `json:"versus"`
	// MedianOfPairs is the median over reps of (Sluice run i vs other run i):
	// runs i were back to back, so slow phases of the machine cancel.
	MedianOfPairs float64   `json:"median_of_pairs"`
	Pairs         []float64 `json:"pairs"`
	// OfMedians compares the two medians.
	OfMedians float64 `json:"of_medians"`
}

type workloadResult struct {
	workload
	Metric  string             `json:"metric"` // "mb_s" or "p99_ms"
	Better  string             `json:"better"` // "higher" or "lower"
	Runs    []runResult        `json:"runs"`
	Median  map[string]summary `json:"median"`
	Ratios  []ratio            `json:"sluice_ratios"`
	LoadMin float64            `json:"load1_min"`
	LoadMax float64            `json:"load1_max"`
}

type targetInfo struct {
	PeakRSSBytes int64   `json:"peak_rss_bytes"` // VmHWM at the end of the run
	CPUSeconds   float64 `json:"total_cpu_s"`
	Addr         string  `json:"addr"`
}

type goal struct {
	Name     string  `json:"name"`
	Target   string  `json:"target"`
	Measured string  `json:"measured"`
	Value    float64 `json:"value"` // the number compared with the threshold
	Met      bool    `json:"met"`
	Note     string  `json:"note,omitempty"`
}

type compactionResult struct {
	Benchmark string  `json:"benchmark"`
	MBps      float64 `json:"dirty_log_mb_s"`
	RecordMBs float64 `json:"record_mb_s"`
}

type report struct {
	Meta       meta                  `json:"meta"`
	Disk       *diskBaseline         `json:"disk,omitempty"`
	Workloads  []*workloadResult     `json:"workloads"`
	Targets    map[string]targetInfo `json:"targets"`
	Goals      []goal                `json:"goals"`
	Compaction []compactionResult    `json:"compaction,omitempty"`
}

type meta struct {
	Started      string   `json:"started"`
	Finished     string   `json:"finished"`
	Mode         string   `json:"mode"`
	Reps         int      `json:"reps"`
	Duration     string   `json:"duration_per_run"`
	Host         string   `json:"host"`
	CPUs         int      `json:"cpus"`
	CPUModel     string   `json:"cpu_model"`
	MemTotal     string   `json:"mem_total"`
	Kernel       string   `json:"kernel"`
	Go           string   `json:"go"`
	Java         string   `json:"java"`
	KafkaVersion string   `json:"kafka_version"`
	Commit       string   `json:"sluice_commit"`
	LoadStart    string   `json:"loadavg_start"`
	LoadEnd      string   `json:"loadavg_end"`
	Targets      []string `json:"targets"`
	Notes        []string `json:"notes"`
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0 // JSON has no NaN; 0 means "no value"
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// primary returns the run's value of the workload's primary metric.
func (wr *workloadResult) primary(r runResult) float64 {
	if wr.Metric == "p99_ms" {
		return r.P99ms
	}
	return r.MBps
}

// summarize fills Median and Ratios from Runs.
func (wr *workloadResult) summarize(targets []string) {
	wr.Median = map[string]summary{}
	byTarget := map[string]map[int]runResult{}
	for _, r := range wr.Runs {
		if r.Err != "" {
			continue
		}
		if byTarget[r.Target] == nil {
			byTarget[r.Target] = map[int]runResult{}
		}
		byTarget[r.Target][r.Rep] = r
		if wr.LoadMin == 0 || r.Load1 < wr.LoadMin {
			wr.LoadMin = r.Load1
		}
		wr.LoadMax = max(wr.LoadMax, r.Load1)
	}
	for t, rs := range byTarget {
		var mb, cpu, ucpu, scpu, ccpu, p50, p99, p999 []float64
		for _, r := range rs {
			mb = append(mb, r.MBps)
			cpu = append(cpu, r.CPUPerGB)
			ucpu, scpu = append(ucpu, r.CPUUserPerGB), append(scpu, r.CPUSysPerGB)
			ccpu = append(ccpu, r.ClientCPUPerGB)
			p50, p99, p999 = append(p50, r.P50ms), append(p99, r.P99ms), append(p999, r.P999ms)
		}
		s := summary{MBps: median(mb), CPUPerGB: median(cpu), CPUUserPerGB: median(ucpu), CPUSysPerGB: median(scpu),
			ClientCPUPerGB: median(ccpu), Runs: len(rs)}
		if wr.Metric == "p99_ms" {
			s.P50ms, s.P99ms, s.P999ms = median(p50), median(p99), median(p999)
		}
		wr.Median[t] = s
	}
	sl, ok := byTarget["sluice"]
	if !ok {
		return
	}
	for _, other := range targets {
		if other == "sluice" {
			continue
		}
		ot, ok := byTarget[other]
		if !ok {
			continue
		}
		rt := ratio{Versus: other}
		for rep, a := range sl {
			b, ok := ot[rep]
			if !ok {
				continue
			}
			rt.Pairs = append(rt.Pairs, wr.orient(wr.primary(a), wr.primary(b)))
		}
		if len(rt.Pairs) == 0 {
			continue
		}
		slices.Sort(rt.Pairs)
		rt.MedianOfPairs = median(rt.Pairs)
		ms, mo := wr.Median["sluice"], wr.Median[other]
		if wr.Metric == "p99_ms" {
			rt.OfMedians = wr.orient(ms.P99ms, mo.P99ms)
		} else {
			rt.OfMedians = wr.orient(ms.MBps, mo.MBps)
		}
		wr.Ratios = append(wr.Ratios, rt)
	}
}

// orient turns (sluice, other) into "how many times better Sluice is".
func (wr *workloadResult) orient(sluice, other float64) float64 {
	if wr.Better == "lower" {
		if sluice == 0 {
			return 0 // JSON has no NaN; 0 means "no value"
		}
		return other / sluice
	}
	if other == 0 {
		return 0 // JSON has no NaN; 0 means "no value"
	}
	return sluice / other
}

func (wr *workloadResult) ratioVs(other string) (ratio, bool) {
	for _, r := range wr.Ratios {
		if r.Versus == other {
			return r, true
		}
	}
	return ratio{}, false
}
