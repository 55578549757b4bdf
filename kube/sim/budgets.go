package sim

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// addBudget takes a snapshot's PodDisruptionBudget for the scheduler's
// preemption (PreemptionOptions.Budgets), refusing one that appears
// twice, or whose selector or minAvailable/maxUnavailable the
// disruption controller could not read. A budget without a namespace is
// in "default".
func (s *sim) addBudget(b *policyv1.PodDisruptionBudget) error {
	if b.Namespace == "" {
		b.Namespace = "default"
	}
	name := "PodDisruptionBudget " + b.Namespace + "/" + b.Name
	for _, o := range s.x.budgets {
		if o.Namespace == b.Namespace && o.Name == b.Name {
			return fmt.Errorf("%s appears twice", name)
		}
	}
	if _, err := metav1.LabelSelectorAsSelector(b.Spec.Selector); err != nil {
		return fmt.Errorf("%s: spec.selector: %w", name, err)
	}
	for field, v := range map[string]*intstr.IntOrString{"minAvailable": b.Spec.MinAvailable, "maxUnavailable": b.Spec.MaxUnavailable} {
		if v == nil {
			continue
		}
		if n, err := intstr.GetScaledValueFromIntOrPercent(v, 100, true); err != nil || n < 0 {
			return fmt.Errorf("%s: spec.%s: %q is not a number of pods or a percentage", name, field, v.String())
		}
	}
	if b.Spec.MinAvailable != nil && b.Spec.MaxUnavailable != nil {
		return fmt.Errorf("%s: spec: minAvailable and maxUnavailable are both set; a budget has one", name)
	}
	s.x.budgets = append(s.x.budgets, b)
	return nil
}

// budgetsNow returns the budgets with the status the disruption
// controller would give them now (budgetStatus), for DefaultPreemption:
// a victim costs one of its budgets' disruptionsAllowed. Nil without
// budgets. O(pods + budgets × pods of their namespaces), once per
// preemption.
func (s *sim) budgetsNow() []*policyv1.PodDisruptionBudget {
	if len(s.x.budgets) == 0 {
		return nil
	}
	inNS := map[string][]*v1.Pod{}
	for _, b := range s.x.budgets {
		inNS[b.Namespace] = nil
	}
	for _, p := range s.cl.pods {
		if pods, ok := inNS[p.Namespace]; ok {
			inNS[p.Namespace] = append(pods, p)
		}
	}
	out := make([]*policyv1.PodDisruptionBudget, len(s.x.budgets))
	for i, b := range s.x.budgets {
		c := b.DeepCopy()
		c.Status = budgetStatus(b, inNS[b.Namespace], s.boundHere)
		out[i] = c
	}
	return out
}

// boundHere reports whether the simulator bound p (its binding ended in
// this run), rather than finding it bound in its input. O(1).
func (s *sim) boundHere(p *v1.Pod) bool {
	st := s.stats[p.UID]
	return st != nil && !st.bound.IsZero()
}

// budgetStatus is b's status over pods, as the disruption controller
// computes it: the expected pods are those its selector selects in its
// namespace (an empty selector selects none, as preemption reads it),
// the healthy ones those bound, not terminating and ready (healthy).
// The simulator has no workload controllers, so a percentage and
// maxUnavailable are taken of the pods selected, not of a controller's
// scale. boundHere says which pods the simulator bound. O(pods).
func budgetStatus(b *policyv1.PodDisruptionBudget, pods []*v1.Pod, boundHere func(*v1.Pod) bool) policyv1.PodDisruptionBudgetStatus {
	var expected, healthy int32
	if sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector); err == nil && !sel.Empty() {
		for _, p := range pods {
			if p.Namespace != b.Namespace || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			expected++
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && ready(p, boundHere) {
				healthy++
			}
		}
	}
	desired := desiredHealthy(b.Spec, expected)
	return policyv1.PodDisruptionBudgetStatus{ObservedGeneration: b.Generation, ExpectedPods: expected,
		CurrentHealthy: healthy, DesiredHealthy: desired, DisruptionsAllowed: max(0, healthy-desired)}
}

// desiredHealthy is how many of expected pods the budget keeps: its
// minAvailable, or expected less its maxUnavailable, a percentage
// rounded up as the disruption controller rounds it; 0 with neither.
func desiredHealthy(spec policyv1.PodDisruptionBudgetSpec, expected int32) int32 {
	switch {
	case spec.MinAvailable != nil:
		n, _ := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(expected), true)
		return int32(n)
	case spec.MaxUnavailable != nil:
		n, _ := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(expected), true)
		return max(0, expected-int32(n))
	}
	return 0
}

// ready reports whether p, a bound pod, counts as ready: its Ready
// condition is True, as the disruption controller counts a pod. A pod
// with no Ready condition is not ready (a live pod just bound, whose
// kubelet has not reported yet), unless the simulator bound it
// (boundHere), or it came with no condition at all (a scenario's or a
// hand-written snapshot's: a pod an API server bound has PodScheduled at
// least): the simulator's pods never get the condition, and it runs them
// from their binding. O(conditions).
func ready(p *v1.Pod, boundHere func(*v1.Pod) bool) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return len(p.Status.Conditions) == 0 || boundHere(p)
}
