package upstream

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Pod groups in the v1.37 queue. The queue reads the GenericWorkload
// feature gate (off by default in v1.37.2) once, when it is built: only a
// queue built while the gate is on treats pods that name a PodGroup as its
// members. The gate is process-wide, so SetGroups returns a function that
// puts it back.

// SetGroups sets the GenericWorkload feature gate to on and returns a
// function that restores its previous value. It changes process-wide
// state: not safe for concurrent use with queues being built.
func SetGroups(on bool) (restore func(), err error) {
	return setGate(features.GenericWorkload, on)
}

// setGate sets a feature gate and returns a function that restores its
// previous value. Process-wide, as SetGroups.
func setGate(f featuregate.Feature, on bool) (restore func(), err error) {
	was := utilfeature.DefaultFeatureGate.Enabled(f)
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(f): on}); err != nil {
		return nil, err
	}
	return func() { _ = utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(f): was}) }, nil
}

// NewPodGroup builds a gang PodGroup (scheduling.k8s.io/v1beta1) in the
// driver's namespace: minCount members must fit together; priority orders
// the group in the queue.
func NewPodGroup(name string, minCount, priority int32) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, UID: types.UID("uid-pg-" + name)},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount},
			},
			Priority: &priority,
		},
	}
}

// NewMember builds a pod that names group as its PodGroup
// (spec.schedulingGroup.podGroupName).
func NewMember(name, group string, priority int32, labels map[string]string) *v1.Pod {
	p := NewPod(name, priority, labels)
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	return p
}

// Popped is one entity taken from the v1.37 queue: a lone pod, or a pod
// group with the members queued when it was popped.
type Popped struct {
	Pod   *framework.QueuedPodInfo      // a lone pod; nil for a group
	Group *framework.QueuedPodGroupInfo // a group; nil for a lone pod
	Cycle int64                         // the scheduling cycle of the pop
}

// PopEntity pops the head entity. It blocks, as Pop does, when nothing is
// poppable.
func PopEntity(q *queue.PriorityQueue, logger klog.Logger) (Popped, error) {
	e, err := q.Pop(logger)
	if err != nil {
		return Popped{}, err
	}
	if e == nil {
		return Popped{}, errors.New("upstream queue closed")
	}
	switch x := e.(type) {
	case *framework.QueuedPodInfo:
		return Popped{Pod: x, Cycle: q.SchedulingCycle()}, nil
	case *framework.QueuedPodGroupInfo:
		return Popped{Group: x, Cycle: q.SchedulingCycle()}, nil
	}
	return Popped{}, fmt.Errorf("upstream popped a %s", e.Type())
}

// Members lists the pods of the entity: the lone pod, or the group's
// members in the queue's order. O(members); it allocates the slice.
func (p Popped) Members() []*framework.QueuedPodInfo {
	if p.Pod != nil {
		return []*framework.QueuedPodInfo{p.Pod}
	}
	var out []*framework.QueuedPodInfo
	p.Group.ForEachPodInfo(func(pi *framework.QueuedPodInfo) bool {
		out = append(out, pi)
		return true
	})
	return out
}

// Size is the number of pods the entity holds.
func (p Popped) Size() int {
	if p.Pod != nil {
		return 1
	}
	return p.Group.Size()
}

// Succeed ends an attempt in which every pod of the entity was placed and
// bound, as the v1.37 scheduler does: Done for each pod once bound, and for
// a group AddAttemptedPodGroupIfNeeded with a success status, which
// requeues the members that arrived during the attempt (if any).
func Succeed(q *queue.PriorityQueue, logger klog.Logger, p Popped) error {
	if p.Pod != nil {
		q.Done(p.Pod.Pod.UID)
		return nil
	}
	p.Group.ForEachPodInfo(func(pi *framework.QueuedPodInfo) bool {
		q.Done(pi.Pod.UID)
		return true
	})
	return q.AddAttemptedPodGroupIfNeeded(logger, p.Group, p.Cycle, fwk.NewStatus(fwk.Success))
}

// Reject ends a failed attempt: rejected by plugins, or (no plugins) failed
// with an error. As the v1.37 scheduler's failure handler does, every pod
// goes back through AddUnschedulablePodIfNotPresent with the rejecting
// plugins (a group's members then wait in its pending list), and a group
// then comes back whole through AddAttemptedPodGroupIfNeeded, with the
// plugins on the group and an Unschedulable (or Error) status. The group
// must be the entity popped last: v1.37 keeps a single "last popped" slot,
// and members of any other group would form a new entity.
func Reject(q *queue.PriorityQueue, logger klog.Logger, p Popped, plugins []string) error {
	return rejectMembers(q, logger, p, p.Members(), plugins)
}

// rejectMembers is Reject with the members to requeue given: those of the
// attempt that still exist.
func rejectMembers(q *queue.PriorityQueue, logger klog.Logger, p Popped, members []*framework.QueuedPodInfo, plugins []string) error {
	var firstErr error
	for _, pi := range members {
		pi.ClearRejectorPlugins()
		pi.UnschedulablePlugins = sets.New(plugins...)
		if err := q.AddUnschedulablePodIfNotPresent(logger, pi, p.Cycle); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if p.Group == nil || firstErr != nil {
		return firstErr
	}
	status := fwk.AsStatus(errors.New("fake error"))
	if len(plugins) > 0 {
		status = fwk.NewStatus(fwk.Unschedulable, "rejected by fake plugins").WithPlugin(plugins[0])
	}
	p.Group.UnschedulablePlugins = sets.New(plugins...)
	p.Group.PendingPlugins = sets.New[string]()
	return q.AddAttemptedPodGroupIfNeeded(logger, p.Group, p.Cycle, status)
}
