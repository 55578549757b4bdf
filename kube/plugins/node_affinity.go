package plugins

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// ReasonNodeAffinity is NodeAffinity's rejection reason.
const ReasonNodeAffinity = "node(s) didn't match Pod's node affinity/selector"

// nodeAffinityStateKey is where PreFilter leaves the parsed selector.
const nodeAffinityStateKey = "NodeAffinity/required"

// NodeAffinity enforces a pod's spec.nodeSelector and its required node
// affinity. It does not score preferred terms.
type NodeAffinity struct{}

var (
	_ framework.PreFilterPlugin   = NodeAffinity{}
	_ framework.FilterPlugin      = NodeAffinity{}
	_ framework.EnqueueExtensions = NodeAffinity{}
)

// Name returns "NodeAffinity".
func (NodeAffinity) Name() string { return "NodeAffinity" }

// PreFilter parses the pod's node selector and required affinity once per
// cycle, so that Filter does not parse them for every node. A pod with
// neither skips Filter.
func (NodeAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ framework.Snapshot) *framework.Status {
	if !hasRequiredNodeAffinity(pod.Pod) {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(nodeAffinityStateKey, nodeaffinity.GetRequiredNodeAffinity(pod.Pod))
	return nil
}

// hasRequiredNodeAffinity reports whether pod restricts its nodes by
// spec.nodeSelector or required node affinity.
func hasRequiredNodeAffinity(pod *v1.Pod) bool {
	if len(pod.Spec.NodeSelector) > 0 {
		return true
	}
	a := pod.Spec.Affinity
	return a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
}

// Filter fails a node that the pod's selector or required affinity does not
// select. A term that does not parse selects nothing, as in kube-scheduler.
func (NodeAffinity) Filter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	var required nodeaffinity.RequiredNodeAffinity
	if v, ok := state.Read(nodeAffinityStateKey); ok {
		required, _ = v.(nodeaffinity.RequiredNodeAffinity)
	} else {
		required = nodeaffinity.GetRequiredNodeAffinity(pod.Pod)
	}
	if ok, _ := required.Match(node.Node); ok {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonNodeAffinity)
}

// EventsToRegister asks for new nodes and label changes.
func (pl NodeAffinity) EventsToRegister() []schedq.EventHint[*v1.Pod] {
	return []schedq.EventHint[*v1.Pod]{
		{Event: clusterevent.New(clusterevent.Node, clusterevent.Add|clusterevent.UpdateNodeLabel), Fn: pl.afterNodeChange},
	}
}

// afterNodeChange queues the pod when a node it selects is added, or when a
// label update makes a node it did not select selectable. An update of a
// node it already selected cannot be what NodeAffinity was waiting for:
// that node never failed NodeAffinity, and the nodes that did are unchanged.
func (NodeAffinity) afterNodeChange(pod *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
	oldNode, newNode, err := nodeEvent(oldObj, newObj)
	if err != nil {
		return schedq.HintQueue, err
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	if ok, err := required.Match(newNode); err != nil || !ok {
		return schedq.HintSkip, nil // a broken term never matches
	}
	if oldNode != nil {
		if matched, _ := required.Match(oldNode); matched {
			return schedq.HintSkip, nil
		}
	}
	return schedq.HintQueue, nil
}
