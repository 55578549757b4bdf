package sim

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedq/schedq"
)

const pageScenario = `
name: page
seed: 3
duration: 2m
nodes: [{name: n, count: 2, capacity: {cpu: "4", memory: 8Gi}}]
pods:
  - {name: web, count: 40, requests: {cpu: "500m", memory: 256Mi}, arrival: {rate: 10}, lifetime: {mean: 30s}}
  - {name: held, count: 5, requests: {cpu: "100m"}, schedulingGates: [wait], arrival: {at: 1s}}
events:
  - {at: 20s, addNodes: {name: more, count: 2, capacity: {cpu: "4", memory: 8Gi}}}
  - {at: 20s, removeGates: {group: held}}
  - {at: 40s, removeNodes: {group: n, count: 1}}
`

func render(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The page carries the new elements, its peaks are the run's exact peaks
// (those of the text report, and the largest the series holds), and its
// event markers are the scenario's events, one per instant.
func TestPageElements(t *testing.T) {
	r := run(t, parse(t, pageScenario))
	html := render(t, r)
	if render(t, run(t, parse(t, pageScenario))) != html {
		t.Fatal("two runs of one seed wrote different pages")
	}
	for _, want := range []string{`id="pods-chart"`, `data-series="scheduled"`, `data-series="pending"`, `id="cdf"`,
		`data-group="web"`, `data-group="held"`, `id="alloc-chart"`, `data-series="cpu"`, `id="groups-table"`, `id="markers"`,
		`&#43;2 nodes (more); remove the gates of all pods of held`, `−1 nodes of n`} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if n := strings.Count(html, `class="panel"`); n != 5 {
		t.Errorf("%d sub-queue panels, want 5", n)
	}
	// Two marker instants, drawn on the pods chart, the allocation chart
	// and each panel.
	if n := strings.Count(html, `class="marker"`); n != 2*7 {
		t.Errorf("%d marker lines, want 14", n)
	}
	var seriesMax [5]int
	for _, s := range r.Series {
		for i, cs := range chartSeries {
			seriesMax[i] = max(seriesMax[i], cs.value(s.Peak))
		}
	}
	var text bytes.Buffer
	r.WriteText(&text, false)
	for i, cs := range chartSeries {
		peak := cs.value(r.Peak)
		re := regexp.MustCompile(`<span class="peak" data-series="` + cs.name + `" data-run="run">(\d+)</span>`)
		m := re.FindStringSubmatch(html)
		if m == nil || m[1] != fmt.Sprint(peak) {
			t.Errorf("%s: page shows peak %v, the run's is %d", cs.name, m, peak)
		}
		if seriesMax[i] != peak {
			t.Errorf("%s: the series peaks at %d, the report at %d", cs.name, seriesMax[i], peak)
		}
	}
	if r.Peak.Gated != 5 || !strings.Contains(text.String(), fmt.Sprintf("gated %d, in flight %d", r.Peak.Gated, r.Peak.InFlight)) {
		t.Errorf("gated peak %d, want 5; text report:\n%s", r.Peak.Gated, text.String())
	}
}

// --compare's page holds both runs, names both in its title, and has a
// delta column.
func TestComparisonPage(t *testing.T) {
	a := run(t, parse(t, pageScenario))
	sc := parse(t, pageScenario)
	if err := sc.Set("hints", "false"); err != nil {
		t.Fatal(err)
	}
	b := run(t, sc)
	var buf bytes.Buffer
	if err := WriteComparisonHTML(&buf, a, b, "baseline", "hints=false", Window{}); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{"<title>schedq simulation: page: baseline vs hints=false</title>", `<th class="n">delta</th>`,
		`data-run="baseline"`, `data-run="hints=false"`, `stroke-dasharray="6 4"`} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if n := strings.Count(html, `data-series="active" data-run=`); n != 2+2 { // two peaks, two lines
		t.Errorf("%d active elements, want 4 (a peak and a line per run)", n)
	}
	if d := delta(4360, 4570, func(v float64) string { return fmt.Sprint(v) }); d != "+210 (+4.8%)" {
		t.Errorf("delta = %q", d)
	}
}

// Time ticks fall on an even step and their labels read as such.
func TestTimeTicks(t *testing.T) {
	for _, c := range []struct {
		end  time.Duration
		want string
	}{
		{391 * time.Second, "0 1m 2m 3m 4m 5m 6m"},
		{149 * 24 * time.Hour, "0 30d 60d 90d 120d"},
		{45 * time.Millisecond, "0 10ms 20ms 30ms 40ms"},
		{90 * time.Minute, "0 15m 30m 45m 1h 1h15m 1h30m"},
	} {
		x := func(d time.Duration) float64 { return 1000 * float64(d) / float64(c.end) }
		ticks := timeTicks(Window{To: c.end}, 8, x, 2000)
		var labels []string
		for i, tk := range ticks {
			labels = append(labels, tk.Label)
			if i >= 2 && math.Abs((tk.Pos-ticks[i-1].Pos)-(ticks[1].Pos-ticks[0].Pos)) > 1e-9 {
				t.Errorf("%v: tick %d is not evenly spaced", c.end, i)
			}
		}
		if got := strings.Join(labels, " "); got != c.want {
			t.Errorf("%v: ticks %q, want %q", c.end, got, c.want)
		}
	}
	for _, c := range []struct{ v, most, top int }{{0, 5, 1}, {7, 5, 8}, {360, 5, 400}, {360, 1, 500}, {1840, 5, 2000}, {2160, 5, 2500}} {
		if step, top := niceMax(c.v, c.most); top != c.top || top%step != 0 || top/step > c.most {
			t.Errorf("niceMax(%d, %d) = %d, %d; want top %d", c.v, c.most, step, top, c.top)
		}
	}
}

// A window shows only that span of virtual time: the time axis starts and
// ends there, the events outside it are not drawn, and the page says so.
func TestPageWindow(t *testing.T) {
	r := run(t, parse(t, pageScenario))
	var b bytes.Buffer
	if err := r.WriteHTMLWindow(&b, Window{From: 30 * time.Second, To: 50 * time.Second}); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	pods := html[strings.Index(html, `id="pods-chart"`):]
	pods = pods[:strings.Index(pods, "</svg>")]
	var labels []string
	for _, part := range strings.Split(pods, `class="xtick"`)[1:] {
		labels = append(labels, part[strings.Index(part, ">")+1:strings.Index(part, "<")])
	}
	if got := strings.Join(labels, " "); got != "30s 35s 40s 45s 50s" {
		t.Errorf("time ticks %q, want 30s to 50s", got)
	}
	// One event instant (40s) of the two, on the pods chart, the
	// allocation chart and each panel.
	if n := strings.Count(html, `class="marker"`); n != 7 {
		t.Errorf("%d marker lines, want 7", n)
	}
	if !strings.Contains(html, `The charts over virtual time show 30s to 50s of a run of`) {
		t.Error("the page does not say which window it shows")
	}
	// The pods bound before the window count from its first column.
	if !strings.Contains(pods, `data-series="scheduled"`) {
		t.Error("no scheduled line")
	}
	for _, w := range []Window{{From: time.Hour}, {From: -time.Second}, {From: 10 * time.Second, To: 5 * time.Second}} {
		if err := r.WriteHTMLWindow(&bytes.Buffer{}, w); !errors.Is(err, ErrWindow) {
			t.Errorf("window %+v: error %v, want ErrWindow", w, err)
		}
	}
}

// A run that bound no pod has no time to schedule: the page's summary
// says so, as the text report does, instead of 0s, and gives no delta
// against it.
func TestPageNoneScheduled(t *testing.T) {
	none := run(t, parse(t, `
name: none
nodes: [{name: n, count: 1, capacity: {cpu: "1", memory: 1Gi}}]
pods: [{name: big, count: 3, requests: {cpu: "2"}}]
`))
	some := run(t, parse(t, `
name: some
nodes: [{name: n, count: 1, capacity: {cpu: "1", memory: 1Gi}}]
pods: [{name: small, count: 1, requests: {cpu: "1"}}]
`))
	for _, tc := range []struct {
		name      string
		runs      []*Report
		vals      []string
		wantDelta string
	}{
		{"one run", []*Report{none}, []string{"none scheduled"}, ""},
		{"first bound none", []*Report{none, some}, []string{"none scheduled", "20ms"}, ""},
		{"second bound none", []*Report{some, none}, []string{"20ms", "none scheduled"}, ""},
		{"both bound some", []*Report{some, some}, []string{"20ms", "20ms"}, "="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs []pageRun
			for _, r := range tc.runs {
				runs = append(runs, pageRun{R: r})
			}
			for _, row := range summaryRows(runs) {
				if !strings.HasPrefix(row.Name, "time to schedule") {
					continue
				}
				if !slices.Equal(row.Vals, tc.vals) || len(runs) == 2 && row.Delta != tc.wantDelta {
					t.Errorf("%s: %q, delta %q; want %q, delta %q", row.Name, row.Vals, row.Delta, tc.vals, tc.wantDelta)
				}
			}
		})
	}
}

// The page's summary writes a duration as the text report does, to the
// millisecond: one of an hour or more is not cut to the minute.
func TestPageSummaryDurations(t *testing.T) {
	for _, tc := range []struct {
		name string
		secs float64
		want string
	}{
		{"under an hour", 59*60 + 59.9, "59m59.9s"},
		{"just under two hours", 2*3600 - 0.1, "1h59m59.9s"},
		{"hours, minutes and seconds", 3600 + 11*60 + 43.025, "1h11m43.025s"},
		{"over a day", 25*3600 + 30*60 + 15, "25h30m15s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Scheduled: 1, TimeToSchedule: Percentiles{P50: tc.secs, P90: tc.secs, P99: tc.secs, Max: tc.secs},
				VirtualSeconds: tc.secs, RunSeconds: tc.secs}
			n := 0
			for _, row := range summaryRows([]pageRun{{R: r}}) {
				if strings.HasPrefix(row.Name, "time to schedule") || row.Name == "first arrival to last binding" || row.Name == "run length (virtual)" {
					n++
					if row.Vals[0] != tc.want {
						t.Errorf("%s: %q, want %q (the text report's)", row.Name, row.Vals[0], tc.want)
					}
				}
			}
			if n != 6 {
				t.Errorf("%d duration rows, want 6", n)
			}
		})
	}
}

// A level drawn over time shows in the columns of the time it held, and
// not in the column that starts the instant it ended: a sub-queue
// emptied, or the cluster freed, at a column's start is empty or free in
// that column, and a level that ended as the window starts is not drawn.
func TestChartColumnsEndAtTheChange(t *testing.T) {
	mid := columns / 2
	for _, tc := range []struct {
		name string
		w    Window
		want map[int]int // column: value
	}{
		{"whole run", Window{From: 0, To: 120 * time.Second, whole: true}, map[int]int{0: 5, mid - 1: 5, mid: 0, columns - 1: 0}},
		{"window from the change", Window{From: 60 * time.Second, To: 120 * time.Second}, map[int]int{0: 0, columns - 1: 0}},
		{"window up to the change", Window{From: 0, To: 60 * time.Second}, map[int]int{0: 5, columns - 1: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			series := []Sample{{T: 0, Counts: schedq.Counts{Active: 5}, Peak: schedq.Counts{Active: 5}}, {T: 60 * time.Second}, {T: 120 * time.Second}}
			active := func(s Sample) int { return s.Active }
			peak := func(s Sample) int { return s.Peak.Active }
			alloc := []AllocSample{{T: 0, CPU: 0.005}, {T: 60 * time.Second}, {T: 120 * time.Second}}
			q := queueColumns(series, tc.w, peak, active)
			f := fractionColumns(alloc, tc.w, func(a AllocSample) float64 { return a.CPU })
			for c, want := range tc.want {
				if q[c] != want || f[c] != want {
					t.Errorf("column %d: queue %d, allocation %d tenths of a percent; want %d", c, q[c], f[c], want)
				}
			}
		})
	}
}

// The charts over time span the whole run, up to its end, not only up to
// its last binding: a run that lasted until a later event draws that
// event, and a window within it is not refused.
func TestPageSpansTheRun(t *testing.T) {
	r := run(t, parse(t, `
name: late-event
duration: 5m
nodes: [{name: n, count: 1, capacity: {cpu: "2", memory: 2Gi}}]
pods: [{name: a, count: 1, requests: {cpu: "1"}}]
events: [{at: 60s, addNodes: {name: m, count: 1, capacity: {cpu: "2", memory: 2Gi}}}]
`))
	for _, tc := range []struct {
		name string
		win  Window
		want string
	}{
		{"whole run", Window{}, `text-anchor="middle">1m<`},
		{"window after the last binding", Window{From: 30 * time.Second}, "The charts over virtual time show 30s to 1m of a run of 1m."},
		{"window past the run's end", Window{To: time.Hour},
			"The charts over virtual time show 0 to 1m of a run of 1m. The window asked ends at 1h, after the run ended."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := r.WriteHTMLWindow(&b, tc.win); err != nil {
				t.Fatalf("run of %vs: %v", r.RunSeconds, err)
			}
			html := b.String()
			pods := html[strings.Index(html, `id="pods-chart"`):]
			pods = pods[:strings.Index(pods, "</svg>")]
			if !strings.Contains(html, tc.want) || !strings.Contains(pods, `class="marker"`) {
				t.Errorf("run of %vs: page lacks %q or the pods chart its event marker at 1m", r.RunSeconds, tc.want)
			}
		})
	}
}
