package plugins

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// TaintToleration keeps pods off nodes with a NoSchedule or NoExecute taint
// that they do not tolerate.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin      = TaintToleration{}
	_ framework.EnqueueExtensions = TaintToleration{}
)

// Name returns "TaintToleration".
func (TaintToleration) Name() string { return "TaintToleration" }

// ReasonUntoleratedTaint is TaintToleration's rejection reason for taint,
// as in "node(s) had untolerated taint {dedicated: gpu}".
func ReasonUntoleratedTaint(taint v1.Taint) string {
	return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value)
}

// Filter fails a node with a scheduling taint the pod does not tolerate,
// naming the first such taint.
func (TaintToleration) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	taint, found := untoleratedTaint(pod.Pod, node.Taints)
	if !found {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonUntoleratedTaint(taint))
}

// EventsToRegister asks for new nodes, taint changes, and the pod's own
// toleration updates.
func (pl TaintToleration) EventsToRegister() []schedq.EventHint[*v1.Pod] {
	return []schedq.EventHint[*v1.Pod]{
		{Event: clusterevent.New(clusterevent.Node, clusterevent.Add|clusterevent.UpdateNodeTaint), Fn: pl.afterNodeChange},
		{Event: clusterevent.New(clusterevent.TargetPod, clusterevent.UpdatePodToleration), Fn: pl.afterTolerationChange},
	}
}

// afterNodeChange queues the pod when a node whose taints it tolerates
// appears, or when a taint update makes a node it did not tolerate
// tolerable. A node it tolerated before the update was not the problem.
func (TaintToleration) afterNodeChange(pod *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
	oldNode, newNode, err := nodeEvent(oldObj, newObj)
	if err != nil {
		return schedq.HintQueue, err
	}
	if _, blocked := untoleratedTaint(pod, newNode.Spec.Taints); blocked {
		return schedq.HintSkip, nil
	}
	if oldNode != nil {
		if _, blockedBefore := untoleratedTaint(pod, oldNode.Spec.Taints); !blockedBefore {
			return schedq.HintSkip, nil
		}
	}
	return schedq.HintQueue, nil
}

// afterTolerationChange queues the pod on its own toleration update: the
// new toleration may match the taint that stopped it (the hint has no nodes
// to check against). Tolerations can only be added, so the update never
// makes things worse.
func (TaintToleration) afterTolerationChange(pod *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
	_, updated, err := eventObjects[*v1.Pod](oldObj, newObj)
	if err != nil {
		return schedq.HintQueue, err
	}
	if samePod(pod, updated) {
		return schedq.HintQueue, nil
	}
	return schedq.HintSkip, nil
}
