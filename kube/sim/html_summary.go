package sim

import (
	"fmt"
	"math"
)

// summaryRow is one line of the summary: a figure per run and, for two
// runs, the change from the first to the second.
type summaryRow struct {
	Name  string
	Vals  []string
	Delta string
}

// groupRow is one pod group's line: pods, bound and percentiles per run.
type groupRow struct {
	Name string
	Vals []string
}

// summaryRows lists the figures of the text report, per run.
func summaryRows(runs []pageRun) []summaryRow {
	var rows []summaryRow
	num := func(name string, f func(*Report) float64, show func(float64) string) {
		row := summaryRow{Name: name}
		for _, r := range runs {
			row.Vals = append(row.Vals, show(f(r.R)))
		}
		if len(runs) == 2 {
			row.Delta = delta(f(runs[0].R), f(runs[1].R), show)
		}
		rows = append(rows, row)
	}
	count := func(v float64) string { return fmt.Sprint(int(v)) }
	seconds := secs // as the text report writes them
	n := func(name string, f func(*Report) int) {
		num(name, func(r *Report) float64 { return float64(f(r)) }, count)
	}
	n("pods", func(r *Report) int { return r.Pods })
	n("scheduled", func(r *Report) int { return r.Scheduled })
	n("pending", func(r *Report) int { return r.Pending })
	anyRun := func(f func(*Report) int) bool {
		for _, r := range runs {
			if f(r.R) > 0 {
				return true
			}
		}
		return false
	}
	for _, e := range []struct {
		name string
		f    func(*Report) int
	}{
		{"recreated after their node was removed", func(r *Report) int { return r.Evicted }},
		{"finished", func(r *Report) int { return r.Finished }},
		{"deleted after binding", func(r *Report) int { return r.DeletedBound }},
		{"preempted", func(r *Report) int { return r.Preempted }},
		{"deleted while pending", func(r *Report) int { return r.Withdrawn }},
	} {
		if anyRun(e.f) {
			n(e.name, e.f)
		}
	}
	if anyRun(func(r *Report) int { return r.PodAttempts - r.Attempts }) {
		n("scheduling attempts (a gang's once)", func(r *Report) int { return r.Attempts })
		n("pod attempts (a gang's once per member)", func(r *Report) int { return r.PodAttempts })
	} else {
		n("attempts", func(r *Report) int { return r.Attempts })
	}
	n("wasted attempts", func(r *Report) int { return r.WastedAttempts })
	for _, w := range []struct {
		name string
		f    func(Percentiles) float64
	}{
		{"time to schedule p50", func(p Percentiles) float64 { return p.P50 }},
		{"time to schedule p90", func(p Percentiles) float64 { return p.P90 }},
		{"time to schedule p99", func(p Percentiles) float64 { return p.P99 }},
		{"time to schedule max", func(p Percentiles) float64 { return p.Max }},
	} {
		num(w.name, func(r *Report) float64 { return w.f(r.TimeToSchedule) }, seconds)
		noneScheduled(&rows[len(rows)-1], runs)
	}
	num("throughput (virtual pods/s)", func(r *Report) float64 { return r.PodsPerSecond }, rateText)
	num("first arrival to last binding", func(r *Report) float64 { return r.VirtualSeconds }, seconds)
	num("run length (virtual)", func(r *Report) float64 { return r.RunSeconds }, seconds)
	n("peak active", func(r *Report) int { return r.Peak.Active })
	n("peak backoff", func(r *Report) int { return r.Peak.Backoff })
	n("peak unschedulable", func(r *Report) int { return r.Peak.Unschedulable })
	n("peak gated", func(r *Report) int { return r.Peak.Gated })
	n("peak in flight", func(r *Report) int { return r.Peak.InFlight })
	if a := runs[0].R; a.showAlloc && a.Allocation != nil {
		pct := func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
		num("cpu allocated, mean", func(r *Report) float64 { return r.Allocation.MeanCPU }, pct)
		if a.Allocation.HasGPU {
			num("gpu allocated, mean", func(r *Report) float64 { return r.Allocation.MeanGPU }, pct)
			num("gpu allocated, peak", func(r *Report) float64 { return r.Allocation.PeakGPU }, pct)
		}
	}
	if pr := runs[0].R.Production; pr != nil {
		same := func(s string) []string {
			out := make([]string, len(runs))
			for i := range out {
				out[i] = s
			}
			return out
		}
		rows = append(rows,
			summaryRow{Name: "production: scheduled", Vals: same(fmt.Sprint(pr.Scheduled))},
			summaryRow{Name: "production: delay p50 / p90 / p99", Vals: same(fmt.Sprintf("%s / %s / %s", secs(pr.Delay.P50), secs(pr.Delay.P90), secs(pr.Delay.P99)))})
	}
	return rows
}

// noneScheduled says "none scheduled" in a time to schedule row for a
// run that bound no pod, as the text report does, and then gives no
// delta: there is no time to compare.
func noneScheduled(row *summaryRow, runs []pageRun) {
	for i, r := range runs {
		if r.R.Scheduled == 0 {
			row.Vals[i], row.Delta = "none scheduled", ""
		}
	}
}

// delta writes b − a in the figure's own format, and the relative change.
func delta(a, b float64, show func(float64) string) string {
	d := b - a
	if d == 0 {
		return "="
	}
	s := show(math.Abs(d))
	if d > 0 {
		s = "+" + s
	} else {
		s = "−" + s
	}
	if a != 0 {
		s += fmt.Sprintf(" (%+.1f%%)", 100*d/a)
	}
	return s
}

// groupTable lists, per drawn pod group, its pods, how many were bound,
// and its time to schedule at p50, p90 and p99; for two runs, each cell
// holds both, "a / b".
func groupTable(runs []pageRun, groups []string) ([]string, []groupRow) {
	head := []string{"pods", "bound", "p50", "p90", "p99"}
	byRun := make([]map[string]groupWaits, len(runs))
	for i, r := range runs {
		byRun[i] = map[string]groupWaits{}
		for _, g := range waitsByGroup(r.R.Records) {
			byRun[i][g.Name] = g
		}
	}
	var rows []groupRow
	for _, name := range groups {
		row := groupRow{Name: name}
		for _, f := range []func(groupWaits) string{
			func(g groupWaits) string { return fmt.Sprint(g.Pods) },
			func(g groupWaits) string { return fmt.Sprint(len(g.Waits)) },
			func(g groupWaits) string { return pctOf(g.Waits, 0.5) },
			func(g groupWaits) string { return pctOf(g.Waits, 0.9) },
			func(g groupWaits) string { return pctOf(g.Waits, 0.99) },
		} {
			cell := ""
			for i := range runs {
				if i > 0 {
					cell += " / "
				}
				cell += f(byRun[i][name])
			}
			row.Vals = append(row.Vals, cell)
		}
		rows = append(rows, row)
	}
	return head, rows
}

// pctOf is the p-th percentile of sorted waits, as the text report takes
// it, or "–" for none.
func pctOf(waits []float64, p float64) string {
	if len(waits) == 0 {
		return "–"
	}
	return secs(waits[min(len(waits)-1, int(p*float64(len(waits))))])
}
