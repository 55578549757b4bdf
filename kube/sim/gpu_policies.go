package sim

import (
	"fmt"
	"io"
)

// PolicyRow is one run of a trace replay under one GPU policy (or the
// profile's default scoring), as the per-policy table shows it.
type PolicyRow struct {
	Policy string `json:"policy"`
	// Pods, Scheduled and Never count the trace's pods: those of the pod
	// list, bound, and never bound.
	Pods      int `json:"pods"`
	Scheduled int `json:"scheduled"`
	Never     int `json:"neverPlaced"`
	// GPUHours is the GPU capacity that bound pods requested over the
	// run, in GPU-hours.
	GPUHours float64 `json:"gpuHours"`
	// P50 and P99 are the trace's pods' time to schedule (arrival to
	// binding), in seconds, by the report's percentile rule.
	P50 float64 `json:"timeToScheduleP50"`
	P99 float64 `json:"timeToScheduleP99"`
	// PeakGPU is the peak GPU allocation rate; FragMean and FragAtPeak the
	// fragmentation over unallocated GPU capacity, time-weighted and at
	// the GPU peak (0 without the device model).
	PeakGPU    float64 `json:"peakGPUAllocation"`
	FragMean   float64 `json:"meanFragRatio"`
	FragAtPeak float64 `json:"fragRatioAtGPUPeak"`
}

// PolicyRowOf reads a replay's report into a row of the per-policy table.
func PolicyRowOf(policy string, r *Report) PolicyRow {
	row := PolicyRow{Policy: policy, GPUHours: r.gpuHours}
	if t := r.TraceSim; t != nil {
		row.Pods, row.Scheduled, row.Never = t.Pods, t.Scheduled, t.Never
		row.P50, row.P99 = t.Delay.P50, t.Delay.P99
	}
	if a := r.Allocation; a != nil {
		row.PeakGPU = a.PeakGPU
		if f := a.Frag; f != nil {
			row.FragMean, row.FragAtPeak = f.MeanRatio, f.RatioAtPeak
		}
	}
	return row
}

// WritePolicyTable prints the rows as a text table, one line per policy,
// in the order given.
func WritePolicyTable(w io.Writer, rows []PolicyRow) {
	fmt.Fprintf(w, "%-14s %7s %9s %12s %10s %10s %9s %10s %12s\n",
		"policy", "pods", "scheduled", "never placed", "gpu-hours", "p50", "p99", "gpu peak", "frag mean")
	for _, r := range rows {
		fmt.Fprintf(w, "%-14s %7d %9d %12d %10.1f %10s %9s %9.1f%% %11.1f%%\n",
			r.Policy, r.Pods, r.Scheduled, r.Never, r.GPUHours, delayOf(r.P50, r.Scheduled), delayOf(r.P99, r.Scheduled), 100*r.PeakGPU, 100*r.FragMean)
	}
}
