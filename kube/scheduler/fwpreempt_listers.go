package scheduler

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
)

// cyclePodLister is DefaultPreemption's pod lister: it knows the cycle's
// preemptor only (fwPreemption.pod), as the queue knows it, which is
// all that DefaultPreemption reads through it. Only the scheduling loop
// uses it.
type cyclePodLister struct{ f *fwPreemption }

// List returns the preemptor if sel matches it.
func (l cyclePodLister) List(sel labels.Selector) ([]*v1.Pod, error) {
	return cyclePodNamespace{l.f, ""}.List(sel)
}

// Pods returns the lister of namespace ns.
func (l cyclePodLister) Pods(ns string) corelisters.PodNamespaceLister {
	return cyclePodNamespace{l.f, ns}
}

// cyclePodNamespace is cyclePodLister in one namespace ("" for all).
type cyclePodNamespace struct {
	f  *fwPreemption
	ns string
}

// List returns the preemptor if it is in the namespace and sel matches it.
func (n cyclePodNamespace) List(sel labels.Selector) ([]*v1.Pod, error) {
	p := n.f.pod
	if p == nil || (n.ns != "" && p.Namespace != n.ns) || !sel.Matches(labels.Set(p.Labels)) {
		return nil, nil
	}
	return []*v1.Pod{p}, nil
}

// Get returns the preemptor if it is the pod named name, else NotFound.
func (n cyclePodNamespace) Get(name string) (*v1.Pod, error) {
	if p := n.f.pod; p != nil && p.Namespace == n.ns && p.Name == name {
		return p, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("pods"), name)
}

// budgetLister lists PreemptionOptions.Budgets for DefaultPreemption
// (none if it is nil). O(budgets) per call.
type budgetLister struct {
	list func() []*policyv1.PodDisruptionBudget
}

// List returns the budgets whose labels sel matches.
func (l budgetLister) List(sel labels.Selector) ([]*policyv1.PodDisruptionBudget, error) {
	return budgetNamespace{l, ""}.List(sel)
}

// PodDisruptionBudgets returns the lister of namespace ns.
func (l budgetLister) PodDisruptionBudgets(ns string) policylisters.PodDisruptionBudgetNamespaceLister {
	return budgetNamespace{l, ns}
}

// GetPodPodDisruptionBudgets returns the budgets of pod's namespace
// whose selector matches it (an empty selector matches none), or an
// error if there are none.
func (l budgetLister) GetPodPodDisruptionBudgets(pod *v1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	all, _ := l.PodDisruptionBudgets(pod.Namespace).List(labels.Everything())
	var out []*policyv1.PodDisruptionBudget
	for _, b := range all {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no PodDisruptionBudget found for pod %s/%s", pod.Namespace, pod.Name)
	}
	return out, nil
}

// budgetNamespace is budgetLister in one namespace ("" for all).
type budgetNamespace struct {
	l  budgetLister
	ns string
}

// List returns the namespace's budgets whose labels sel matches.
func (n budgetNamespace) List(sel labels.Selector) ([]*policyv1.PodDisruptionBudget, error) {
	if n.l.list == nil {
		return nil, nil
	}
	var out []*policyv1.PodDisruptionBudget
	for _, b := range n.l.list() {
		if (n.ns == "" || b.Namespace == n.ns) && sel.Matches(labels.Set(b.Labels)) {
			out = append(out, b)
		}
	}
	return out, nil
}

// Get returns the namespace's budget named name, else NotFound.
func (n budgetNamespace) Get(name string) (*policyv1.PodDisruptionBudget, error) {
	all, _ := n.List(labels.Everything())
	for _, b := range all {
		if b.Name == name {
			return b, nil
		}
	}
	return nil, apierrors.NewNotFound(policyv1.Resource("poddisruptionbudgets"), name)
}
