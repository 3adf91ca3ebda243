package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// chartRow is one workload's Sluice-vs-others ratios (> 1 = Sluice better).
type chartRow struct {
	label  string
	vals   map[string]float64
	target float64 // the threshold vs Kafka, 0 for none
}

var chartColors = map[string]string{"kafka": "#3b6fb6", "kfake": "#e08a2c"}

// chartSVG draws a diverging bar chart on a log2 axis: for each workload,
// one bar per other target, starting at 1× and growing right when Sluice is
// better, left when it is worse. It needs nothing but the standard library.
func chartSVG(rep *report) string {
	var rows []chartRow
	for _, w := range rep.Workloads {
		r := chartRow{label: w.Name, vals: map[string]float64{}}
		for _, rt := range w.Ratios {
			if rt.MedianOfPairs > 0 {
				r.vals[rt.Versus] = rt.MedianOfPairs
			}
		}
		switch w.Kind {
		case "produce":
			r.target = 2
		case "consume", "fetch":
			r.target = 1.5
		case "latency":
			r.label += " (p99, lower is better)"
			r.target = 1
		}
		rows = append(rows, r)
	}
	if s, ok := rep.Targets["sluice"]; ok && s.PeakRSSBytes > 0 {
		r := chartRow{label: "peak RSS over the run (lower is better)", vals: map[string]float64{}, target: 4}
		for _, t := range []string{"kafka", "kfake"} {
			if o, ok := rep.Targets[t]; ok && o.PeakRSSBytes > 0 {
				r.vals[t] = float64(o.PeakRSSBytes) / float64(s.PeakRSSBytes)
			}
		}
		rows = append(rows, r)
	}

	lo, hi := 0.25, 4.0
	for _, r := range rows {
		for _, v := range r.vals {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	// Headroom for the value labels beside the longest bars.
	lo = math.Max(math.Pow(2, math.Floor(math.Log2(lo*0.7))), 1.0/256)
	hi = math.Min(math.Pow(2, math.Ceil(math.Log2(hi*1.6))), 256)

	const (
		width, labelW, right = 980.0, 360.0, 30.0
		top, rowH, barH      = 70.0, 34.0, 12.0
	)
	plotW := width - labelW - right
	height := top + rowH*float64(len(rows)) + 60
	x := func(v float64) float64 {
		v = math.Min(math.Max(v, lo), hi)
		return labelW + (math.Log2(v)-math.Log2(lo))/(math.Log2(hi)-math.Log2(lo))*plotW
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="15" font-weight="bold">Sluice vs Apache Kafka %s and kfake — how many times better (log scale)</text>`+"\n", 10.0, html.EscapeString(rep.Meta.KafkaVersion))
	fmt.Fprintf(&b, `<text x="10" y="40" fill="#555">%s mode, %s, %d × %s, load avg at start %s. Bars right of 1× = Sluice better; | = issue #7 target.</text>`+"\n",
		html.EscapeString(rep.Meta.Mode), html.EscapeString(rep.Meta.Started), rep.Meta.CPUs, html.EscapeString(rep.Meta.CPUModel), html.EscapeString(rep.Meta.LoadStart))
	// Grid: one line per power of two.
	for v := lo; v <= hi*1.0001; v *= 2 {
		stroke, dash := "#ddd", ""
		if v == 1 {
			stroke = "#333"
		} else {
			dash = ` stroke-dasharray="3,3"`
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="%s"%s/>`+"\n", x(v), top-8, x(v), top+rowH*float64(len(rows)), stroke, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle" fill="#555">%s×</text>`+"\n", x(v), top+rowH*float64(len(rows))+16, fmtFactor(v))
	}
	for i, r := range rows {
		y := top + rowH*float64(i)
		if i%2 == 0 {
			fmt.Fprintf(&b, `<rect x="0" y="%.0f" width="%.0f" height="%.0f" fill="#f6f6f6" opacity="0.6"/>`+"\n", y, labelW-4, rowH)
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", labelW-8, y+rowH/2+4, html.EscapeString(r.label))
		for j, t := range []string{"kafka", "kfake"} {
			v, ok := r.vals[t]
			if !ok {
				continue
			}
			by := y + 4 + float64(j)*(barH+2)
			x0, x1 := x(1), x(v)
			if x1 < x0 {
				x0, x1 = x1, x0
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s"><title>%s vs %s: %.2f×</title></rect>`+"\n",
				x0, by, math.Max(x1-x0, 1), barH, chartColors[t], html.EscapeString(r.label), t, v)
			tx, anchor := x(v)+4, "start"
			if v < 1 {
				tx, anchor = x(v)-4, "end"
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s" font-size="10">%.2f×</text>`+"\n", tx, by+barH-2, anchor, v)
		}
		if r.target > 0 && r.vals["kafka"] > 0 {
			tx := x(r.target)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#c00" stroke-width="2"/>`+"\n", tx, y+2, tx, y+4+barH+1)
		}
	}
	ly := top + rowH*float64(len(rows)) + 38
	for j, t := range []string{"kafka", "kfake"} {
		lx := labelW + float64(j)*200
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="14" height="10" fill="%s"/><text x="%.0f" y="%.0f">vs %s</text>`+"\n", lx, ly-9, chartColors[t], lx+20, ly, map[string]string{"kafka": "Apache Kafka", "kfake": "kfake (in-memory)"}[t])
	}
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#c00" stroke-width="2"/><text x="%.0f" y="%.0f">target vs Kafka</text>`+"\n", labelW+400, ly-10, labelW+400, ly+1, labelW+406, ly)
	b.WriteString("</svg>\n")
	return b.String()
}

func fmtFactor(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%g", v)
	}
	return fmt.Sprintf("1/%g", 1/v)
}
