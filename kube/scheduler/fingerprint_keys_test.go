package scheduler

import (
	"maps"
	"slices"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestSortedKeys: the keys of maps below, at and above the buffer's size
// come out sorted, each once, as slices.Sorted gives them, so the hashes
// of labels and resource lists do not depend on the map's order.
func TestSortedKeys(t *testing.T) {
	for n := range 13 {
		m := map[string]string{}
		for i := range n {
			m["k"+strconv.Itoa((i*7)%13)] = "v"
		}
		got := sortedKeys(m, &[8]string{})
		if want := slices.Sorted(maps.Keys(m)); !slices.Equal(got, want) {
			t.Errorf("%d keys: %v, want %v", n, got, want)
		}
	}
}

// TestNodeHashSeesEveryNodeUpdateEvent: every node change that
// NodeUpdateEvents turns into an event also changes the node's
// fingerprint hash, so that the warm start of a new leader replays it to
// the pods parked before it (a change the hash missed would leave them
// parked, though the live handlers would have woken them).
func TestNodeHashSeesEveryNodeUpdateEvent(t *testing.T) {
	tests := []struct {
		name   string
		change func(*v1.Node)
	}{
		{"allocatable", func(n *v1.Node) { *n = *node(n.Name, 2000) }},
		{"label", func(n *v1.Node) { n.Labels = map[string]string{"zone": "a"} }},
		{"taint", func(n *v1.Node) { n.Spec.Taints = []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}} }},
		{"cordon", func(n *v1.Node) { n.Spec.Unschedulable = true }},
		{"condition", func(n *v1.Node) {
			n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
		}},
		{"annotation", func(n *v1.Node) { n.Annotations = map[string]string{"note": "x"} }},
		{"declared feature", func(n *v1.Node) { n.Status.DeclaredFeatures = []string{"UserNamespacesHostNetworkSupport"} }},
		{"preemption policy", func(n *v1.Node) {
			n.Spec.PodPreemptionPolicy = &v1.NodePodPreemptionPolicy{DisableResizePreemption: []string{"autoscaler"}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := node("n", 1000)
			changed := old.DeepCopy()
			tc.change(changed)
			if len(NodeUpdateEvents(old, changed)) == 0 {
				t.Fatal("NodeUpdateEvents sees no change")
			}
			if nodeHash(old) == nodeHash(changed) {
				t.Fatalf("nodeHash is blind to the change (events %v)", NodeUpdateEvents(old, changed))
			}
		})
	}
}
