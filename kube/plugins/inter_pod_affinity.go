package plugins

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/schedq/schedq/kube/framework"
)

// InterPodAffinity's rejection reasons.
const (
	ReasonPodAffinity          = "node(s) didn't match pod affinity rules"
	ReasonPodAntiAffinity      = "node(s) didn't match pod anti-affinity rules"
	ReasonExistingAntiAffinity = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// interPodAffinityStateKey is where PreFilter leaves what Filter needs.
const interPodAffinityStateKey = "InterPodAffinity/state"

// InterPodAffinity enforces required pod affinity and anti-affinity, both
// the incoming pod's and the anti-affinity of the pods already placed.
// Preferred terms are not scored.
type InterPodAffinity struct{}

var (
	_ framework.PreFilterPlugin   = InterPodAffinity{}
	_ framework.FilterPlugin      = InterPodAffinity{}
	_ framework.EnqueueExtensions = InterPodAffinity{}
)

// Name returns "InterPodAffinity".
func (InterPodAffinity) Name() string { return "InterPodAffinity" }

// topologyPair is one topology domain: a node label key and its value.
type topologyPair struct{ key, value string }

// pairCounts counts pods per topology domain.
type pairCounts map[topologyPair]int

// add counts one pod in node's domain of key, if node has that label.
func (c pairCounts) add(node *v1.Node, key string) {
	if v, ok := node.Labels[key]; ok {
		c[topologyPair{key, v}]++
	}
}

// interPodAffinityState is what PreFilter learns from the snapshot.
type interPodAffinityState struct {
	// affinity counts, per domain of each of the pod's affinity terms, the
	// placed pods that match all of those terms.
	affinity pairCounts
	// antiAffinity counts, per domain of each of the pod's anti-affinity
	// terms, the placed pods matching that term.
	antiAffinity pairCounts
	// existingAnti counts, per domain of each anti-affinity term of a placed
	// pod, the terms that the incoming pod matches.
	existingAnti pairCounts
	// selfMatch: the pod matches all its own affinity terms, so it may be
	// the first of its group when no placed pod matches.
	selfMatch bool
	// nsLabels looks up namespace labels in the cycle's snapshot, for
	// AddPod and RemovePod (inter_pod_affinity_preempt.go).
	nsLabels func(string) labels.Set
}

// noInterPodAffinity is the state of a pod without terms in a cluster
// without pods with required anti-affinity: every node passes. Filter
// only reads it.
var noInterPodAffinity = &interPodAffinityState{}

// PreFilter indexes the placed pods that the pod's terms select and the
// placed pods whose anti-affinity selects it. Pods are scanned only when
// the incoming pod has terms; otherwise only the pods with required
// anti-affinity are, and no node at all when the snapshot says no node
// holds one: then every node passes, and PreFilter says Skip.
func (InterPodAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, snap framework.Snapshot) *framework.Status {
	aff, anti := pod.RequiredAffinity, pod.RequiredAntiAffinity
	if len(aff) == 0 && len(anti) == 0 && !snap.MayHavePodsWithRequiredAntiAffinity() {
		state.Write(interPodAffinityStateKey, noInterPodAffinity)
		return framework.NewStatus(framework.Skip)
	}
	s := &interPodAffinityState{affinity: pairCounts{}, antiAffinity: pairCounts{}, existingAnti: pairCounts{}}
	nsLabels := namespaceLabelsOnce(snap)
	for _, n := range snap.Nodes() {
		if len(aff) > 0 || len(anti) > 0 {
			for _, placed := range n.Pods {
				if len(aff) > 0 && matchesAllTerms(aff, placed.Pod, nsLabels) {
					for _, t := range aff {
						s.affinity.add(n.Node, t.TopologyKey)
					}
				}
				for _, t := range anti {
					if termMatches(t, placed.Pod, nsLabels) {
						s.antiAffinity.add(n.Node, t.TopologyKey)
					}
				}
			}
		}
		for _, placed := range n.PodsWithRequiredAntiAffinity {
			for _, t := range placed.RequiredAntiAffinity {
				if termMatches(t, pod.Pod, nsLabels) {
					s.existingAnti.add(n.Node, t.TopologyKey)
				}
			}
		}
	}
	s.selfMatch = len(aff) > 0 && matchesAllTerms(aff, pod.Pod, nsLabels)
	s.nsLabels = nsLabels
	state.Write(interPodAffinityStateKey, s)
	return nil
}

// namespaceLabelsOnce returns a lookup of namespace labels that asks snap
// at most once per namespace.
func namespaceLabelsOnce(snap framework.Snapshot) func(ns string) labels.Set {
	seen := map[string]labels.Set{}
	return func(ns string) labels.Set {
		l, ok := seen[ns]
		if !ok {
			l = snap.NamespaceLabels(ns)
			seen[ns] = l
		}
		return l
	}
}

// termMatches reports whether t selects pod, looking up namespace labels
// only when the term's namespace selector has to decide.
func termMatches(t framework.AffinityTerm, pod *v1.Pod, nsLabels func(string) labels.Set) bool {
	if t.NamespaceSelector == nil || t.Namespaces.Has(pod.Namespace) {
		return t.Matches(pod, nil)
	}
	return t.Matches(pod, nsLabels(pod.Namespace))
}

// matchesAllTerms reports whether pod matches every term (false for none).
func matchesAllTerms(terms []framework.AffinityTerm, pod *v1.Pod, nsLabels func(string) labels.Set) bool {
	for _, t := range terms {
		if !termMatches(t, pod, nsLabels) {
			return false
		}
	}
	return len(terms) > 0
}

var errNoInterPodAffinityState = errors.New("InterPodAffinity: no PreFilter state in the cycle")

// Filter checks, in order, the pod's affinity, its anti-affinity, and the
// anti-affinity of placed pods against the node's topology domains.
//
// Affinity needs, for every term, the node to have the term's topology key
// and a matching placed pod in the node's domain. When no placed pod
// matches anywhere, a pod that matches its own terms passes on any node with
// the keys: it starts its group. A node without a key, and a pod whose
// terms match no pod at all, not even itself, fail as unresolvable; a
// domain without a match while matches exist elsewhere fails as
// unschedulable.
func (InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	v, _ := state.Read(interPodAffinityStateKey)
	s, ok := v.(*interPodAffinityState)
	if !ok {
		return framework.AsStatus(errNoInterPodAffinityState)
	}
	if s == noInterPodAffinity {
		return nil // without looking at the node at all
	}
	labels := node.Node.Labels
	if terms := pod.RequiredAffinity; len(terms) > 0 {
		inDomain := true
		for _, t := range terms {
			v, ok := labels[t.TopologyKey]
			if !ok {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonPodAffinity)
			}
			if s.affinity[topologyPair{t.TopologyKey, v}] == 0 {
				inDomain = false
			}
		}
		switch {
		case inDomain:
		case len(s.affinity) == 0 && s.selfMatch:
		case len(s.affinity) == 0:
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonPodAffinity)
		default:
			return framework.NewStatus(framework.Unschedulable, ReasonPodAffinity)
		}
	}
	if len(s.antiAffinity) > 0 {
		for _, t := range pod.RequiredAntiAffinity {
			if v, ok := labels[t.TopologyKey]; ok && s.antiAffinity[topologyPair{t.TopologyKey, v}] > 0 {
				return framework.NewStatus(framework.Unschedulable, ReasonPodAntiAffinity)
			}
		}
	}
	if len(s.existingAnti) > 0 {
		for k, v := range labels {
			if s.existingAnti[topologyPair{k, v}] > 0 {
				return framework.NewStatus(framework.Unschedulable, ReasonExistingAntiAffinity)
			}
		}
	}
	return nil
}
