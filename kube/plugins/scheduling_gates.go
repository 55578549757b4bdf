package plugins

import (
	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// SchedulingGates holds a pod back from scheduling while it has scheduling
// gates (spec.schedulingGates); the queue parks it as gated.
type SchedulingGates struct{}

var (
	_ framework.PreEnqueuePlugin  = SchedulingGates{}
	_ framework.EnqueueExtensions = SchedulingGates{}
)

// Name returns "SchedulingGates".
func (SchedulingGates) Name() string { return "SchedulingGates" }

// PreEnqueue admits a pod without gates.
func (SchedulingGates) PreEnqueue(pod *v1.Pod) bool { return len(pod.Spec.SchedulingGates) == 0 }

// EventsToRegister asks for the update that removes a pod's last gate.
func (pl SchedulingGates) EventsToRegister() []schedq.EventHint[*v1.Pod] {
	return []schedq.EventHint[*v1.Pod]{
		{Event: clusterevent.New(clusterevent.TargetPod, clusterevent.UpdatePodSchedulingGatesEliminated), Fn: pl.afterGatesRemoved},
	}
}

// afterGatesRemoved queues the pod when its own update left it without
// gates. Gates can only be removed, and only the pod's own matter.
func (SchedulingGates) afterGatesRemoved(pod *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
	_, updated, err := eventObjects[*v1.Pod](oldObj, newObj)
	if err != nil {
		return schedq.HintQueue, err
	}
	return hintIf(samePod(pod, updated) && len(updated.Spec.SchedulingGates) == 0), nil
}
