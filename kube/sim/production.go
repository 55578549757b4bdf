package sim

import (
	"fmt"
	"slices"
	"time"
)

// Production is what a trace says happened in production, measured from
// its own columns, to set beside the simulated figures.
type Production struct {
	Trace     string `json:"trace"`
	Pods      int    `json:"pods"`
	Scheduled int    `json:"scheduled"`
	Never     int    `json:"neverScheduled"`
	// Delay is scheduled_time − creation_time of the scheduled pods, with
	// the same percentile rule as the simulated time to schedule.
	Delay Percentiles `json:"schedulingDelay"`
	// GPU is the allocated fraction of the cluster's GPUs (in gpu_milli),
	// time-weighted over the trace's span, each scheduled pod holding its
	// share from scheduled_time to deletion_time.
	MeanGPU float64 `json:"meanGPU"`
	PeakGPU float64 `json:"peakGPU"`
}

// percentiles of sorted durations: the element at index ⌊p·n⌋, as the
// report's time to schedule.
func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	slices.Sort(d)
	pct := func(p float64) float64 { return d[min(len(d)-1, int(p*float64(len(d))))].Seconds() }
	return Percentiles{P50: pct(0.50), P90: pct(0.90), P99: pct(0.99), Max: d[len(d)-1].Seconds()}
}

func production(spec *TraceSpec, t *alibabaTrace) *Production {
	p := &Production{Trace: spec.Format, Pods: len(t.pods)}
	var delays []time.Duration
	type step struct{ at, delta int64 }
	var steps []step
	var span int64
	for _, tp := range t.pods {
		span = max(span, tp.deleted)
		if tp.scheduled < 0 {
			p.Never++
			continue
		}
		p.Scheduled++
		delays = append(delays, time.Duration(tp.scheduled-tp.created)*time.Second)
		if tp.gpuMilli > 0 {
			steps = append(steps, step{tp.scheduled, tp.gpuMilli}, step{tp.deleted, -tp.gpuMilli})
		}
	}
	p.Delay = percentiles(delays)
	var capacity int64
	for _, n := range t.nodes {
		q := n.Status.Allocatable[ResourceGPUMilli]
		capacity += q.Value()
	}
	if capacity == 0 || span == 0 {
		return p
	}
	// Releases before acquisitions at one instant, as the simulator frees
	// a node before it binds the next pod.
	slices.SortFunc(steps, func(a, b step) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return int(a.delta - b.delta)
	})
	var used, last int64
	var area float64
	for _, s := range steps {
		area += float64(used) * float64(s.at-last)
		used += s.delta
		last = s.at
		p.PeakGPU = max(p.PeakGPU, float64(used)/float64(capacity))
	}
	area += float64(used) * float64(span-last)
	p.MeanGPU = area / float64(span) / float64(capacity)
	return p
}

// TraceSim is what the simulation did with the trace's own pods, not
// counting the pods of a snapshot or of the scenario, to set beside
// Production.
type TraceSim struct {
	Pods      int         `json:"pods"`
	Scheduled int         `json:"scheduled"`
	Never     int         `json:"neverScheduled"`
	Delay     Percentiles `json:"schedulingDelay"`
}

// traceSim counts the trace's pods (those with a trace lifetime) in the
// run, nil without a trace. O(pods).
func (s *sim) traceSim() *TraceSim {
	if s.x.traceLife == nil {
		return nil
	}
	t := &TraceSim{}
	var delays []time.Duration
	for _, st := range s.order {
		if _, ok := s.x.traceLife[st.key]; !ok {
			continue
		}
		t.Pods++
		if st.bound.IsZero() {
			t.Never++
			continue
		}
		t.Scheduled++
		delays = append(delays, st.bound.Sub(st.arrived))
	}
	t.Delay = percentiles(delays)
	return t
}

// writeProduction prints the simulated figures of the trace's pods beside
// the trace's own. The GPU rows cover the whole cluster, so they are left
// out when the run has pods other than the trace's.
func (r *Report) writeProduction(p func(string, ...any)) {
	pr, ts := r.Production, r.TraceSim
	if ts == nil {
		ts = &TraceSim{}
	}
	p("trace %s         simulated  production", pr.Trace)
	row := func(name, sim, prod string) { p("  %-24s %-10s %s", name, sim, prod) }
	row("pods", fmt.Sprint(ts.Pods), fmt.Sprint(pr.Pods))
	row("scheduled", fmt.Sprint(ts.Scheduled), fmt.Sprint(pr.Scheduled))
	row("never scheduled", fmt.Sprint(ts.Never), fmt.Sprint(pr.Never))
	row("scheduling delay p50", delayOf(ts.Delay.P50, ts.Scheduled), delayOf(pr.Delay.P50, pr.Scheduled))
	row("scheduling delay p90", delayOf(ts.Delay.P90, ts.Scheduled), delayOf(pr.Delay.P90, pr.Scheduled))
	row("scheduling delay p99", delayOf(ts.Delay.P99, ts.Scheduled), delayOf(pr.Delay.P99, pr.Scheduled))
	row("scheduling delay max", delayOf(ts.Delay.Max, ts.Scheduled), delayOf(pr.Delay.Max, pr.Scheduled))
	if a := r.Allocation; a != nil && ts.Pods == r.Pods && r.Snapshot == nil {
		row("gpu allocated mean", fmt.Sprintf("%.1f%%", 100*a.MeanGPU), fmt.Sprintf("%.1f%%", 100*pr.MeanGPU))
		row("gpu allocated peak", fmt.Sprintf("%.1f%%", 100*a.PeakGPU), fmt.Sprintf("%.1f%%", 100*pr.PeakGPU))
	}
}

// delayOf writes a percentile of the delays of scheduled pods, or "none"
// when no pod was scheduled: there is no delay, not one of 0s.
func delayOf(v float64, scheduled int) string {
	if scheduled == 0 {
		return "none"
	}
	return secs(v)
}
