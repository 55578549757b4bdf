package plugins

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// hostnameKey is the topology key of one node's own domain.
const hostnameKey = "kubernetes.io/hostname"

// ReachesBeyond reports whether the deletion of gone may let pod onto
// nodes other than gone's own: gone counted against pod in a topology
// domain wider than a node, through
//   - pod's required anti-affinity, whose selector matches gone;
//   - gone's required anti-affinity, whose selector matches pod;
//   - pod's topology spread constraint that must be met (DoNotSchedule),
//     whose selector matches gone, in pod's namespace.
//
// It reads labels only, not the terms' namespaces, so it may answer yes
// for a pod that gone never counted against: the budget then does not
// hold that pod back, as kube-scheduler would not. O(terms + labels).
func ReachesBeyond(pod, gone *v1.Pod) bool {
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil &&
		anyTermSelects(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, gone.Labels) {
		return true
	}
	if a := gone.Spec.Affinity; a != nil && a.PodAntiAffinity != nil &&
		anyTermSelects(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, pod.Labels) {
		return true
	}
	if pod.Namespace != gone.Namespace {
		return false
	}
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == v1.DoNotSchedule && c.TopologyKey != hostnameKey && selects(c.LabelSelector, gone.Labels) {
			return true
		}
	}
	return false
}

// anyTermSelects reports whether a term over a domain wider than a node
// selects a pod with labels l.
func anyTermSelects(terms []v1.PodAffinityTerm, l map[string]string) bool {
	for _, t := range terms {
		if t.TopologyKey != hostnameKey && selects(t.LabelSelector, l) {
			return true
		}
	}
	return false
}

// selects reports whether sel selects labels l; a nil selector selects
// nothing, and one that does not parse everything (the answer that wakes).
func selects(sel *metav1.LabelSelector, l map[string]string) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return true
	}
	return s.Matches(labels.Set(l))
}
