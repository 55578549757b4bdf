package sim

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// svgChart is one SVG plot: axes, lines and event markers. Every chart of
// the page shares its layout.
type svgChart struct {
	ID, Label             string
	Width, Height         int
	Left, Top, PW, PH     float64 // the plot area
	XTicks, YTicks        []tick
	Lines                 []svgLine
	Markers               []svgMarker
	Note                  string // a line of text in the plot's top left corner
	XLabelY, YLabelX, Bot float64
}

type svgLine struct {
	Series, Run, Color, Dash, Points string
}

type svgMarker struct {
	X     float64
	Label string // the marker's number, or empty in small panels
}

// pageRun is one run on the page: its report and how its lines are drawn.
type pageRun struct {
	Label string
	R     *Report
	Dash  string // "" solid for the first run, dashed for the second
}

const (
	chartW  = 960
	columns = 600 // the time axis's resolution: one value per column
)

func newChart(id, label string, h int) svgChart {
	c := svgChart{ID: id, Label: label, Width: chartW, Height: h, Left: 64, Top: 18}
	c.PW, c.PH = float64(chartW)-c.Left-28, float64(h)-c.Top-26
	c.Bot = c.Top + c.PH
	c.XLabelY, c.YLabelX = c.Bot+16, c.Left-6
	return c
}

func (c *svgChart) x(t time.Duration, w Window) float64 {
	return c.Left + c.PW*w.frac(t)
}

func (c *svgChart) y(v, top float64) float64 { return c.Top + c.PH*(1-v/top) }

// polyline draws one value per column, each at its column's centre.
func (c *svgChart) polyline(vals []int, w Window, top float64) string {
	var b strings.Builder
	for i, v := range vals {
		if v < 0 {
			continue
		}
		t := w.From + time.Duration((float64(i)+0.5)/columns*float64(w.To-w.From))
		fmt.Fprintf(&b, "%.1f,%.1f ", c.x(t, w), c.y(float64(v), top))
	}
	return strings.TrimSpace(b.String())
}

// col is the column that holds virtual time t.
func col(t time.Duration, w Window) int {
	return min(columns-1, max(0, int(float64(columns)*w.frac(t))))
}

// lastCol is the last column in which a level that held from t until
// next (exclusive) shows: the column of next itself only when the level
// held for part of it.
func lastCol(t, next time.Duration, w Window) int {
	if next > t {
		return max(col(t, w), col(next-1, w))
	}
	return col(t, w)
}

// queueColumns spreads one sub-queue's series over the columns: each
// column holds the largest size reached in its slice of time, so that
// short peaks stay visible and the line's peak is the run's exact peak.
func queueColumns(series []Sample, w Window, peak, last func(Sample) int) []int {
	out := emptyColumns()
	eachLevel(len(series), func(i int) time.Duration { return series[i].T }, w, func(i, from, to int) {
		s := series[i]
		if s.T >= w.From {
			out[from] = max(out[from], peak(s))
		} else {
			out[from] = max(out[from], last(s)) // its peak came before the window
		}
		for b := from + 1; b <= to; b++ {
			out[b] = max(out[b], last(s))
		}
	})
	return out
}

// emptyColumns returns columns that hold no value (-1).
func emptyColumns() []int {
	out := make([]int, columns)
	for i := range out {
		out[i] = -1
	}
	return out
}

// eachLevel calls f for each of n levels that shows in window w, with the
// columns it fills: level i holds from at(i) until at(i+1), the last
// until the window's end. O(n).
func eachLevel(n int, at func(int) time.Duration, w Window, f func(i, from, to int)) {
	for i := range n {
		t, next := at(i), w.To
		if i+1 < n {
			next = at(i + 1)
		}
		if next <= w.From && next > t || t > w.To {
			continue // outside the window
		}
		f(i, col(t, w), lastCol(t, next, w))
	}
}

// podLines returns, per column, the pods bound so far (at the column's
// end) and the most pods pending during it, from the records.
func podLines(recs []PodRecord, w Window) (bound, pending []int) {
	type change struct {
		t          float64
		dPend, dOk int
	}
	var ch []change
	for _, r := range recs {
		ch = append(ch, change{r.Created, 1, 0})
		switch {
		case r.Bound:
			ch = append(ch, change{r.BoundAt, -1, 1})
		case r.EndedAt >= 0:
			ch = append(ch, change{r.EndedAt, -1, 0})
		}
	}
	sort.SliceStable(ch, func(i, j int) bool { return ch[i].t < ch[j].t })
	bound, pending = make([]int, columns), make([]int, columns)
	ok, pend, i := 0, 0, 0
	for b := range columns {
		hi := pend
		colEnd := (float64(w.From) + float64(w.To-w.From)*float64(b+1)/columns) / float64(time.Second)
		// The last column takes the rest when the window ends with the run.
		for ; i < len(ch) && (ch[i].t < colEnd || b == columns-1 && (w.whole || ch[i].t <= colEnd)); i++ {
			pend += ch[i].dPend
			ok += ch[i].dOk
			hi = max(hi, pend)
		}
		bound[b], pending[b] = ok, hi
	}
	return bound, pending
}

// addMarkers draws the scenario's events on a chart; numbered says whether
// to number them (the main chart) or not (the small panels).
func (c *svgChart) addMarkers(ms []Marker, w Window, numbered bool) {
	for i, m := range ms {
		if m.T < w.From || m.T > w.To {
			continue
		}
		label := ""
		if numbered {
			label = fmt.Sprint(i + 1)
		}
		c.Markers = append(c.Markers, svgMarker{X: c.x(m.T, w), Label: label})
	}
}

// podsChart draws the pods bound so far and the pods pending, per run.
func podsChart(runs []pageRun, w Window, ms []Marker) svgChart {
	c := newChart("pods-chart", "pods bound so far and pods pending over virtual time", 280)
	cols := make([][2][]int, len(runs))
	hi := 0
	for i, r := range runs {
		b, p := podLines(r.R.Records, w)
		cols[i] = [2][]int{b, p}
		hi = max(hi, slices.Max(b), slices.Max(p))
	}
	step, top := niceMax(hi, 5)
	for i, r := range runs {
		c.Lines = append(c.Lines,
			svgLine{Series: "scheduled", Run: r.Label, Color: "#059669", Dash: r.Dash, Points: c.polyline(cols[i][0], w, float64(top))},
			svgLine{Series: "pending", Run: r.Label, Color: "#dc2626", Dash: r.Dash, Points: c.polyline(cols[i][1], w, float64(top))})
	}
	c.YTicks = countTicks(step, top, func(v float64) float64 { return c.y(v, float64(top)) })
	c.XTicks = timeTicks(w, 8, func(t time.Duration) float64 { return c.x(t, w) }, float64(c.Width))
	c.addMarkers(ms, w, true)
	return c
}

// queuePanel is one small multiple: a sub-queue's size, on its own scale.
type queuePanel struct {
	Name, Color string
	Peaks       []string // each run's exact peak
	Chart       svgChart
}

// queuePanels draws each sub-queue in a panel of its own, so that small
// series (backoff, gated) are as readable as large ones.
func queuePanels(runs []pageRun, w Window, ms []Marker) []queuePanel {
	var out []queuePanel
	for _, cs := range chartSeries {
		c := newChart("panel-"+strings.ReplaceAll(cs.name, " ", "-"), cs.name+" over virtual time", 110)
		p := queuePanel{Name: cs.name, Color: cs.color}
		hi := 0
		cols := make([][]int, len(runs))
		for i, r := range runs {
			peak := cs.value(r.R.Peak)
			p.Peaks = append(p.Peaks, fmt.Sprint(peak))
			hi = max(hi, peak)
			cols[i] = queueColumns(r.R.Series, w, func(s Sample) int { return cs.value(s.Peak) }, func(s Sample) int { return cs.value(s.Counts) })
		}
		_, top := niceMax(hi, 1)
		if hi == 0 {
			c.Note = "empty throughout"
		}
		for i, r := range runs {
			c.Lines = append(c.Lines, svgLine{Series: cs.name, Run: r.Label, Color: cs.color, Dash: r.Dash, Points: c.polyline(cols[i], w, float64(top))})
		}
		c.YTicks = countTicks(top, top, func(v float64) float64 { return c.y(v, float64(top)) })
		c.XTicks = timeTicks(w, 8, func(t time.Duration) float64 { return c.x(t, w) }, float64(c.Width))
		c.addMarkers(ms, w, false)
		p.Chart = c
		out = append(out, p)
	}
	return out
}

// groupColors colour the pod groups of the latency chart.
var groupColors = []string{"#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"}

// groupWaits is one pod group's times to schedule, sorted, and its size.
type groupWaits struct {
	Name  string
	Pods  int
	Waits []float64
}

// waitsByGroup groups the bound pods' waits, groups in order of first
// arrival.
func waitsByGroup(recs []PodRecord) []groupWaits {
	idx := map[string]int{}
	var out []groupWaits
	for _, r := range recs {
		i, ok := idx[r.Group]
		if !ok {
			i = len(out)
			idx[r.Group] = i
			out = append(out, groupWaits{Name: r.Group})
		}
		out[i].Pods++
		if r.Bound {
			out[i].Waits = append(out[i].Waits, r.Wait)
		}
	}
	for i := range out {
		slices.Sort(out[i].Waits)
	}
	return out
}

// cdfChart draws, per pod group and run, the fraction of the group's pods
// bound within a time to schedule (log scale). A curve that ends below 1
// is pods never bound. It draws the largest groups (by pods in the first
// run), at most len(groupColors), and returns how many it left out.
func cdfChart(runs []pageRun) (svgChart, []string, int) {
	c := newChart("cdf", "time to schedule, cumulative, per pod group", 300)
	groups := make([][]groupWaits, len(runs))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, r := range runs {
		groups[i] = waitsByGroup(r.R.Records)
		for _, g := range groups[i] {
			if len(g.Waits) > 0 {
				lo, hi = min(lo, g.Waits[0]), max(hi, g.Waits[len(g.Waits)-1])
			}
		}
	}
	if math.IsInf(lo, 1) {
		c.Note = "no pod was scheduled"
		return c, nil, 0
	}
	elo := int(math.Floor(math.Log10(max(lo, 1e-3))))
	ehi := max(elo+1, int(math.Ceil(math.Log10(max(hi, 1e-3)))))
	x := func(e float64) float64 { return c.Left + c.PW*(e-float64(elo))/float64(ehi-elo) }
	shown := slices.Clone(groups[0])
	sort.SliceStable(shown, func(i, j int) bool { return shown[i].Pods > shown[j].Pods })
	left := max(0, len(shown)-len(groupColors))
	shown = shown[:len(shown)-left]
	var names []string
	for gi, g := range shown {
		names = append(names, g.Name)
		for i, r := range runs {
			for _, w := range groups[i] {
				if w.Name == g.Name {
					c.Lines = append(c.Lines, svgLine{Series: g.Name, Run: r.Label, Color: groupColors[gi], Dash: r.Dash, Points: cdfPoints(&c, w, x)})
				}
			}
		}
	}
	c.XTicks = logTicks(elo, ehi, x)
	for i := 0; i <= 4; i++ {
		v := float64(i) / 4
		c.YTicks = append(c.YTicks, tick{Pos: c.y(v, 1), Label: fmt.Sprintf("%d%%", 25*i), Anchor: "end"})
	}
	return c, names, left
}

// cdfPoints draws one group's curve through at most about 200 of its
// points: at each, the fraction of the group's pods bound within that
// pod's wait; then flat to the right edge.
func cdfPoints(c *svgChart, g groupWaits, x func(float64) float64) string {
	var b strings.Builder
	n := len(g.Waits)
	if n == 0 {
		return ""
	}
	at := func(i int) float64 { return x(math.Log10(max(g.Waits[i], 1e-3))) }
	fmt.Fprintf(&b, "%.1f,%.1f", at(0), c.y(0, 1))
	every := max(1, n/200)
	for j := every - 1; ; j += every {
		j = min(j, n-1)
		fmt.Fprintf(&b, " %.1f,%.1f", at(j), c.y(float64(j+1)/float64(g.Pods), 1))
		if j == n-1 {
			break
		}
	}
	fmt.Fprintf(&b, " %.1f,%.1f", c.Left+c.PW, c.y(float64(n)/float64(g.Pods), 1))
	return b.String()
}

// allocChart draws the allocated fractions of the cluster's CPU, memory
// and (when it has any) GPU over virtual time, per run: each column holds
// the largest fraction in its slice of time.
func allocChart(runs []pageRun, w Window, ms []Marker) svgChart {
	c := newChart("alloc-chart", "allocated fractions of the cluster over virtual time", 200)
	parts := []allocPart{
		{"cpu", "#2563eb", func(a AllocSample) float64 { return a.CPU }},
		{"memory", "#d97706", func(a AllocSample) float64 { return a.Mem }},
		{"gpu", "#7c3aed", func(a AllocSample) float64 { return a.GPU }},
	}
	return fractionChart(c, parts, runs, w, ms)
}

// fragChart draws the GPUs' allocation rate and the paper's
// fragmentation, over the whole GPU capacity and over the unallocated
// capacity, over virtual time, per run.
func fragChart(runs []pageRun, w Window, ms []Marker) svgChart {
	c := newChart("frag-chart", "GPU allocation and fragmentation over virtual time", 200)
	parts := []allocPart{
		{"gpu allocated", "#7c3aed", func(a AllocSample) float64 { return a.GPU }},
		{"gpu fragmented", "#dc2626", func(a AllocSample) float64 { return a.Frag }},
		{"fragmented of unallocated", "#059669", func(a AllocSample) float64 { return a.FragRatio }},
	}
	return fractionChart(c, parts, runs, w, ms)
}

// allocPart is one line of a chart of fractions over virtual time.
type allocPart struct {
	name, color string
	v           func(AllocSample) float64
}

// fractionChart draws parts of the runs' allocation samples, each column
// holding the largest value in its slice of time, on a scale that fits
// the peak.
func fractionChart(c svgChart, parts []allocPart, runs []pageRun, w Window, ms []Marker) svgChart {
	type line struct {
		name, color, run, dash string
		vals                   []int
	}
	var lines []line
	hi := 0
	for _, p := range parts {
		if p.name == "gpu" && (runs[0].R.Allocation == nil || !runs[0].R.Allocation.HasGPU) {
			continue
		}
		for _, r := range runs {
			vals := fractionColumns(r.R.Alloc, w, p.v)
			hi = max(hi, slices.Max(vals))
			lines = append(lines, line{p.name, p.color, r.Label, r.Dash, vals})
		}
	}
	// The scale fits the peak: a cluster 1% allocated is not a flat line.
	step, top := niceMax(hi, 4)
	for _, l := range lines {
		c.Lines = append(c.Lines, svgLine{Series: l.name, Run: l.run, Color: l.color, Dash: l.dash, Points: c.polyline(l.vals, w, float64(top))})
	}
	for v := 0; v <= top; v += step {
		c.YTicks = append(c.YTicks, tick{Pos: c.y(float64(v), float64(top)), Label: fmt.Sprintf("%g%%", float64(v)/10), Anchor: "end"})
	}
	c.XTicks = timeTicks(w, 8, func(t time.Duration) float64 { return c.x(t, w) }, float64(c.Width))
	c.addMarkers(ms, w, false)
	return c
}

// fractionColumns spreads one fraction of the allocation samples over the
// columns, in tenths of a percent: each column holds the largest value
// that held in its slice of time, -1 where none did.
func fractionColumns(alloc []AllocSample, w Window, v func(AllocSample) float64) []int {
	vals := emptyColumns()
	eachLevel(len(alloc), func(i int) time.Duration { return alloc[i].T }, w, func(i, from, to int) {
		x := int(math.Round(1000 * v(alloc[i])))
		for b := from; b <= to; b++ {
			vals[b] = max(vals[b], x)
		}
	})
	return vals
}
