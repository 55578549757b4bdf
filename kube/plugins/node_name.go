package plugins

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// ReasonNodeName is NodeName's rejection reason.
const ReasonNodeName = "node(s) didn't match the requested node name"

// NodeName confines a pod with spec.nodeName set to that node.
type NodeName struct{}

var (
	_ framework.FilterPlugin      = NodeName{}
	_ framework.EnqueueExtensions = NodeName{}
)

// Name returns "NodeName".
func (NodeName) Name() string { return "NodeName" }

// Filter fails every node but the one the pod names, if it names one.
func (NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	if want := pod.Pod.Spec.NodeName; want != "" && want != node.Name() {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonNodeName)
	}
	return nil
}

// EventsToRegister asks for new nodes only: a node's name never changes.
func (pl NodeName) EventsToRegister() []schedq.EventHint[*v1.Pod] {
	return []schedq.EventHint[*v1.Pod]{
		{Event: clusterevent.New(clusterevent.Node, clusterevent.Add), Fn: pl.afterNodeAdd},
	}
}

// afterNodeAdd queues the pod when the node it names is added.
func (NodeName) afterNodeAdd(pod *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
	_, node, err := nodeEvent(oldObj, newObj)
	if err != nil {
		return schedq.HintQueue, err
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName == node.Name {
		return schedq.HintQueue, nil
	}
	return schedq.HintSkip, nil
}
