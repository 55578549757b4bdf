package sim

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"text/tabwriter"
	"time"

	"github.com/schedq/schedq/kube/gpu"
)

// SameRun reports whether scenarios a and b would run the same: equal
// once each setting left to its default has the default's value, the
// settings scheduler.config decides are the file's, backoff turned off
// either way (disableBackoff, maxBackoff 0) is the same, and the
// configuration files are compared by their contents. A --compare whose
// second run is the first by this measure compares nothing.
func SameRun(a, b *Scenario) bool {
	return reflect.DeepEqual(a.effective(), b.effective())
}

// effective is a copy of s as its run takes it (see SameRun). s is not
// changed.
func (s *Scenario) effective() *Scenario {
	folded, err := s.withConfigFile()
	if err != nil {
		folded = s
	}
	c := *folded
	on := func(b *bool) *bool {
		v := b == nil || *b
		return &v
	}
	q := &c.Queue
	q.PopFromBackoff, q.QueueingHints, q.WakeBudget = on(q.PopFromBackoff), on(q.QueueingHints), on(q.WakeBudget)
	if q.backoffOff() {
		q.DisableBackoff, q.InitialBackoff, q.MaxBackoff = true, 0, nil
	} else {
		m := orDefault(deref(q.MaxBackoff), defaultMaxBackoff)
		q.InitialBackoff, q.MaxBackoff = orDefault(q.InitialBackoff, defaultInitialBackoff), &m
	}
	q.MaxInUnschedulable = orDefault(q.MaxInUnschedulable, defaultMaxInUnschedulable)
	sp := &c.Scheduler
	sp.Gangs = on(sp.Gangs)
	sp.AttemptCost = orDefault(sp.AttemptCost, 5*time.Millisecond)
	sp.BindLatency = orDefault(sp.BindLatency, defaultBindLatency)
	sp.Plugins = PluginsUpstream
	if c.Trace != nil {
		sp.GPUModel = sp.gpuModel()
	}
	if p, err := gpu.ParsePolicy(sp.GPUPolicy); sp.GPUPolicy != "" && err == nil {
		sp.GPUPolicy = p.String()
	}
	if sp.Config != "" {
		if data, err := os.ReadFile(sp.Config); err == nil {
			sp.Config = "contents: " + string(data)
		}
	}
	return &c
}

// WriteComparison prints two runs of one scenario side by side.
func WriteComparison(w io.Writer, a, b *Report, labelA, labelB string, wall bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scenario %s (seed %d)\t%s\t%s\n", a.Scenario, a.Seed, labelA, labelB)
	row := func(name string, f func(*Report) string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", name, f(a), f(b)) }
	itoa := func(f func(*Report) int) func(*Report) string {
		return func(r *Report) string { return fmt.Sprint(f(r)) }
	}
	row("scheduled", itoa(func(r *Report) int { return r.Scheduled }))
	row("pending", itoa(func(r *Report) int { return r.Pending }))
	if a.PodAttempts != a.Attempts || b.PodAttempts != b.Attempts {
		row("scheduling attempts (a gang's once)", itoa(func(r *Report) int { return r.Attempts }))
		row("pod attempts (a gang's once per member)", itoa(func(r *Report) int { return r.PodAttempts }))
	} else {
		row("attempts", itoa(func(r *Report) int { return r.Attempts }))
	}
	row("wasted attempts", itoa(func(r *Report) int { return r.WastedAttempts }))
	wait := func(f func(Percentiles) float64) func(*Report) string {
		return func(r *Report) string {
			if r.Scheduled == 0 {
				return "none scheduled"
			}
			return secs(f(r.TimeToSchedule))
		}
	}
	row("time to schedule p50", wait(func(p Percentiles) float64 { return p.P50 }))
	row("time to schedule p90", wait(func(p Percentiles) float64 { return p.P90 }))
	row("time to schedule p99", wait(func(p Percentiles) float64 { return p.P99 }))
	row("throughput (virtual pods/s)", func(r *Report) string { return rateText(r.PodsPerSecond) })
	row("peak active", itoa(func(r *Report) int { return r.Peak.Active }))
	row("peak backoff", itoa(func(r *Report) int { return r.Peak.Backoff }))
	row("peak unschedulable", itoa(func(r *Report) int { return r.Peak.Unschedulable }))
	row("peak gated", itoa(func(r *Report) int { return r.Peak.Gated }))
	compareNamespaces(row, a, b)
	compareExtras(row, a, b)
	compareGangs(row, a, b)
	if wall && a.Wall != nil && b.Wall != nil {
		row("wall clock", func(r *Report) string { return fmt.Sprintf("%.2fs", r.Wall.Seconds) })
	}
	tw.Flush()
}
