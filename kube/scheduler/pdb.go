package scheduler

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/schedq/schedq/kube/framework"
)

// budgets are the PodDisruptionBudgets one preemption search weighs, with
// their selectors parsed once.
type budgets struct {
	list []*policyv1.PodDisruptionBudget
	sel  []labels.Selector // nil: the budget selects nothing
	left []int32           // scratch: disruptions still allowed, per budget
}

// newBudgets parses the selectors of list. A budget whose selector is
// empty or cannot be parsed selects no pod, as in kube-scheduler's
// preemption. O(b).
func newBudgets(list []*policyv1.PodDisruptionBudget) *budgets {
	b := &budgets{list: list, sel: make([]labels.Selector, len(list)), left: make([]int32, len(list))}
	for i, pdb := range list {
		if pdb == nil || pdb.Spec.Selector == nil {
			continue
		}
		s, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || s.Empty() {
			continue
		}
		b.sel[i] = s
	}
	return b
}

// split sorts pods, taken in order, into those whose eviction would take
// a budget below zero and the rest. A pod the budget already counts as
// disrupted costs nothing. O(p*b).
func (b *budgets) split(pods []*framework.PodInfo, violating, fine []*framework.PodInfo) ([]*framework.PodInfo, []*framework.PodInfo) {
	for i, pdb := range b.list {
		if b.sel[i] != nil {
			b.left[i] = pdb.Status.DisruptionsAllowed
		}
	}
	for _, pi := range pods {
		bad := false
		for i, pdb := range b.list {
			s := b.sel[i]
			if s == nil || pdb.Namespace != pi.Pod.Namespace || !s.Matches(labels.Set(pi.Pod.Labels)) {
				continue
			}
			if _, gone := pdb.Status.DisruptedPods[pi.Pod.Name]; gone {
				continue
			}
			if b.left[i]--; b.left[i] < 0 {
				bad = true
			}
		}
		if bad {
			violating = append(violating, pi)
		} else {
			fine = append(fine, pi)
		}
	}
	return violating, fine
}
