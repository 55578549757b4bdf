package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
)

// TestPodOwnUpdateWakesTheParkedPod: a pod parked behind one plugin of
// the default profile is updated (the informer's update of the pod
// itself, a TargetPod event), and is woken exactly when kube-scheduler
// v1.37.2's PodSchedulingPropertiesChange gives an event the plugin
// registered for and its hint accepts. Real handlers and queue; the
// rejection is the queue's requeue of the failed attempt.
func TestPodOwnUpdateWakesTheParkedPod(t *testing.T) {
	claim := "p-gpu"
	tests := []struct {
		name   string
		update func(*v1.Pod)
		plugin string
		woken  bool
	}{
		{
			name: "extended resource claim generated",
			update: func(p *v1.Pod) {
				p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: claim}
			},
			plugin: "DynamicResources", woken: true,
		},
		{
			name: "resource claim generated",
			update: func(p *v1.Pod) {
				p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &claim}}
			},
			plugin: "DynamicResources", woken: true,
		},
		{
			name:   "relabelled, for DynamicResources",
			update: func(p *v1.Pod) { p.Labels = map[string]string{"a": "b"} },
			plugin: "DynamicResources",
		},
		{
			name:   "toleration added",
			update: func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}} },
			plugin: "TaintToleration", woken: true,
		},
		{
			name:   "scaled down",
			update: func(p *v1.Pod) { *p = *pod(p.Name, 100) },
			plugin: "NodeResourcesFit", woken: true,
		},
		{
			name:   "scaled up",
			update: func(p *v1.Pod) { *p = *pod(p.Name, 9000) },
			plugin: "NodeResourcesFit",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFWFixture(t, nil, nil)
			f.h.AddNode(node("n", 2000))
			p := pod("p", 4000)
			f.h.AddPod(p)
			a, ok := tryPop(f.q)
			if !ok {
				t.Fatal("nothing to pop")
			}
			if err := f.q.Requeue(a, schedq.Failure{RejectedBy: []string{tc.plugin}, Message: "rejected"}); err != nil {
				t.Fatal(err)
			}
			if loc := f.where("p"); loc != schedq.InUnschedulable {
				t.Fatalf("pod %v after its rejection, want parked", loc)
			}
			u := p.DeepCopy()
			tc.update(u)
			f.h.UpdatePod(p, u)
			if woken := f.where("p") != schedq.InUnschedulable; woken != tc.woken {
				t.Fatalf("woken %v by its update (events %v), want %v", woken, PodUpdateEvents(p, u), tc.woken)
			}
		})
	}
}
