package plugins

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// ReasonNodeUnschedulable is NodeUnschedulable's rejection reason.
const ReasonNodeUnschedulable = "node(s) were unschedulable"

// unschedulableTaint is the taint that a cordoned node stands for: a pod that
// tolerates it may land on a node with spec.unschedulable set.
var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// NodeUnschedulable rejects cordoned nodes (spec.unschedulable) for pods
// that do not tolerate the node.kubernetes.io/unschedulable:NoSchedule taint.
type NodeUnschedulable struct{}

var (
	_ framework.FilterPlugin      = NodeUnschedulable{}
	_ framework.EnqueueExtensions = NodeUnschedulable{}
)

// Name returns "NodeUnschedulable".
func (NodeUnschedulable) Name() string { return "NodeUnschedulable" }

// Filter fails a cordoned node unless the pod tolerates cordoning.
func (NodeUnschedulable) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	if !node.Unschedulable || tolerates(pod.Pod.Spec.Tolerations, &unschedulableTaint) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonNodeUnschedulable)
}

// admitsUnschedulable reports whether node's cordon leaves room for pod.
func admitsUnschedulable(pod *v1.Pod, node *v1.Node) bool {
	return !node.Spec.Unschedulable || tolerates(pod.Spec.Tolerations, &unschedulableTaint)
}

// EventsToRegister asks for new nodes and taint changes (uncordoning shows
// up as a taint update), and for the pod's own toleration updates.
func (pl NodeUnschedulable) EventsToRegister() []schedq.EventHint[*v1.Pod] {
	return []schedq.EventHint[*v1.Pod]{
		{Event: clusterevent.New(clusterevent.Node, clusterevent.Add|clusterevent.UpdateNodeTaint), Fn: pl.afterNodeChange},
		{Event: clusterevent.New(clusterevent.TargetPod, clusterevent.UpdatePodToleration), Fn: pl.afterTolerationChange},
	}
}

// afterNodeChange queues the pod when a node that lets it in appears: a new
// node it admits, or an update that turns a refusing node into one that
// admits it. Updates of a node that already admitted it change nothing.
func (NodeUnschedulable) afterNodeChange(pod *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
	oldNode, newNode, err := nodeEvent(oldObj, newObj)
	if err != nil {
		return schedq.HintQueue, err
	}
	if !admitsUnschedulable(pod, newNode) {
		return schedq.HintSkip, nil
	}
	if oldNode != nil && admitsUnschedulable(pod, oldNode) {
		return schedq.HintSkip, nil
	}
	return schedq.HintQueue, nil
}

// afterTolerationChange queues the pod when its own update made it tolerate
// cordoned nodes. Another pod's update never helps it.
func (NodeUnschedulable) afterTolerationChange(pod *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
	_, updated, err := eventObjects[*v1.Pod](oldObj, newObj)
	if err != nil {
		return schedq.HintQueue, err
	}
	if !samePod(pod, updated) || !tolerates(updated.Spec.Tolerations, &unschedulableTaint) {
		return schedq.HintSkip, nil
	}
	return schedq.HintQueue, nil
}
