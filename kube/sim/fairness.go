package sim

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

// fairness returns the queue's fair sharing between namespaces for q, or
// nil when the scenario leaves it off. It is the real scheduler's
// (scheduler.NamespaceFairness).
func (q QueueSpec) fairness() *schedq.Fairness[*v1.Pod] {
	if !q.Fairness {
		return nil
	}
	return scheduler.NamespaceFairness(q.FairnessWeights, q.FairnessHalfLife)
}

// validateFairness checks the fairness fields of the queue.
func (s *Scenario) validateFairness(bad func(string, string, ...any)) {
	q := s.Queue
	names := make([]string, 0, len(q.FairnessWeights))
	for ns := range q.FairnessWeights {
		names = append(names, ns)
	}
	slices.Sort(names)
	for _, ns := range names {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			bad("queue.fairnessWeights."+ns, "%q is not a namespace name: %s", ns, msgs[0])
		}
		if w := q.FairnessWeights[ns]; !(w > 0) || w > 1e9 {
			bad("queue.fairnessWeights."+ns, "a weight is a number above 0 (and at most 1e9), got %v", w)
		}
	}
	if q.FairnessHalfLife < 0 {
		bad("queue.fairnessHalfLife", "must not be negative, got %v", q.FairnessHalfLife)
	}
	if s.Scheduler.Config == "" {
		s.needFairness(bad) // else checkConfigFile asks it, with the file's fairness
	}
}

// needFairness refuses fairness weights or a half-life with fairness off.
func (s *Scenario) needFairness(bad func(string, string, ...any)) {
	q := s.Queue
	if !q.Fairness && (len(q.FairnessWeights) > 0 || q.FairnessHalfLife != 0) {
		bad("queue.fairness", "fairnessWeights and fairnessHalfLife need fairness: true")
	}
}

// NamespaceStats is one namespace's pods and their time to schedule.
type NamespaceStats struct {
	Namespace      string      `json:"namespace"`
	Pods           int         `json:"pods"`
	Scheduled      int         `json:"scheduled"`
	TimeToSchedule Percentiles `json:"timeToSchedule"`
}

// reportNamespaces breaks the pods and their time to schedule down by
// namespace, when there is more than one.
func (s *sim) reportNamespaces(r *Report) {
	by := map[string]*NamespaceStats{}
	waits := map[string][]time.Duration{}
	for _, st := range s.order {
		ns := st.key.Namespace
		n := by[ns]
		if n == nil {
			n = &NamespaceStats{Namespace: ns}
			by[ns] = n
		}
		n.Pods++
		if !st.bound.IsZero() {
			n.Scheduled++
			waits[ns] = append(waits[ns], st.bound.Sub(st.arrived))
		}
	}
	if len(by) < 2 {
		return
	}
	for ns, n := range by {
		n.TimeToSchedule = percentiles(waits[ns])
		r.ByNamespace = append(r.ByNamespace, *n)
	}
	sort.Slice(r.ByNamespace, func(i, j int) bool { return r.ByNamespace[i].Namespace < r.ByNamespace[j].Namespace })
}

// writeNamespaces prints the fairness setting, if on, and the breakdown by
// namespace.
func (r *Report) writeNamespaces(p func(string, ...any)) {
	if r.Settings.Fairness {
		p("fairness         between namespaces")
	}
	for _, n := range r.ByNamespace {
		t := n.TimeToSchedule
		if n.Scheduled == 0 {
			p("  namespace %-14s 0 of %d scheduled; no time to schedule", n.Namespace, n.Pods)
			continue
		}
		p("  namespace %-14s %d of %d scheduled; time to schedule p50 %s, p99 %s, max %s",
			n.Namespace, n.Scheduled, n.Pods, secs(t.P50), secs(t.P99), secs(t.Max))
	}
}

// compareNamespaces adds the per-namespace rows to a comparison.
func compareNamespaces(row func(string, func(*Report) string), a, b *Report) {
	if a.Settings.Fairness || b.Settings.Fairness {
		row("fairness", func(r *Report) string { return onOff(r.Settings.Fairness) })
	}
	for _, n := range a.ByNamespace {
		ns := n.Namespace
		row(fmt.Sprintf("namespace %s p50/p99", ns), func(r *Report) string {
			for _, m := range r.ByNamespace {
				if m.Namespace == ns && m.Scheduled == 0 {
					return "none scheduled"
				}
				if m.Namespace == ns {
					return strings.Join([]string{secs(m.TimeToSchedule.P50), secs(m.TimeToSchedule.P99)}, "/")
				}
			}
			return "-"
		})
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// explainAtEnd explains a pod at the end of the run, for the report's
// pending reasons. Explain costs O(n) a pod for its position in line,
// which the report does not use; one Dump explains them all, without
// positions, in O(n log n), and later calls look it up.
func (s *sim) explainAtEnd(key types.NamespacedName) (schedq.Explanation[types.NamespacedName], error) {
	if s.explained == nil {
		d := s.core.Dump(s.now)
		s.explained = make(map[types.NamespacedName]schedq.Explanation[types.NamespacedName], len(d.Items))
		for _, x := range d.Items {
			if _, dup := s.explained[x.Key]; !dup || x.Location != schedq.InFlight {
				s.explained[x.Key] = x // queued before in flight, as Explain
			}
		}
	}
	x, ok := s.explained[key]
	if !ok {
		return x, schedq.ErrNotFound
	}
	return x, nil
}
