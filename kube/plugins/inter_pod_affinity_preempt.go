package plugins

import (
	"context"
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/schedq/schedq/kube/framework"
)

var _ framework.PreFilterExtensions = InterPodAffinity{}

// CloneState copies the counts, so that preemption's search can change
// them for one node without touching the cycle's. The trivial state is
// read-only and shared.
func (s *interPodAffinityState) CloneState() any {
	if s == noInterPodAffinity {
		return s
	}
	c := *s
	c.affinity, c.antiAffinity, c.existingAnti = maps.Clone(s.affinity), maps.Clone(s.antiAffinity), maps.Clone(s.existingAnti)
	return &c
}

// AddPod counts other as placed on node in state, as PreFilter would
// have. O(terms).
func (pl InterPodAffinity) AddPod(_ context.Context, state *framework.CycleState, pod, other *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return pl.update(state, pod, other, node, 1)
}

// RemovePod takes other off node in state, as if PreFilter had not seen
// it there. O(terms).
func (pl InterPodAffinity) RemovePod(_ context.Context, state *framework.CycleState, pod, other *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return pl.update(state, pod, other, node, -1)
}

func (InterPodAffinity) update(state *framework.CycleState, pod, other *framework.PodInfo, node *framework.NodeInfo, delta int) *framework.Status {
	v, _ := state.Read(interPodAffinityStateKey)
	s, ok := v.(*interPodAffinityState)
	if !ok {
		return framework.AsStatus(errNoInterPodAffinityState)
	}
	if s == noInterPodAffinity || node.Node == nil {
		return nil
	}
	nsLabels := s.nsLabels
	if nsLabels == nil {
		nsLabels = func(string) labels.Set { return nil }
	}
	n := node.Node
	if aff := pod.RequiredAffinity; len(aff) > 0 && matchesAllTerms(aff, other.Pod, nsLabels) {
		for _, t := range aff {
			s.affinity.shift(n, t.TopologyKey, delta)
		}
	}
	for _, t := range pod.RequiredAntiAffinity {
		if termMatches(t, other.Pod, nsLabels) {
			s.antiAffinity.shift(n, t.TopologyKey, delta)
		}
	}
	for _, t := range other.RequiredAntiAffinity {
		if termMatches(t, pod.Pod, nsLabels) {
			s.existingAnti.shift(n, t.TopologyKey, delta)
		}
	}
	return nil
}

// shift adds delta to node's domain of key, dropping a count that reaches
// zero so that an empty map still means "none anywhere".
func (c pairCounts) shift(node *v1.Node, key string, delta int) {
	v, ok := node.Labels[key]
	if !ok {
		return
	}
	p := topologyPair{key, v}
	if c[p] += delta; c[p] <= 0 {
		delete(c, p)
	}
}
