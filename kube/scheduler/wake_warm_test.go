package scheduler

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// TestWarmStartReplaysABoundPodToSpreadPods: a new leader replays a pod
// bound since a parked pod's failure as AssignedPodAdd to the pods whose
// rejecting plugins may take it, not only to those whose required
// affinity it satisfies: a pod PodTopologySpread rejected is woken by a
// matching pod bound in another zone since, as the live handlers (and
// kube-scheduler) would have woken it.
func TestWarmStartReplaysABoundPodToSpreadPods(t *testing.T) {
	zoned := func(name, zone string) *v1.Node {
		n := cpuNode(name, "4", 0)
		n.Labels = map[string]string{zoneLabel: zone}
		return n
	}
	withApp := func(p *v1.Pod, app string) *v1.Pod {
		p.Labels = map[string]string{"app": app}
		return p
	}
	tests := []struct {
		name  string
		app   string // of the pod bound since
		woken bool
	}{
		{name: "a pod the constraint counts", app: "x", woken: true},
		{name: "a pod it does not count", app: "y"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []*v1.Node{zoned("na", "a"), zoned("nb", "b")}
			r1 := withApp(boundPod("r1", "100m", "na", 10), "x")
			// The latest bound pod when the record was written: the
			// replay also covers the pods bound shortly before it.
			other := withApp(boundPod("other", "100m", "na", 100), "z")
			p := withApp(cpuPod("p", "100m"), "x")
			ignore := v1.NodeInclusionPolicyIgnore
			p.Spec.NodeSelector = map[string]string{zoneLabel: "a"}
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: zoneLabel, WhenUnsatisfiable: v1.DoNotSchedule,
				LabelSelector:      &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
				NodeAffinityPolicy: &ignore,
			}}
			// The previous leader's record, in the cluster it saw.
			prev := NewCache()
			for _, n := range nodes {
				prev.AddNode(n)
			}
			for _, ap := range []*v1.Pod{r1, other} {
				if err := prev.AddPod(ap); err != nil {
					t.Fatal(err)
				}
			}
			var st clusterState
			prev.View(func(framework.Snapshot) { st = prev.stateLocked() })
			raw, err := json.Marshal(newFailureRecord(p, []string{"PodTopologySpread"}, st))
			if err != nil {
				t.Fatal(err)
			}
			p.Annotations = map[string]string{FailureAnnotation: string(raw)}
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable}}
			if _, ok := parkable(p); !ok {
				t.Fatal("the record does not park the pod")
			}

			late := withApp(boundPod("late", "100m", "nb", 120), tc.app)
			c := cluster{nodes: nodes, assigned: []*v1.Pod{r1, other, late}, pending: []*v1.Pod{p}}
			q, h := newLeader(t, false, nil)
			c.list(h, false)
			if woken := where(q, "p") != schedq.InUnschedulable; woken != tc.woken {
				t.Fatalf("p woken %v by the replay of late, want %v (%v)", woken, tc.woken, where(q, "p"))
			}
		})
	}
}
