package sim

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/schedq/schedq"
)

// series names and colours of the sub-queue panels, in drawing order.
var chartSeries = []struct {
	name, color string
	value       func(c schedq.Counts) int
}{
	{"active", "#2563eb", func(c schedq.Counts) int { return c.Active }},
	{"backoff", "#f59e0b", func(c schedq.Counts) int { return c.Backoff }},
	{"unschedulable", "#dc2626", func(c schedq.Counts) int { return c.Unschedulable }},
	{"gated", "#7c3aed", func(c schedq.Counts) int { return c.Gated }},
	{"in flight", "#059669", func(c schedq.Counts) int { return c.InFlight }},
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{"rate": rateText}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1000px;color:#111}
h1{font-size:1.4rem} h2{font-size:1.1rem;margin-top:2rem} p.cap{color:#555;font-size:.85rem;margin:.2rem 0 .6rem}
table{border-collapse:collapse} td,th{padding:.2rem .8rem;border-bottom:1px solid #ddd;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.legend span{display:inline-block;margin-right:1.2rem;font-size:.9rem} .legend i{display:inline-block;width:1.4rem;height:0;border-top:3px solid;vertical-align:middle;margin-right:.3rem}
.legend i.dash{border-top-style:dashed}
.panel .ptitle{font-size:.85rem;margin:.4rem 0 0 64px} .panel .ptitle i{display:inline-block;width:.8rem;height:.8rem;vertical-align:middle;margin-right:.3rem}
ol#markers{columns:2;font-size:.85rem;color:#333} ol#markers b{font-variant-numeric:tabular-nums}
pre{white-space:pre-wrap;font-size:.8rem}
svg text{font-size:11px;fill:#555} svg text.mk{fill:#444;font-weight:600}
</style></head><body>
<h1 id="title">{{.Title}}</h1>
{{range .Runs}}<p class="headline" data-run="{{.Label}}">{{if $.Compare}}<b>{{.Label}}:</b> {{end}}{{.R.Scheduled}} of {{.R.Pods}} pods scheduled, {{.R.Pending}} pending; {{.R.Attempts}} attempts ({{.R.WastedAttempts}} wasted); {{rate .R.PodsPerSecond}} pods/s of virtual time.</p>
{{end}}
<h2>Pods over virtual time</h2>
{{if .Window}}<p class="cap" id="window">{{.Window}}</p>{{end}}
<div class="legend"><span><i style="border-color:#059669"></i>scheduled so far</span><span><i style="border-color:#dc2626"></i>pending</span>{{template "runs" .}}{{if .Markers}}<span>numbered lines: scenario events, listed below</span>{{end}}</div>
{{template "chart" .Pods}}
{{if .Markers}}<ol id="markers">{{range .Markers}}<li data-t="{{.T}}"><b>{{.At}}</b> {{.Label}}</li>{{end}}</ol>{{end}}
{{if .ShowAlloc}}<h2>Cluster allocation over virtual time</h2>
<div class="legend"><span><i style="border-color:#2563eb"></i>cpu</span><span><i style="border-color:#d97706"></i>memory</span>{{if .Base.Allocation.HasGPU}}<span><i style="border-color:#7c3aed"></i>gpu</span>{{end}}{{template "runs" .}}</div>
{{template "chart" .Alloc}}{{end}}
{{if .ShowFrag}}<h2>GPU fragmentation over virtual time</h2>
<p class="cap">Fragmented: the free GPU capacity that the pod list's typical pod could not use (the GPU-sharing paper's measure), over all GPUs and over the unallocated ones.</p>
<div class="legend"><span><i style="border-color:#7c3aed"></i>gpu allocated</span><span><i style="border-color:#dc2626"></i>gpu fragmented</span><span><i style="border-color:#059669"></i>fragmented of unallocated</span>{{template "runs" .}}</div>
{{template "chart" .Frag}}
<h2>GPU fragmentation against arrived GPU demand</h2>
<p class="cap">The same measures against the GPU requests of every pod arrived so far (bound, pending or gone), as a share of the GPU capacity: the GPU-sharing paper's horizontal axis. Pods that left still count as arrived.</p>
{{template "chart" .FragDemand}}{{end}}
<h2>Sub-queue sizes over virtual time</h2>
<p class="cap">One panel per place, each on its own scale. Each column shows the largest size in its slice of time; the peaks are the run's exact peaks.</p>
<div id="queue-panels">{{range .Panels}}{{$pn := .Name}}<div class="panel" data-panel="{{.Name}}"><div class="ptitle"><i style="background:{{.Color}}"></i>{{.Name}}: peak {{range $i, $p := .Peaks}}{{if $i}} / {{end}}<span class="peak" data-series="{{$pn}}" data-run="{{index $.RunNamesList $i}}">{{$p}}</span>{{end}}{{if $.Compare}} ({{$.RunNames}}; the second dashed){{end}}</div>
{{template "chart" .Chart}}</div>
{{end}}</div>
<h2>Time to schedule, per pod group</h2>
<p class="cap">The fraction of each group's pods bound within a time from their creation (log scale). A curve that ends below 100% has pods that were never bound.{{if .GroupsLeft}} {{.GroupsLeft}} smaller groups are not drawn.{{end}}</p>
<div class="legend" id="groups">{{range $i, $g := .Groups}}<span data-group="{{$g}}"><i style="border-color:{{index $.GroupColors $i}}"></i>{{$g}}</span>{{end}}{{template "runs" .}}</div>
{{template "chart" .CDF}}
{{if .GroupRows}}<table id="groups-table"><tr><th>group</th>{{range .GroupHead}}<th class="n">{{.}}</th>{{end}}</tr>{{range .GroupRows}}<tr><td>{{.Name}}</td>{{range .Vals}}<td class="n">{{.}}</td>{{end}}</tr>{{end}}</table>{{end}}
<h2>Summary</h2>
<table id="summary"><tr><th></th>{{range .Runs}}<th class="n">{{.Label}}</th>{{end}}{{if .Compare}}<th class="n">delta</th>{{end}}</tr>
{{range .Summary}}<tr><th>{{.Name}}</th>{{range .Vals}}<td class="n">{{.}}</td>{{end}}{{if $.Compare}}<td class="n delta">{{.Delta}}</td>{{end}}</tr>
{{end}}</table>
{{if not .Compare}}{{with .Base}}
{{if .PendingReasons}}<h2>Why pods are still pending</h2><table>{{range .PendingReasons}}<tr><td class="n">{{.Count}}</td><td>{{.Label}}</td></tr>{{end}}</table>{{end}}
{{if .ByPriority}}<h2>By priority</h2><table><tr><th>priority</th><th>scheduled</th><th>pods</th></tr>{{range .ByPriority}}<tr><td class="n">{{.Priority}}</td><td class="n">{{.Scheduled}}</td><td class="n">{{.Pods}}</td></tr>{{end}}</table>{{end}}
<h2>Attempts per pod</h2><table>{{range .AttemptsPerPod}}<tr><td>{{.Label}}</td><td class="n">{{.Count}}</td></tr>{{end}}</table>
<h2>Incoming (scheduler_queue_incoming_pods_total)</h2><table><tr><th>queue</th><th>event</th><th>count</th></tr>{{range .Incoming}}<tr><td>{{.Queue}}</td><td>{{.Event}}</td><td class="n">{{.Count}}</td></tr>{{end}}</table>
{{end}}{{end}}
<h2>Text report{{if .Compare}}s{{end}}</h2>{{range $i, $t := .Texts}}<pre data-run="{{index $.RunNamesList $i}}">{{$t}}</pre>{{end}}
</body></html>
{{define "runs"}}{{if .Compare}}{{range .Runs}}<span class="run"><i class="{{if .Dash}}dash{{end}}" style="border-color:#333"></i>{{.Label}}</span>{{end}}{{end}}{{end}}
{{define "chart"}}<svg id="{{.ID}}" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="{{.Label}}">
<rect x="{{.Left}}" y="{{.Top}}" width="{{.PW}}" height="{{.PH}}" fill="#fafafa" stroke="#ccc"/>
{{$c := .}}{{range .YTicks}}<line x1="{{$c.Left}}" x2="{{$c.Left}}" y1="{{.Pos}}" y2="{{.Pos}}" stroke="#eee"/><line class="grid" x1="{{$c.Left}}" x2="{{printf "%.1f" ($c.Right)}}" y1="{{.Pos}}" y2="{{.Pos}}" stroke="#eee"/><text class="ytick" x="{{$c.YLabelX}}" y="{{.Pos}}" text-anchor="{{.Anchor}}" dominant-baseline="middle">{{.Label}}</text>{{end}}
{{range .XTicks}}<line x1="{{.Pos}}" x2="{{.Pos}}" y1="{{$c.Bot}}" y2="{{printf "%.1f" ($c.TickEnd)}}" stroke="#999"/><text class="xtick" x="{{.Pos}}" y="{{$c.XLabelY}}" text-anchor="{{.Anchor}}">{{.Label}}</text>{{end}}
{{range .Markers}}<line class="marker" x1="{{.X}}" x2="{{.X}}" y1="{{$c.Top}}" y2="{{$c.Bot}}" stroke="#9ca3af" stroke-dasharray="3 3"/>{{if .Label}}<text class="mk" x="{{.X}}" y="{{printf "%.1f" ($c.MarkY)}}" text-anchor="middle">{{.Label}}</text>{{end}}{{end}}
{{range .Lines}}<polyline class="series" data-series="{{.Series}}" data-run="{{.Run}}" fill="none" stroke="{{.Color}}" stroke-width="1.6"{{if .Dash}} stroke-dasharray="{{.Dash}}"{{end}} points="{{.Points}}"><title>{{.Series}} ({{.Run}})</title></polyline>{{end}}
{{if .Note}}<text x="{{printf "%.1f" ($c.NoteX)}}" y="{{printf "%.1f" ($c.NoteY)}}">{{.Note}}</text>{{end}}
</svg>{{end}}
`))

// Right, TickEnd, MarkY, NoteX and NoteY place the chart's furniture.
func (c svgChart) Right() float64   { return c.Left + c.PW }
func (c svgChart) TickEnd() float64 { return c.Bot + 4 }
func (c svgChart) MarkY() float64   { return c.Top - 5 }
func (c svgChart) NoteX() float64   { return c.Left + 8 }
func (c svgChart) NoteY() float64   { return c.Top + 14 }

// markerView is a marker as the page lists it.
type markerView struct {
	T     time.Duration
	At    string
	Label string
}

// pageData is what the page template reads.
type pageData struct {
	Title        string
	Window       string // the window of the charts over time, if not the whole run
	Compare      bool
	Runs         []pageRun
	Base         *Report
	Pods, CDF    svgChart
	Alloc        svgChart
	ShowAlloc    bool
	Frag         svgChart
	ShowFrag     bool
	FragDemand   svgChart
	Panels       []queuePanel
	Markers      []markerView
	Groups       []string
	GroupColors  []string
	GroupsLeft   int
	GroupHead    []string
	GroupRows    []groupRow
	Summary      []summaryRow
	Texts        []string
	RunNames     string
	RunNamesList []string
}

// Window is the span of virtual time that the page's charts over time
// show: From to To, with To zero meaning the run's end. The zero Window
// is the whole run.
type Window struct {
	From, To time.Duration
	whole    bool          // To is the run's end
	asked    time.Duration // the end asked, if past the run's end
}

// frac is where t falls in the window, from 0 to 1.
func (w Window) frac(t time.Duration) float64 {
	return float64(t-w.From) / float64(w.To-w.From)
}

// ErrWindow: the window does not fit the run.
var ErrWindow = errors.New("window")

// String gives the window as asked: an unset end (0) is the run's end.
func (w Window) String() string {
	if w.To == 0 {
		return fmt.Sprintf("%v to the run's end", w.From)
	}
	return fmt.Sprintf("%v to %v", w.From, w.To)
}

// resolve fits the window to a run that ended at end.
func (w Window) resolve(end time.Duration) (Window, error) {
	if w.From < 0 || w.To < 0 || w.To != 0 && w.To <= w.From {
		return w, fmt.Errorf("%w %v: must start at 0 or later and end after it starts", ErrWindow, w)
	}
	if w.From >= end {
		return w, fmt.Errorf("%w %v: starts after the run's end (%v of virtual time)", ErrWindow, w, end)
	}
	if w.To > end {
		w.asked = w.To
	}
	if w.To == 0 || w.To >= end {
		w.To, w.whole = end, true
	}
	return w, nil
}

// WriteHTML writes a self-contained page: the pods bound and pending over
// virtual time with the scenario's events, each sub-queue's size in a
// panel of its own, the time to schedule per pod group, and the summary.
// No script, no network.
func (r *Report) WriteHTML(w io.Writer) error {
	return r.WriteHTMLWindow(w, Window{})
}

// WriteHTMLWindow writes the page of WriteHTML with its charts over time
// showing only the window win of virtual time.
func (r *Report) WriteHTMLWindow(w io.Writer, win Window) error {
	return writePage(w, "schedq simulation: "+r.Scenario, []pageRun{{Label: "run", R: r}}, win)
}

// WriteComparisonHTML writes one page for two runs of a scenario: both
// runs on every chart (the second dashed), and the summary with a delta
// column (b − a); its charts over time show the window win (the zero
// Window: the whole runs).
func WriteComparisonHTML(w io.Writer, a, b *Report, labelA, labelB string, win Window) error {
	title := "schedq simulation: " + a.Scenario + ": " + labelA + " vs " + labelB
	return writePage(w, title, []pageRun{{Label: labelA, R: a}, {Label: labelB, R: b, Dash: "6 4"}}, win)
}

func writePage(w io.Writer, title string, runs []pageRun, win Window) error {
	var end time.Duration
	for _, r := range runs {
		end = max(end, r.R.end())
	}
	if end <= 0 {
		end = time.Second
	}
	win, err := win.resolve(end)
	if err != nil {
		return err
	}
	d := &pageData{Title: title, Compare: len(runs) > 1, Runs: runs, Base: runs[0].R, GroupColors: groupColors}
	if !win.whole || win.From > 0 || win.asked > 0 {
		d.Window = fmt.Sprintf("The charts over virtual time show %s to %s of a run of %s.", fmtDur(win.From), fmtDur(win.To), fmtDur(end))
	}
	if win.asked > 0 {
		d.Window += fmt.Sprintf(" The window asked ends at %s, after the run ended.", fmtDur(win.asked))
	}
	ms := runs[0].R.Markers
	d.Pods = podsChart(runs, win, ms)
	d.Panels = queuePanels(runs, win, ms)
	if r := runs[0].R; r.showAlloc && r.Allocation != nil {
		d.ShowAlloc, d.Alloc = true, allocChart(runs, win, ms)
		if r.Allocation.Frag != nil {
			d.ShowFrag, d.Frag, d.FragDemand = true, fragChart(runs, win, ms), fragDemandChart(runs)
		}
	}
	d.CDF, d.Groups, d.GroupsLeft = cdfChart(runs)
	for _, m := range ms {
		d.Markers = append(d.Markers, markerView{T: m.T, At: fmtDur(m.T), Label: m.Label})
	}
	for i, r := range runs {
		if i > 0 {
			d.RunNames += " / "
		}
		d.RunNames += r.Label
		d.RunNamesList = append(d.RunNamesList, r.Label)
		var text bytes.Buffer
		r.R.WriteText(&text, false)
		d.Texts = append(d.Texts, text.String())
	}
	d.GroupHead, d.GroupRows = groupTable(runs, d.Groups)
	d.Summary = summaryRows(runs)
	return page.Execute(w, d)
}

// end is the virtual time the run's charts span: the run's length, or
// its last sample or last record's event if later.
func (r *Report) end() time.Duration {
	end := time.Duration(r.RunSeconds * float64(time.Second))
	if n := len(r.Series); n > 0 {
		end = max(end, r.Series[n-1].T)
	}
	for _, rec := range r.Records {
		end = max(end, time.Duration(max(rec.Created, rec.BoundAt, rec.EndedAt)*float64(time.Second)))
	}
	return end
}
