package nemesis

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/netns"
)

// connected tells, for a cut on n nodes, which pairs still see each other.
func sees(cut []netns.Pair, a, b int) bool {
	for _, p := range cut {
		if p == (netns.Pair{A: min(a, b), B: max(a, b)}) {
			return false
		}
	}
	return true
}

func TestGrudges(t *testing.T) {
	for pick := range uint64(20) {
		for n := 2; n <= 5; n++ {
			for target := 1; target <= n; target++ {
				iso := Grudge(Isolate, n, target, pick)
				for o := 1; o <= n; o++ {
					if o != target && sees(iso, target, o) {
						t.Fatalf("isolate %d of %d: still sees %d (%v)", target, n, o, iso)
					}
				}
				if len(iso) != n-1 {
					t.Fatalf("isolate %d of %d cuts %v", target, n, iso)
				}
				if n < 3 {
					continue
				}
				// Halves: the target's side is a strict minority; sides are
				// internally connected and cut from each other.
				h := Grudge(Halves, n, target, pick)
				side := map[int]bool{}
				for o := 1; o <= n; o++ {
					side[o] = sees(h, target, o)
				}
				small := 0
				for o := 1; o <= n; o++ {
					if side[o] {
						small++
					}
					for q := 1; q <= n; q++ {
						if o != q && sees(h, o, q) != (side[o] == side[q]) {
							t.Fatalf("halves %d of %d (pick %d): %d-%d wrong in %v", target, n, pick, o, q, h)
						}
					}
				}
				if small != (n-1)/2 && !(n == 3 && small == 1) {
					t.Fatalf("halves of %d: minority of %d (%v)", n, small, h)
				}
				// Bridge: exactly one other node sees everyone; the target
				// does not see everyone.
				b := Grudge(Bridge, n, target, pick)
				bridges := 0
				for o := 1; o <= n; o++ {
					all := true
					for q := 1; q <= n; q++ {
						all = all && sees(b, o, q)
					}
					if all {
						bridges++
						if o == target {
							t.Fatalf("bridge: the target %d sees everyone (%v)", target, b)
						}
					}
				}
				if bridges != 1 || len(b) == 0 {
					t.Fatalf("bridge %d of %d: %d nodes see everyone (%v)", target, n, bridges, b)
				}
				if n >= 4 {
					r := Grudge(Ring, n, target, pick)
					for o := 1; o <= n; o++ {
						seen := 0
						for q := 1; q <= n; q++ {
							if q != o && sees(r, o, q) {
								seen++
							}
						}
						if seen != 2 {
							t.Fatalf("ring of %d: node %d sees %d others (%v)", n, o, seen, r)
						}
					}
				}
			}
		}
	}
	if !reflect.DeepEqual(Grudge(Halves, 5, 2, 7), Grudge(Halves, 5, 2, 7)) {
		t.Fatal("a grudge is not reproducible from its pick")
	}
}

func TestNetworkFaultsNeedNamespaces(t *testing.T) {
	defer func(a, b, c, d, e func() error) {
		namespacesAvailable, netemAvailable, tmpfsAvailable, lossyAvailable, slowAvailable = a, b, c, d, e
	}(namespacesAvailable, netemAvailable, tmpfsAvailable, lossyAvailable, slowAvailable)
	tmpfsAvailable = func() error { return errFake("mount: permission denied") }
	if _, err := Parse("disk-full", 1); err == nil || !contains(err.Error(), `"disk-full" cannot be injected here: a full data directory needs each node's data directory on its own tmpfs mount, which cannot be made here: mount: permission denied`) {
		t.Fatalf("disk-full without tmpfs: %v", err)
	}
	tmpfsAvailable = func() error { return nil }
	if got, err := Parse("disk-full,rolling-restart", 1); err != nil || !reflect.DeepEqual(got, []string{DiskFull, Rolling}) {
		t.Fatalf("disk-full,rolling-restart: %v %v", got, err)
	}
	namespacesAvailable = func() error { return nil }
	netemAvailable = func() error { return errFake("sch_netem missing") }
	if got, err := Parse("partition,kill", 3); err != nil || !reflect.DeepEqual(got, []string{Kill, Partition}) {
		t.Fatalf("partition,kill: %v %v", got, err)
	}
	if _, err := Parse("netem", 3); err == nil || !contains(err.Error(), "sch_netem missing") {
		t.Fatalf("netem without the qdisc: %v", err)
	}
	// Lossy and slow links: their own tools, named when missing.
	lossyAvailable = func() error { return errFake("the nft tool is not installed") }
	slowAvailable = func() error { return nil }
	if _, err := Parse("slow,lossy", 3); err == nil || !contains(err.Error(), `"lossy" cannot be injected here: lossy links (random drops with nftables in the nodes' network namespaces) cannot be made here: the nft tool is not installed`) {
		t.Fatalf("lossy without nft: %v", err)
	}
	lossyAvailable = func() error { return nil }
	if got, err := Parse("slow,lossy,kill", 3); err != nil || !reflect.DeepEqual(got, []string{Kill, Lossy, Slow}) {
		t.Fatalf("slow,lossy,kill: %v %v", got, err)
	}
	if !NeedsNamespaces([]string{Kill, Slow}) || !NeedsNamespaces([]string{Lossy}) {
		t.Fatal("lossy and slow links need namespaces")
	}
	if _, err := Parse("lossy", 1); err == nil || !contains(err.Error(), "a lossy link between nodes needs at least 2 nodes") {
		t.Fatalf("lossy on 1 node: %v", err)
	}
	for _, s := range Schedule(42, []string{Lossy, Slow}, 3, 120*time.Second, false) {
		if pct := LossyPct(s.Pick); pct < 2 || pct > 30 {
			t.Fatalf("loss of %d%%", pct)
		}
		if r := SlowRate(s.Pick); r < 64 || r > 2048 {
			t.Fatalf("rate of %d kbit/s", r)
		}
	}
	namespacesAvailable = func() error { return errFake("not root") }
	if _, err := Parse("partition", 3); err == nil || !contains(err.Error(), "network namespaces cannot be made here: not root") {
		t.Fatalf("partition without namespaces: %v", err)
	}
	// Schedules of the other faults do not change with network faults known.
	a := Schedule(42, []string{Kill, Pause}, 3, 120*time.Second, false)
	for _, s := range a {
		if s.Kind != "" || s.Pick != 0 {
			t.Fatalf("kill/pause step with a network kind: %+v", s)
		}
	}
	p := Schedule(42, []string{Partition}, 3, 120*time.Second, false)
	for _, s := range p {
		if s.Kind == "" {
			t.Fatalf("partition step without a kind: %+v", s)
		}
	}
}

type errFake string

func (e errFake) Error() string { return string(e) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestScheduleMax(t *testing.T) {
	for _, s := range ScheduleMax(9, []string{Partition, Kill}, 3, 300*time.Second, true, 2*time.Second) {
		if s.Duration > 2*time.Second || s.Duration < 500*time.Millisecond {
			t.Fatalf("a fault of %v with --max-fault 2s", s.Duration)
		}
	}
	if !reflect.DeepEqual(ScheduleMax(9, []string{Kill}, 3, 60*time.Second, true, 0), Schedule(9, []string{Kill}, 3, 60*time.Second, true)) {
		t.Fatal("ScheduleMax with 0 is not Schedule")
	}
}
