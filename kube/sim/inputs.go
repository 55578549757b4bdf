package sim

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/schedq/schedq/kube/framework"
)

// extras is the state of what the simulator adds to a plain scenario:
// lifetimes, replayed traces, snapshots and the cluster's allocation.
type extras struct {
	groups    map[string]*PodGroup                   // pod groups by name, for lifetimes
	traceLife map[types.NamespacedName]time.Duration // lifetimes of trace pods
	gpu       *gpuDevices                            // the per-GPU model of a trace, nil without
	gpuDRA    *gpuDRAModel                           // GPUDevices' policy when DRA allocates a trace's GPUs, nil without
	// client is the clientset the plugins write with (draClient), nil
	// before the frameworks are made.
	client *fake.Clientset
	// gpuClaims names, for each pod group of the scenario that asks for
	// a trace's GPUs replayed as DRA devices, the template its pods
	// claim them from (scenarioGPUClaims).
	gpuClaims map[string]string
	alloc     allocation
	// production holds the trace's own figures; showAlloc prints the
	// allocation summary (for traces, snapshots and lifetimes).
	production *Production
	showAlloc  bool
	snapshot   *SnapshotSummary
	// snapshotPods are the snapshot's pods in the run (bound or
	// pending), which a trace's pods must not be.
	snapshotPods map[types.NamespacedName]bool
	// namespaces are the snapshot's Namespace objects, by name, for a
	// replay's state (Replay.State).
	namespaces map[string]*v1.Namespace
	// budgets are the snapshot's PodDisruptionBudgets, which preemption
	// respects where it can (budgets.go).
	budgets []*policyv1.PodDisruptionBudget
	// restoreAtAdd holds the pods a forecast queues where the queue it
	// copies held them, with their history there (ForecastState.Queued),
	// rather than as new in activeQ.
	restoreAtAdd map[types.NamespacedName]QueuedPod
	// traceCut stops the trace's arrivals and its withdrawals of pending
	// pods from then on: a replay then runs on as a forecast assumes the
	// world does (the tests of forecast_exact_test.go).
	traceCut bool
	// traceKeep keeps every pending pod, withdrawn by none of the
	// trace's deletions (the tests of forecast_exact_test.go).
	traceKeep bool
	gangs     gangs
	// victimsOf, if set, gathers the pods each preemptor evicted, by
	// its key (the what-if's run of its pods alone, whatIfNow).
	victimsOf map[types.NamespacedName][]types.NamespacedName
	// released, if set, is told of each gang member that gang release
	// deleted and the pod that replaces it (gang_release.go).
	released func(old, again *v1.Pod)
}

// loadInputs prepares lifetimes and loads the scenario's trace and
// snapshot, if any.
func (s *sim) loadInputs() error {
	s.x.groups = map[string]*PodGroup{}
	for i := range s.sc.Pods {
		g := &s.sc.Pods[i]
		s.x.groups[g.Name] = g
		if g.Lifetime != nil {
			s.x.showAlloc = true
		}
	}
	if s.sc.Snapshot != "" {
		if err := s.loadSnapshot(s.sc.Snapshot); err != nil {
			return err
		}
		s.x.showAlloc = true
	}
	if s.sc.Trace != nil {
		if err := s.loadTrace(s.sc.Trace); err != nil {
			return err
		}
		s.x.showAlloc = true
	}
	s.wireStatus()
	return nil
}

// validateInputs checks the fields that lifetimes, traces and snapshots
// add to a scenario.
func (s *Scenario) validateInputs(bad func(string, string, ...any)) {
	for i := range s.Pods {
		if l := s.Pods[i].Lifetime; l != nil {
			l.validate(fmt.Sprintf("pods[%d].lifetime", i), bad)
		}
	}
	if s.Trace != nil {
		s.Trace.validate("trace", bad)
	}
}

// reportExtras adds the endings, the allocation and the records.
func (s *sim) reportExtras(r *Report) {
	s.endings(r)
	s.x.alloc.sample(s.now)
	r.Alloc = s.x.alloc.series
	a := summarize(r.Alloc, s.now.Sub(epoch), s.x.alloc.alloc.gpu > 0)
	if m := s.x.alloc.frag; m != nil {
		a.Frag = summarizeFrag(r.Alloc, s.now.Sub(epoch), len(m.workload))
	}
	r.Allocation = &a
	r.gpuHours = s.x.alloc.gpuMilliHours / 1000
	r.Production = s.x.production
	r.TraceSim = s.traceSim()
	r.showAlloc = s.x.showAlloc
	r.Snapshot = s.x.snapshot
	r.Records = s.records()
	r.Markers = s.sc.markers(s.now.Sub(epoch))
}

// writeExtras prints the allocation and, for a trace, the production
// figures beside the simulated ones.
func (r *Report) writeExtras(p func(string, ...any), showAlloc bool) {
	r.writeSnapshot(p)
	if a := r.Allocation; a != nil && showAlloc {
		line := fmt.Sprintf("allocated        cpu mean %.1f%% peak %.1f%%, memory mean %.1f%% peak %.1f%%",
			100*a.MeanCPU, 100*a.PeakCPU, 100*a.MeanMem, 100*a.PeakMem)
		if a.HasGPU {
			line += fmt.Sprintf(", gpu mean %.1f%% peak %.1f%%", 100*a.MeanGPU, 100*a.PeakGPU)
		}
		p("%s (of allocatable, time-weighted over the run)", line)
		if f := a.Frag; f != nil {
			p("gpu fragmented   mean %.1f%% peak %.1f%% of unallocated GPUs, %.1f%% at the gpu peak; mean %.1f%% peak %.1f%% of all GPUs (against the pod list's %d typical kinds)",
				100*f.MeanRatio, 100*f.PeakRatio, 100*f.RatioAtPeak, 100*f.MeanFrag, 100*f.PeakFrag, f.Kinds)
		}
	}
	if r.Production != nil {
		r.writeProduction(p)
	}
}

// compareExtras adds the endings, the allocation and the production
// figures to a comparison, when the runs have them.
func compareExtras(row func(string, func(*Report) string), a, b *Report) {
	n := func(f func(*Report) int) func(*Report) string {
		return func(r *Report) string { return fmt.Sprint(f(r)) }
	}
	pct := func(f func(*AllocSummary) float64) func(*Report) string {
		return func(r *Report) string { return fmt.Sprintf("%.1f%%", 100*f(r.Allocation)) }
	}
	if a.Finished+a.DeletedBound+a.Preempted+a.Withdrawn+b.Finished+b.DeletedBound+b.Preempted+b.Withdrawn > 0 {
		row("finished", n(func(r *Report) int { return r.Finished }))
		row("deleted after binding", n(func(r *Report) int { return r.DeletedBound }))
		row("preempted", n(func(r *Report) int { return r.Preempted }))
		row("deleted while pending", n(func(r *Report) int { return r.Withdrawn }))
	}
	if a.showAlloc && a.Allocation != nil && b.Allocation != nil {
		row("cpu allocated mean", pct(func(s *AllocSummary) float64 { return s.MeanCPU }))
		if a.Allocation.HasGPU {
			row("gpu allocated mean", pct(func(s *AllocSummary) float64 { return s.MeanGPU }))
			row("gpu allocated peak", pct(func(s *AllocSummary) float64 { return s.PeakGPU }))
			if a.Allocation.Frag != nil || b.Allocation.Frag != nil {
				frag := func(f func(*FragSummary) float64) func(*Report) string {
					return func(r *Report) string {
						if r.Allocation.Frag == nil {
							return "-"
						}
						return fmt.Sprintf("%.1f%%", 100*f(r.Allocation.Frag))
					}
				}
				row("gpu fragmented mean", frag(func(f *FragSummary) float64 { return f.MeanRatio }))
				row("gpu fragmented peak", frag(func(f *FragSummary) float64 { return f.PeakRatio }))
			}
		}
	}
	if pr := a.Production; pr != nil {
		row("production: scheduled", func(*Report) string { return fmt.Sprint(pr.Scheduled) })
		row("production: delay p50/p90/p99", func(*Report) string {
			return fmt.Sprintf("%s/%s/%s", secs(pr.Delay.P50), secs(pr.Delay.P90), secs(pr.Delay.P99))
		})
		row("production: gpu allocated mean", func(*Report) string { return fmt.Sprintf("%.1f%%", 100*pr.MeanGPU) })
	}
}

// track lists a pod's key in its group, as planArrivals does for the
// scenario's pods: the events and node removals find pods by group.
func (s *sim) track(group string, p *v1.Pod) {
	s.cl.podGroups[group] = append(s.cl.podGroups[group], framework.Key(p))
}
