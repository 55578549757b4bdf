package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq/kube/plugins"
)

// TestAssignedPodAddWakesTheRejectedGroup is
// TestAssignedPodAddWakesTheRejectedPod for a group parked on the plugins
// that rejected its members, with the handlers' targeted move on
// (AffinityMatch and the hints, as NewHandlers sets them): an assigned
// pod's arrival that a rejecting plugin's hint accepts wakes the group,
// as kube-scheduler v1.37.2 wakes its members. Before, the targeted move
// read the members' own status, which holds none of their group's
// rejecting plugins, so only required pod affinity could wake a group:
// one rejected by PodTopologySpread, or by GangScheduling for want of the
// member that arrived bound, stayed parked until the 5-minute flush.
func TestAssignedPodAddWakesTheRejectedGroup(t *testing.T) {
	spread := func(_ int, p *v1.Pod) {
		ignore := v1.NodeInclusionPolicyIgnore
		p.Labels = map[string]string{"app": "x"}
		p.Spec.NodeSelector = map[string]string{zoneLabel: "a"}
		p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: zoneLabel, WhenUnsatisfiable: v1.DoNotSchedule,
			LabelSelector:      &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			NodeAffinityPolicy: &ignore,
		}}
	}
	bound := memberPod("g-2", "g", 100)
	bound.Spec.NodeName = "na"
	tests := []struct {
		name     string
		minCount int32
		members  int
		mutate   func(int, *v1.Pod)
		running  []*v1.Pod
		plugin   string
		added    *v1.Pod
		woken    bool
	}{
		{
			name: "spread: a matching pod in the other zone", minCount: 1, members: 1, mutate: spread,
			running: []*v1.Pod{labelled(runningPod("r1", "na", 100, 0, t0), "app", "x")},
			plugin:  "PodTopologySpread",
			added:   labelled(runningPod("r2", "nb", 100, 0, t0), "app", "x"), woken: true,
		},
		{
			name: "spread: a pod the selector does not match", minCount: 1, members: 1, mutate: spread,
			running: []*v1.Pod{labelled(runningPod("r1", "na", 100, 0, t0), "app", "x")},
			plugin:  "PodTopologySpread",
			added:   labelled(runningPod("r2", "nb", 100, 0, t0), "app", "y"),
		},
		{
			name: "gang: its missing member, bound", minCount: 3, members: 2,
			plugin: "GangScheduling", added: bound, woken: true,
		},
		{
			name: "gang: a lone pod, bound", minCount: 3, members: 2,
			plugin: "GangScheduling", added: runningPod("lone", "na", 100, 0, t0),
		},
	}
	hints := testQueueConfig(t).Hints
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFWFixture(t, nil, nil)
			f.h.AffinityMatch = plugins.MatchesRequiredAffinity
			f.h.Hints = hints // as NewHandlers sets them
			f.h.AddNode(zonedNode("na", "a"))
			f.h.AddNode(zonedNode("nb", "b"))
			for _, r := range tc.running {
				f.h.AddPod(r)
			}
			f.addFWGang("g", tc.minCount, tc.members, tc.mutate)
			f.parkedThenWokenBy(t, "g-0", tc.plugin, tc.added, tc.woken)
		})
	}
}
