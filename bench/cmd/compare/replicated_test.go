package main

import (
	"math"
	"os"
	"strings"
	"testing"
)

func TestNodeProperties(t *testing.T) {
	got := nodeProperties(2, []int{9001, 9002, 9003}, []int{9101, 9102, 9103}, "/d/node-2")
	for _, want := range []string{
		"process.roles=broker,controller\n",
		"node.id=2\n",
		"controller.quorum.voters=1@127.0.0.1:9101,2@127.0.0.1:9102,3@127.0.0.1:9103\n",
		"listeners=PLAINTEXT://127.0.0.1:9002,CONTROLLER://127.0.0.1:9102\n",
		"advertised.listeners=PLAINTEXT://127.0.0.1:9002\n",
		"controller.listener.names=CONTROLLER\n",
		"log.dirs=/d/node-2\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("node properties lack %q:\n%s", want, got)
		}
	}
}

func TestReplSummarizePairsByRep(t *testing.T) {
	rw := &replWorkload{workload: workload{Kind: "latency"}, Runs: []replRun{
		{Target: "sluice", Rep: 0, MBps: 100, CPUPerGB: 1, UserPerGB: 0.25, SysPerGB: 0.75, P99ms: 2},
		{Target: "kafka", Rep: 0, MBps: 50, CPUPerGB: 4, P99ms: 8},
		{Target: "kafka", Rep: 1, MBps: 50, CPUPerGB: 2, P99ms: 4},
		{Target: "sluice", Rep: 1, MBps: 100, CPUPerGB: 2, UserPerGB: 0.5, SysPerGB: 1.5, P99ms: 4},
		{Target: "sluice", Rep: 2, Err: "failed"},
		{Target: "kafka", Rep: 2, MBps: 1, CPUPerGB: 100, P99ms: 100},
	}}
	rw.summarize([]string{"sluice", "kafka"})
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// Pairs (rep 0: 0.25, rep 1: 1); rep 2 has no Sluice run.
	near("CPU ratio", rw.CPURatio, 0.625)
	near("p99 ratio", rw.P99Ratio, 0.625)
	near("MB/s ratio", rw.MBpsRatio, 2)
	s := rw.Median["sluice"]
	if s.Runs != 2 {
		t.Errorf("sluice runs = %d, want 2 (the failed run is left out)", s.Runs)
	}
	near("sluice user s/GB", s.UserPerGB, 0.375)
	near("sluice sys s/GB", s.SysPerGB, 1.125)
	near("kafka median s/GB", rw.Median["kafka"].CPUPerGB, 4)
}

func TestCPUTimesMatchesCPUSeconds(t *testing.T) {
	u, s, err := cpuTimes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	total, err := cpuSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u < 0 || s < 0 || u+s > total+1e-9 {
		t.Errorf("user %v + system %v, then user+system %v read later", u, s, total)
	}
}
