package profile

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
)

// findHint returns plugin's registration that hears ev.
func findHint(t *testing.T, hints map[string][]schedq.EventHint[*v1.Pod], plugin string, ev schedq.Event) schedq.EventHint[*v1.Pod] {
	t.Helper()
	for _, h := range hints[plugin] {
		if clusterevent.Match(h.Event, ev) {
			return h
		}
	}
	t.Fatalf("%s has no registration for %s; it has %v", plugin, ev.Label, hints[plugin])
	return schedq.EventHint[*v1.Pod]{}
}

func TestQueueHintsOfTheDefaultProfile(t *testing.T) {
	f := defaultFramework(t, Cluster{Nodes: []*v1.Node{node("n1", "a")}})
	hints, gates, err := QueueHints(context.Background(), f.Framework(), klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	big := pod("big", "", func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("4") })
	small := node("small", "a")
	small.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("1")
	large := node("large", "a")

	t.Run("NodeResourcesFit skips a new node too small for the pod", func(t *testing.T) {
		h := findHint(t, hints, "NodeResourcesFit", clusterevent.New(clusterevent.Node, clusterevent.Add))
		if got, err := h.Fn(big, nil, small); got != schedq.HintSkip || err != nil {
			t.Errorf("small node: %v, %v; want skip", got, err)
		}
		if got, err := h.Fn(big, nil, large); got != schedq.HintQueue || err != nil {
			t.Errorf("large node: %v, %v; want queue", got, err)
		}
	})
	t.Run("every hint queues on an event without objects", func(t *testing.T) {
		// A new leader replays what changed while it waited as events
		// without objects; upstream's hints may dereference them.
		for plugin, regs := range hints {
			for _, h := range regs {
				if h.Fn == nil {
					continue
				}
				if got, err := h.Fn(big, nil, nil); got != schedq.HintQueue || err != nil {
					t.Errorf("%s on %s without objects: %v, %v; want queue", plugin, h.Event.Label, got, err)
				}
			}
		}
	})
	t.Run("a hint that panics queues the pod", func(t *testing.T) {
		fn := hintFn(klog.Background(), "Broken", func(klog.Logger, *v1.Pod, any, any) (fwk.QueueingHint, error) {
			var n *v1.Node
			_ = n.Name
			return fwk.QueueSkip, nil
		})
		if got, err := fn(big, nil, small); got != schedq.HintQueue || err == nil {
			t.Errorf("panicking hint: %v, %v; want queue with an error", got, err)
		}
	})
	t.Run("a Pod registration hears the unscheduled pod's own events", func(t *testing.T) {
		findHint(t, hints, "SchedulingGates", clusterevent.New(clusterevent.TargetPod, clusterevent.UpdatePodSchedulingGatesEliminated))
	})
	t.Run("VolumeBinding wakes on claims, DynamicResources on slices", func(t *testing.T) {
		findHint(t, hints, "VolumeBinding", clusterevent.New(clusterevent.PersistentVolumeClaim, clusterevent.Add))
		findHint(t, hints, "DynamicResources", clusterevent.New(clusterevent.ResourceSlice, clusterevent.Add))
	})
	t.Run("a general node update does not wake a plugin that asked for taints only", func(t *testing.T) {
		for _, h := range hints["TaintToleration"] {
			if clusterevent.Match(h.Event, clusterevent.New(clusterevent.Node, clusterevent.Update)) {
				t.Errorf("TaintToleration's %s hears a general node update", h.Event.Label)
			}
		}
	})
	t.Run("labels are kube-scheduler's", func(t *testing.T) {
		ev := fwk.ClusterEvent{Resource: fwk.CSINode, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}
		if got := Event(ev); got.Label != "storage.k8s.io/CSINodeAdd|UpdateNodeAllocatable" || got.Kind != clusterevent.CSINode {
			t.Errorf("Event(%v) = %+v", ev, got)
		}
		if got := Event(fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}); got.Label != (fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}).Label() {
			t.Errorf("label %q", got.Label)
		}
	})
	t.Run("SchedulingGates gates a gated pod", func(t *testing.T) {
		var gate *schedq.PreEnqueue[*v1.Pod]
		for i := range gates {
			if gates[i].Name == "SchedulingGates" {
				gate = &gates[i]
			}
		}
		if gate == nil {
			t.Fatalf("no SchedulingGates gate among %d", len(gates))
		}
		gated := pod("gated", "", func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "wait"}} })
		if gate.Admit(gated) || !gate.Admit(pod("free", "")) {
			t.Errorf("admit gated %v, free %v; want false, true", gate.Admit(gated), gate.Admit(pod("free", "")))
		}
	})
	t.Run("every Filter plugin of the profile has hints", func(t *testing.T) {
		for _, name := range []string{"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
			"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources"} {
			if len(hints[name]) == 0 {
				t.Errorf("%s: no registrations", name)
			}
		}
	})
}
