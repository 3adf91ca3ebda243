package console

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// lagHistory keeps the consumer lag of every group a principal can see,
// sampled every few seconds, for the lag chart.
type lagHistory struct {
	window time.Duration
	mu     sync.Mutex
	groups map[string][]lagPoint
	ends   map[string][]endPoint // per topic: the sum of its log end offsets
}

// endPoint is one sample of a topic's log end offsets, summed over its
// partitions: records written since the previous sample over the time
// between them is its throughput.
type endPoint struct {
	at  time.Time
	sum int64
}

// rateWindow is how far back the records-per-second figure looks.
const rateWindow = time.Minute

// lagPoint is one sample of a group: total lag and lag per partition
// ("topic/partition"); -1 where it is unknown.
type lagPoint struct {
	at    time.Time
	total int64
	parts map[string]int64
}

func newLagHistory(window time.Duration) *lagHistory {
	return &lagHistory{window: window, groups: map[string][]lagPoint{}, ends: map[string][]endPoint{}}
}

func (h *lagHistory) sample(ctx context.Context, adm *kadm.Client, now time.Time) {
	h.sampleEnds(ctx, adm, now)
	listed, err := adm.ListGroups(ctx)
	if err != nil || len(listed) == 0 {
		h.trim(now, nil)
		return
	}
	lags, err := adm.Lag(ctx, listed.Groups()...)
	if err != nil && len(lags) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for g, l := range lags {
		if l.DescribeErr != nil || l.FetchErr != nil {
			continue
		}
		pt := lagPoint{at: now, total: l.Lag.Total(), parts: map[string]int64{}}
		for _, m := range l.Lag.Sorted() {
			pt.parts[m.Topic+"/"+strconv.Itoa(int(m.Partition))] = m.Lag
		}
		h.groups[g] = append(h.groups[g], pt)
	}
	h.trimLocked(now, listed)
}

func (h *lagHistory) trim(now time.Time, listed kadm.ListedGroups) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trimLocked(now, listed)
}

func (h *lagHistory) trimLocked(now time.Time, listed kadm.ListedGroups) {
	for g, pts := range h.groups {
		if _, ok := listed[g]; !ok {
			delete(h.groups, g)
			continue
		}
		i := 0
		for i < len(pts) && now.Sub(pts[i].at) > h.window {
			i++
		}
		h.groups[g] = append([]lagPoint(nil), pts[i:]...)
	}
}

func (h *lagHistory) points(group string) []lagPoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]lagPoint(nil), h.groups[group]...)
}

// chart is an inline SVG line chart, laid out here and drawn by the
// template.
type chart struct {
	Width, Height int
	Left, Bottom  int // plot area: x from Left, y up to Bottom
	Lines         []chartLine
	YTicks        []chartTick
	XTicks        []chartTick
	Empty         bool
	Samples       int
}

type chartLine struct {
	Label, Points, Color string
	Last                 int64
}

type chartTick struct {
	Pos   int
	Label string
}

var palette = []string{"#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"}

// lagChart lays out the total lag of pts and, for up to 7 partitions, the
// lag of each.
func lagChart(pts []lagPoint, window time.Duration, now time.Time) chart {
	c := chart{Width: 720, Height: 220, Left: 60, Bottom: 190, Samples: len(pts)}
	if len(pts) == 0 {
		c.Empty = true
		return c
	}
	right, top := c.Width-10, 10
	var maxLag int64 = 1
	keys := map[string]bool{}
	for _, p := range pts {
		maxLag = max(maxLag, p.total)
		for k := range p.parts {
			keys[k] = true
		}
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) > 7 || len(names) == 1 {
		names = nil // the total says it all
	}
	// The x axis spans the history there is (at least a minute), up to
	// the window.
	span := min(window, max(time.Minute, now.Sub(pts[0].at)))
	start := now.Add(-span)
	x := func(t time.Time) int {
		f := float64(t.Sub(start)) / float64(span)
		return c.Left + int(f*float64(right-c.Left))
	}
	y := func(v int64) int {
		if v < 0 {
			v = 0
		}
		return c.Bottom - int(float64(v)/float64(maxLag)*float64(c.Bottom-top))
	}
	line := func(label, color string, get func(lagPoint) (int64, bool)) chartLine {
		var b strings.Builder
		l := chartLine{Label: label, Color: color}
		for _, p := range pts {
			v, ok := get(p)
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "%d,%d ", x(p.at), y(v))
			l.Last = v
		}
		l.Points = strings.TrimSpace(b.String())
		return l
	}
	c.Lines = append(c.Lines, line("total", palette[0], func(p lagPoint) (int64, bool) { return p.total, true }))
	for i, n := range names {
		c.Lines = append(c.Lines, line(n, palette[(i+1)%len(palette)], func(p lagPoint) (int64, bool) {
			v, ok := p.parts[n]
			return v, ok
		}))
	}
	for i := 0; i <= 4; i++ {
		v := maxLag * int64(i) / 4
		c.YTicks = append(c.YTicks, chartTick{Pos: y(v), Label: strconv.FormatInt(v, 10)})
	}
	for i := 5; i >= 0; i-- {
		back := span * time.Duration(i) / 5
		label := "now"
		switch {
		case back == 0:
		case span < 5*time.Minute:
			label = fmt.Sprintf("-%ds", int(back.Round(time.Second)/time.Second))
		default:
			label = fmt.Sprintf("-%dm", int(back.Round(time.Minute)/time.Minute))
		}
		c.XTicks = append(c.XTicks, chartTick{Pos: x(now.Add(-back)), Label: label})
	}
	return c
}

func (h *lagHistory) sampleEnds(ctx context.Context, adm *kadm.Client, now time.Time) {
	ends, err := adm.ListEndOffsets(ctx)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for t, ps := range ends {
		var sum int64
		ok := true
		for _, o := range ps {
			if o.Err != nil {
				ok = false
				break
			}
			sum += o.Offset
		}
		if !ok {
			continue
		}
		pts := append(h.ends[t], endPoint{at: now, sum: sum})
		i := 0
		for i < len(pts)-1 && now.Sub(pts[i].at) > rateWindow {
			i++
		}
		h.ends[t] = append([]endPoint(nil), pts[i:]...)
	}
	for t := range h.ends {
		if _, ok := ends[t]; !ok {
			delete(h.ends, t)
		}
	}
}

// rate is topic's records per second over the last minute, and whether
// there are two samples to tell.
func (h *lagHistory) rate(topic string) (float64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	pts := h.ends[topic]
	if len(pts) < 2 {
		return 0, false
	}
	first, last := pts[0], pts[len(pts)-1]
	secs := last.at.Sub(first.at).Seconds()
	if secs <= 0 {
		return 0, false
	}
	return max(0, float64(last.sum-first.sum)/secs), true
}
