package sim

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"
)

// series names and colours of the chart, in drawing order.
var chartSeries = []struct {
	name, color string
	value       func(Sample) int
}{
	{"active", "#2563eb", func(s Sample) int { return s.Active }},
	{"backoff", "#f59e0b", func(s Sample) int { return s.Backoff }},
	{"unschedulable", "#dc2626", func(s Sample) int { return s.Unschedulable }},
	{"gated", "#7c3aed", func(s Sample) int { return s.Gated }},
	{"in flight", "#059669", func(s Sample) int { return s.InFlight }},
}

type chartLine struct {
	Name, Color, Points string
	Peak                int
}

type chart struct {
	Width, Height, Left, Bottom int
	Lines                       []chartLine
	XTicks, YTicks              []tick
}

type tick struct {
	Pos   float64
	Label string
}

// buildChart draws each sub-queue's size over virtual time. Each of at
// most 600 columns shows the largest value in its slice of time, so that
// short peaks stay visible.
func buildChart(series []Sample, end time.Duration) chart {
	c := chart{Width: 960, Height: 320, Left: 56, Bottom: 28}
	plotW, plotH := float64(c.Width-c.Left-12), float64(c.Height-c.Bottom-12)
	if end <= 0 {
		end = time.Second
	}
	const cols = 600
	maxY := 1
	for _, s := range series {
		for _, cs := range chartSeries {
			maxY = max(maxY, cs.value(s))
		}
	}
	x := func(t time.Duration) float64 { return float64(c.Left) + plotW*float64(t)/float64(end) }
	y := func(v int) float64 { return 12 + plotH*(1-float64(v)/float64(maxY)) }
	for _, cs := range chartSeries {
		peak := 0
		bucket := make([]int, cols)
		for i := range bucket {
			bucket[i] = -1
		}
		// A sample holds until the next one: spread it over its columns.
		for i, s := range series {
			next := end
			if i+1 < len(series) {
				next = series[i+1].T
			}
			v := cs.value(s)
			peak = max(peak, v)
			from := min(cols-1, int(float64(cols)*float64(s.T)/float64(end)))
			to := min(cols-1, int(float64(cols)*float64(next)/float64(end)))
			for b := from; b <= to; b++ {
				bucket[b] = max(bucket[b], v)
			}
		}
		var pts strings.Builder
		for b, v := range bucket {
			if v < 0 {
				continue
			}
			t := time.Duration(float64(end) * float64(b) / cols)
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(t), y(v))
		}
		c.Lines = append(c.Lines, chartLine{Name: cs.name, Color: cs.color, Points: strings.TrimSpace(pts.String()), Peak: peak})
	}
	for i := 0; i <= 5; i++ {
		t := end * time.Duration(i) / 5
		c.XTicks = append(c.XTicks, tick{x(t), t.Round(time.Second).String()})
		v := maxY * i / 5
		c.YTicks = append(c.YTicks, tick{y(v), fmt.Sprint(v)})
	}
	return c
}

var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>schedq simulation: {{.R.Scenario}}</title>
<style>
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1000px;color:#111}
h1{font-size:1.4rem} h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse} td,th{padding:.2rem .8rem;border-bottom:1px solid #ddd;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.legend span{display:inline-block;margin-right:1.2rem} .legend i{display:inline-block;width:1rem;height:.25rem;vertical-align:middle;margin-right:.3rem}
svg text{font-size:11px;fill:#555}
</style></head><body>
<h1>schedq simulation: {{.R.Scenario}} <small>(seed {{.R.Seed}})</small></h1>
<p id="headline">{{.R.Scheduled}} of {{.R.Pods}} pods scheduled, {{.R.Pending}} pending; {{.R.Attempts}} attempts ({{.R.WastedAttempts}} wasted); {{printf "%.1f" .R.PodsPerSecond}} pods/s of virtual time.</p>
<h2>Sub-queue sizes over virtual time</h2>
<div class="legend">{{range .C.Lines}}<span><i style="background:{{.Color}}"></i>{{.Name}} (peak {{.Peak}})</span>{{end}}</div>
<svg id="chart" xmlns="http://www.w3.org/2000/svg" width="{{.C.Width}}" height="{{.C.Height}}" viewBox="0 0 {{.C.Width}} {{.C.Height}}" role="img" aria-label="sub-queue sizes over virtual time">
<rect x="{{.C.Left}}" y="12" width="{{.PlotW}}" height="{{.PlotH}}" fill="#fafafa" stroke="#ccc"/>
{{range .C.YTicks}}<line x1="{{$.C.Left}}" x2="{{$.Right}}" y1="{{.Pos}}" y2="{{.Pos}}" stroke="#eee"/><text x="{{$.YLabelX}}" y="{{.Pos}}" text-anchor="end" dominant-baseline="middle">{{.Label}}</text>{{end}}
{{range .C.XTicks}}<text x="{{.Pos}}" y="{{$.XLabelY}}" text-anchor="middle">{{.Label}}</text>{{end}}
{{range .C.Lines}}<polyline class="series" data-series="{{.Name}}" fill="none" stroke="{{.Color}}" stroke-width="1.6" points="{{.Points}}"><title>{{.Name}}</title></polyline>{{end}}
</svg>
<h2>Summary</h2>
<table id="summary">
<tr><th>pods</th><td class="n">{{.R.Pods}}</td></tr>
<tr><th>scheduled</th><td class="n">{{.R.Scheduled}}</td></tr>
<tr><th>pending</th><td class="n">{{.R.Pending}}</td></tr>
<tr><th>attempts</th><td class="n">{{.R.Attempts}}</td></tr>
<tr><th>wasted attempts</th><td class="n">{{.R.WastedAttempts}}</td></tr>
<tr><th>time to schedule p50 / p90 / p99</th><td class="n">{{.P50}} / {{.P90}} / {{.P99}}</td></tr>
<tr><th>throughput (virtual)</th><td class="n">{{printf "%.1f" .R.PodsPerSecond}} pods/s</td></tr>
<tr><th>peak active / backoff / unschedulable / gated</th><td class="n">{{.R.Peak.Active}} / {{.R.Peak.Backoff}} / {{.R.Peak.Unschedulable}} / {{.R.Peak.Gated}}</td></tr>
</table>
{{if .R.PendingReasons}}<h2>Why pods are still pending</h2><table>{{range .R.PendingReasons}}<tr><td class="n">{{.Count}}</td><td>{{.Label}}</td></tr>{{end}}</table>{{end}}
{{if .R.ByPriority}}<h2>By priority</h2><table><tr><th>priority</th><th>scheduled</th><th>pods</th></tr>{{range .R.ByPriority}}<tr><td class="n">{{.Priority}}</td><td class="n">{{.Scheduled}}</td><td class="n">{{.Pods}}</td></tr>{{end}}</table>{{end}}
<h2>Attempts per pod</h2><table>{{range .R.AttemptsPerPod}}<tr><td>{{.Label}}</td><td class="n">{{.Count}}</td></tr>{{end}}</table>
<h2>Incoming (scheduler_queue_incoming_pods_total)</h2><table><tr><th>queue</th><th>event</th><th>count</th></tr>{{range .R.Incoming}}<tr><td>{{.Queue}}</td><td>{{.Event}}</td><td class="n">{{.Count}}</td></tr>{{end}}</table>
<h2>Settings</h2><pre>{{.Text}}</pre>
</body></html>
`))

// WriteHTML writes a self-contained page: each sub-queue's size over
// virtual time as an SVG chart, and the summary. No script, no network.
func (r *Report) WriteHTML(w io.Writer) error {
	var end time.Duration
	if n := len(r.Series); n > 0 {
		end = r.Series[n-1].T
	}
	c := buildChart(r.Series, end)
	var text bytes.Buffer
	r.WriteText(&text, false)
	t := r.TimeToSchedule
	return page.Execute(w, map[string]any{
		"R": r, "C": c, "Text": text.String(),
		"PlotW": c.Width - c.Left - 12, "PlotH": c.Height - c.Bottom - 12,
		"Right": c.Width - 12, "YLabelX": c.Left - 6, "XLabelY": c.Height - 8,
		"P50": secs(t.P50), "P90": secs(t.P90), "P99": secs(t.P99),
	})
}
