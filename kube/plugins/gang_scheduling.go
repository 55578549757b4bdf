package plugins

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// GangScheduling is the all-or-nothing rule of pod groups: a group attempt
// succeeds only if at least minCount of the group's members are bound or
// placed, counting those bound by earlier attempts, and at least one is
// placed by this attempt. A PodGroup with the basic policy has minCount 1.
// Its PreEnqueue side, which holds back a group with fewer members than
// minCount, needs the scheduler's count of members: it is
// scheduler.UseGangGate, a gate of this name, which these hints lift.
type GangScheduling struct{}

// GangSchedulingName is the plugin's name, as failures and hints name it.
const GangSchedulingName = "GangScheduling"

var (
	_ framework.GroupPlugin       = GangScheduling{}
	_ framework.EnqueueExtensions = GangScheduling{}
)

// Name returns "GangScheduling".
func (GangScheduling) Name() string { return GangSchedulingName }

// Quorum implements framework.GroupPlugin. O(1).
func (GangScheduling) Quorum(scheduled, placedNow, remaining, minCount int) framework.Quorum {
	switch {
	case scheduled >= minCount && placedNow > 0:
		return framework.QuorumMet
	case scheduled+remaining < minCount, remaining == 0:
		return framework.QuorumLost
	}
	return framework.QuorumWait
}

// EventsToRegister asks for what can complete a group that had too few
// members: a new pod, pending or already bound (a member may have
// arrived; one bound counts towards minCount as bound before), as
// kube-scheduler v1.37.2's GangScheduling registers both, and a PodGroup
// added or updated (its minCount lowered). The queue judges hints per
// member; a new pod wakes the group only if it is one of its members.
func (pl GangScheduling) EventsToRegister() []schedq.EventHint[*v1.Pod] {
	return []schedq.EventHint[*v1.Pod]{
		{Event: clusterevent.New(clusterevent.UnscheduledPod, clusterevent.Add), Fn: pl.memberAdded},
		{Event: clusterevent.New(clusterevent.AssignedPod, clusterevent.Add), Fn: pl.memberAdded},
		{Event: clusterevent.New(clusterevent.PodGroup, clusterevent.Add|clusterevent.Update), Fn: pl.groupChanged},
	}
}

// memberAdded queues the group of pod when the new pod is of the same group.
func (GangScheduling) memberAdded(pod *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
	_, added, err := eventObjects[*v1.Pod](oldObj, newObj)
	if err != nil || added == nil {
		return schedq.HintQueue, fmt.Errorf("pod add without a pod: %w", err)
	}
	g := framework.GroupName(pod)
	return hintIf(g != "" && g == framework.GroupName(added)), nil
}

// groupChanged queues the group of pod when its own PodGroup changed.
func (GangScheduling) groupChanged(pod *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
	_, pg, err := eventObjects[*schedulingv1beta1.PodGroup](oldObj, newObj)
	if err != nil || pg == nil {
		return schedq.HintQueue, fmt.Errorf("PodGroup event without a PodGroup: %w", err)
	}
	return hintIf(framework.GroupName(pod) == pg.Namespace+"/"+pg.Name), nil
}
