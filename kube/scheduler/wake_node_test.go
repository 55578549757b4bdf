package scheduler

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
)

// TestNodeUpdateWakesTheRejectedPod drives the real handlers, scheduler
// and queue on kube-scheduler's default profile: a pod is rejected by one
// plugin on the only node, the node is updated, and the pod must be woken
// exactly when kube-scheduler v1.37.2 would wake it (its
// NodeSchedulingPropertiesChange gives the update's events, the plugin's
// hint judges them).
func TestNodeUpdateWakesTheRejectedPod(t *testing.T) {
	userNSHostNet := func(p *v1.Pod) {
		off := false
		p.Spec.HostNetwork = true
		p.Spec.HostUsers = &off
	}
	tests := []struct {
		name   string
		pod    func(*v1.Pod)  // makes the pod fail on the node
		node   func(*v1.Node) // the node it fails on
		update func(*v1.Node) // the node's update
		plugin string         // the plugin that rejects it
		woken  bool
	}{
		{
			name:   "declared feature the pod needs appears",
			pod:    userNSHostNet,
			update: func(n *v1.Node) { n.Status.DeclaredFeatures = []string{"UserNamespacesHostNetworkSupport"} },
			plugin: "NodeDeclaredFeatures", woken: true,
		},
		{
			name:   "annotation only, for a pod missing a declared feature",
			pod:    userNSHostNet,
			update: func(n *v1.Node) { n.Annotations = map[string]string{"note": "x"} },
			plugin: "NodeDeclaredFeatures",
		},
		{
			name:   "taint removed",
			node:   func(n *v1.Node) { n.Spec.Taints = []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}} },
			update: func(n *v1.Node) { n.Spec.Taints = nil },
			plugin: "TaintToleration", woken: true,
		},
		{
			name:   "cordon lifted",
			node:   func(n *v1.Node) { n.Spec.Unschedulable = true },
			update: func(n *v1.Node) { n.Spec.Unschedulable = false },
			plugin: "NodeUnschedulable", woken: true,
		},
		{
			name:   "allocatable grown",
			pod:    func(p *v1.Pod) { *p = *pod(p.Name, 4000) },
			update: func(n *v1.Node) { *n = *node(n.Name, 8000) },
			plugin: "NodeResourcesFit", woken: true,
		},
		{
			name:   "annotation only, for a pod too large",
			pod:    func(p *v1.Pod) { *p = *pod(p.Name, 4000) },
			update: func(n *v1.Node) { n.Annotations = map[string]string{"note": "x"} },
			plugin: "NodeResourcesFit",
		},
		{
			name:   "label the selector wants",
			pod:    func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} },
			update: func(n *v1.Node) { n.Labels = map[string]string{"disk": "ssd"} },
			plugin: "NodeAffinity", woken: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFWFixture(t, nil, nil)
			old := node("n", 2000)
			if tc.node != nil {
				tc.node(old)
			}
			f.h.AddNode(old)
			p := pod("p", 100)
			if tc.pod != nil {
				tc.pod(p)
			}
			f.h.AddPod(p)
			out := f.once()
			if out.Result != Unschedulable || !slices.Equal(out.Plugins, []string{tc.plugin}) {
				t.Fatalf("first attempt %v by %v (%s), want Unschedulable by %s", out.Result, out.Plugins, out.Message, tc.plugin)
			}
			if loc := f.where("p"); loc != schedq.InUnschedulable {
				t.Fatalf("pod %v after its rejection, want parked", loc)
			}
			updated := old.DeepCopy()
			tc.update(updated)
			f.h.UpdateNode(old, updated)
			if woken := f.where("p") != schedq.InUnschedulable; woken != tc.woken {
				t.Fatalf("woken %v by the update (events %v), want %v", woken, NodeUpdateEvents(old, updated), tc.woken)
			}
		})
	}
}
