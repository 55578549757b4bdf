package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
)

// TestEventDuringTheAttemptWakesThePodAtRequeue: an event that reaches
// the handlers while a pod's attempt is under way is recorded, and when
// the attempt fails the rejecting plugin's hint judges it, as
// kube-scheduler's in-flight events are: the pod is not parked if the
// event may help it (default profile's hints, real handlers and queue).
func TestEventDuringTheAttemptWakesThePodAtRequeue(t *testing.T) {
	taint := v1.Taint{Key: "k", Effect: v1.TaintEffectNoSchedule}
	tests := []struct {
		name   string
		event  func(f *fixture, n *v1.Node, p *v1.Pod)
		plugin string
		woken  bool
	}{
		{
			name: "node untainted",
			event: func(f *fixture, n *v1.Node, _ *v1.Pod) {
				u := n.DeepCopy()
				u.Spec.Taints = nil
				f.h.UpdateNode(n, u)
			},
			plugin: "TaintToleration", woken: true,
		},
		{
			name: "node annotated only",
			event: func(f *fixture, n *v1.Node, _ *v1.Pod) {
				u := n.DeepCopy()
				u.Annotations = map[string]string{"note": "x"}
				f.h.UpdateNode(n, u)
			},
			plugin: "TaintToleration",
		},
		{
			name: "the pod tolerates the taint",
			event: func(f *fixture, _ *v1.Node, p *v1.Pod) {
				u := p.DeepCopy()
				u.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}
				f.h.UpdatePod(p, u)
			},
			plugin: "TaintToleration", woken: true,
		},
		{
			name: "the pod relabelled only",
			event: func(f *fixture, _ *v1.Node, p *v1.Pod) {
				u := p.DeepCopy()
				u.Labels = map[string]string{"a": "b"}
				f.h.UpdatePod(p, u)
			},
			plugin: "TaintToleration",
		},
		{
			name: "an assigned pod deleted",
			event: func(f *fixture, _ *v1.Node, _ *v1.Pod) {
				r := runningPod("r", "n", 500, 0, t0)
				f.h.AddPod(r)
				f.h.DeletePod(r)
			},
			plugin: "NodeResourcesFit", woken: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFWFixture(t, nil, nil)
			n := node("n", 2000, taint)
			f.h.AddNode(n)
			p := pod("p", 100)
			f.h.AddPod(p)
			a, ok := tryPop(f.q)
			if !ok {
				t.Fatal("nothing to pop")
			}
			tc.event(f, n, p)
			if err := f.q.Requeue(a, schedq.Failure{RejectedBy: []string{tc.plugin}, Message: "rejected"}); err != nil {
				t.Fatal(err)
			}
			if woken := f.where("p") != schedq.InUnschedulable; woken != tc.woken {
				t.Fatalf("woken %v at the requeue, want %v (location %v)", woken, tc.woken, f.where("p"))
			}
		})
	}
}
