package plugins

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// MatchesRequiredAffinity reports whether assigned (in a namespace labelled
// nsLabels) matches at least one of queued's required pod affinity terms:
// placing assigned may then help queued. A queued pod whose terms do not
// parse can never be helped and gets false.
func MatchesRequiredAffinity(queued *v1.Pod, assigned *v1.Pod, nsLabels labels.Set) bool {
	if !hasRequiredPodAffinity(queued) {
		return false
	}
	pi, err := framework.NewPodInfo(queued)
	if err != nil {
		return false
	}
	for _, t := range pi.RequiredAffinity {
		if t.Matches(assigned, nsLabels) {
			return true
		}
	}
	return false
}

func hasRequiredPodAffinity(p *v1.Pod) bool {
	a := p.Spec.Affinity
	return a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

func hasRequiredPodAntiAffinity(p *v1.Pod) bool {
	a := p.Spec.Affinity
	return a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

// podTerms parses p's required (anti-)affinity terms with framework.NewPodInfo,
// handing it a pod stripped to namespace and affinity so that it does not
// also sum container requests.
func podTerms(p *v1.Pod) (*framework.PodInfo, error) {
	if !hasRequiredPodAffinity(p) && !hasRequiredPodAntiAffinity(p) {
		return &framework.PodInfo{Pod: p}, nil
	}
	return framework.NewPodInfo(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace},
		Spec:       v1.PodSpec{Affinity: p.Spec.Affinity},
	})
}

// mayMatch reports whether t may select p when the labels of p's namespace
// are unknown, as in a hint: a term with a non-empty namespace selector is
// assumed to take any namespace. Since a pod's namespace never changes,
// comparing mayMatch before and after a label update is exact in the
// selector, the part that changed.
func mayMatch(t framework.AffinityTerm, p *v1.Pod) bool {
	if !t.Namespaces.Has(p.Namespace) && t.NamespaceSelector == nil {
		return false
	}
	return t.Selector.Matches(labels.Set(p.Labels))
}

func mayMatchAll(terms []framework.AffinityTerm, p *v1.Pod) bool {
	for _, t := range terms {
		if !mayMatch(t, p) {
			return false
		}
	}
	return len(terms) > 0
}

func mayMatchAny(terms []framework.AffinityTerm, p *v1.Pod) bool {
	for _, t := range terms {
		if mayMatch(t, p) {
			return true
		}
	}
	return false
}

// EventsToRegister asks for bound pods coming, going and relabelled (and the
// pod's own relabelling), and for new nodes and node label changes.
func (pl InterPodAffinity) EventsToRegister() []schedq.EventHint[*v1.Pod] {
	return []schedq.EventHint[*v1.Pod]{
		{Event: clusterevent.New(clusterevent.Pod, clusterevent.Add|clusterevent.Delete|clusterevent.UpdatePodLabel), Fn: pl.afterPodChange},
		{Event: clusterevent.New(clusterevent.Node, clusterevent.Add|clusterevent.UpdateNodeLabel), Fn: pl.afterNodeChange},
	}
}

// afterPodChange queues the pod when a bound pod's arrival, departure or
// relabelling can lift what InterPodAffinity rejected it for:
//
//   - the pod's own labels changed: placed pods' anti-affinity may no
//     longer select it, or it may now start its own group;
//   - a bound pod arrives, or is relabelled into, matching all the pod's
//     affinity terms (kube-scheduler needs one pod matching them all);
//   - a bound pod leaves, or is relabelled out of, one of the pod's
//     anti-affinity terms;
//   - a bound pod whose anti-affinity selected the pod leaves;
//   - a bound pod matching all the pod's affinity terms leaves or is
//     relabelled away while the pod matches its own terms: it may have been
//     the last match, after which the pod may start the group anywhere.
//
// Unbound pods count for nothing and are skipped.
func (InterPodAffinity) afterPodChange(pod *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
	oldPod, newPod, err := podEvent(oldObj, newObj)
	if err != nil {
		return schedq.HintQueue, err
	}
	if samePod(pod, newPod) {
		if oldPod != nil {
			return schedq.HintQueue, nil
		}
		return schedq.HintSkip, nil
	}
	if samePod(pod, oldPod) {
		return schedq.HintSkip, nil
	}
	if (newPod != nil && newPod.Spec.NodeName == "") || (newPod == nil && oldPod.Spec.NodeName == "") {
		return schedq.HintSkip, nil
	}
	own, err := podTerms(pod)
	if err != nil {
		return schedq.HintSkip, nil // PreFilter cannot parse it either
	}
	aff, anti := own.RequiredAffinity, own.RequiredAntiAffinity
	startsGroup := mayMatchAll(aff, pod)
	switch {
	case oldPod == nil: // added
		return hintIf(mayMatchAll(aff, newPod)), nil
	case newPod == nil: // deleted
		if mayMatchAny(anti, oldPod) || startsGroup && mayMatchAll(aff, oldPod) {
			return schedq.HintQueue, nil
		}
		if hasRequiredPodAntiAffinity(oldPod) {
			theirs, err := podTerms(oldPod)
			if err != nil || mayMatchAny(theirs.RequiredAntiAffinity, pod) {
				return schedq.HintQueue, err
			}
		}
		return schedq.HintSkip, nil
	}
	// relabelled
	wasAll, isAll := mayMatchAll(aff, oldPod), mayMatchAll(aff, newPod)
	if !wasAll && isAll || wasAll && !isAll && startsGroup {
		return schedq.HintQueue, nil
	}
	for _, t := range anti {
		if mayMatch(t, oldPod) && !mayMatch(t, newPod) {
			return schedq.HintQueue, nil
		}
	}
	return schedq.HintSkip, nil
}

// afterNodeChange skips a new or relabelled node that lacks one of the
// topology keys of the pod's affinity terms: such a node fails affinity
// whatever pods run where. Any other node is queued: the hint cannot see
// where the matching pods run, and a pod rejected only for anti-affinity
// (its own, or that of placed pods, whose keys the hint does not know) may
// fit a node in a new domain or a node that lost a label.
func (InterPodAffinity) afterNodeChange(pod *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
	_, node, err := nodeEvent(oldObj, newObj)
	if err != nil {
		return schedq.HintQueue, err
	}
	if !hasRequiredPodAffinity(pod) {
		return schedq.HintQueue, nil
	}
	for _, term := range pod.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if _, ok := node.Labels[term.TopologyKey]; !ok {
			return schedq.HintSkip, nil
		}
	}
	return schedq.HintQueue, nil
}

func hintIf(queue bool) schedq.Hint {
	if queue {
		return schedq.HintQueue
	}
	return schedq.HintSkip
}
