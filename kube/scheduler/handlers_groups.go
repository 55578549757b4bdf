package scheduler

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// GroupSpecOf reads what the queue needs of a PodGroup: the gang policy's
// minCount (the basic policy is minCount 1) and spec.priority (unset: 0).
// A PodGroup with neither or both policies is an error naming the field.
func GroupSpecOf(pg *schedulingv1beta1.PodGroup) (schedq.GroupSpec, error) {
	pol := pg.Spec.SchedulingPolicy
	spec := schedq.GroupSpec{MinCount: 1}
	if pg.Spec.Priority != nil {
		spec.Priority = *pg.Spec.Priority
	}
	switch {
	case pol.Gang != nil && pol.Basic != nil:
		return spec, errors.New("spec.schedulingPolicy: both basic and gang are set")
	case pol.Gang != nil:
		spec.MinCount = int(pol.Gang.MinCount)
	case pol.Basic == nil:
		return spec, errors.New("spec.schedulingPolicy: neither basic nor gang is set")
	}
	return spec, nil
}

// GroupKey is the queue's name of a PodGroup: "namespace/name".
func GroupKey(pg *schedulingv1beta1.PodGroup) string { return pg.Namespace + "/" + pg.Name }

// AddPodGroup handles a new PodGroup: its members that waited for it form
// its entity in the queue. A PodGroup the queue refuses (minCount 0, no
// policy) is reported (log, a warning event on it) and its members go on
// waiting, as for a PodGroup that does not exist.
func (h *Handlers) AddPodGroup(pg *schedulingv1beta1.PodGroup) {
	if h.setGroup(pg) {
		h.move(clusterevent.New(clusterevent.PodGroup, clusterevent.Add), nil, pg)
	}
}

// UpdatePodGroup handles a changed PodGroup (its minCount or priority). A
// refused update keeps the spec the queue had. A raised minCount is noted
// in the cache (Cache.noteMinCount): it does not make the pods already
// scheduled a gang to release.
func (h *Handlers) UpdatePodGroup(oldPG, newPG *schedulingv1beta1.PodGroup) {
	// Noted whatever the queue answers (closed between two terms, say):
	// the cache outlives the terms' queues.
	prev, perr := GroupSpecOf(oldPG)
	next, nerr := GroupSpecOf(newPG)
	if perr == nil && nerr == nil {
		h.Cache.noteMinCount(GroupKey(newPG), prev.MinCount, next.MinCount)
	}
	if h.setGroup(newPG) {
		h.move(clusterevent.New(clusterevent.PodGroup, clusterevent.Update), oldPG, newPG)
	}
}

// DeletePodGroup handles a deleted PodGroup: its queued members go back to
// waiting for it (a group attempt under way ends normally; its members
// that were not placed then wait too), and what the cache and gang
// release kept of it is forgotten, the latter after the queue's deletion
// (see Scheduler.forgetIfDeleted).
func (h *Handlers) DeletePodGroup(pg *schedulingv1beta1.PodGroup) {
	h.Cache.forgetMinCount(GroupKey(pg))
	h.Cache.members.forget(GroupKey(pg))
	if err := h.Queue.DeleteGroup(GroupKey(pg)); err != nil && !errors.Is(err, schedq.ErrNotFound) && !errors.Is(err, schedq.ErrClosed) {
		h.log().Warn("queue", "op", "deleteGroup", "podGroup", GroupKey(pg), "err", err)
	}
	h.Cache.forgetRelease(GroupKey(pg))
}

// setGroup gives the queue pg's spec and reports whether it took it.
func (h *Handlers) setGroup(pg *schedulingv1beta1.PodGroup) bool {
	spec, err := GroupSpecOf(pg)
	if err == nil {
		// Before the queue's move of a lowered minCount, which checks
		// the gang gate again.
		h.Cache.members.setMinCount(GroupKey(pg), spec.MinCount)
		err = h.Queue.SetGroup(GroupKey(pg), spec)
	}
	switch {
	case err == nil:
		return true
	case errors.Is(err, schedq.ErrClosed):
		return false
	}
	msg := fmt.Sprintf("PodGroup refused, its members wait: %v", err)
	h.log().Warn("invalid PodGroup: its members wait until it is fixed", "podGroup", GroupKey(pg), "err", err)
	h.warn(pg, "InvalidPodGroup", msg)
	return false
}

// memberAdded follows the queueing of a group member: a member whose
// PodGroup the queue does not know waits, and is reported; a member that
// joins its group may complete it (the GangScheduling hint decides).
func (h *Handlers) memberAdded(p *v1.Pod) {
	key := framework.Key(p)
	if _, loc, ok := h.Queue.Get(key); ok && loc == schedq.InIncomplete {
		g := framework.GroupName(p)
		h.log().Info("pod waits for its PodGroup, which does not exist (yet); it is never scheduled alone", "pod", key, "podGroup", g)
		h.warn(p, "WaitingForPodGroup", fmt.Sprintf("PodGroup %s does not exist (yet): the pod waits for it and is never scheduled alone", g))
		return
	}
	h.move(clusterevent.New(clusterevent.UnscheduledPod, clusterevent.Add), nil, p)
}

func (h *Handlers) warn(obj runtime.Object, reason, msg string) {
	if h.Events != nil {
		h.Events.Warn(context.Background(), obj, reason, msg)
	}
}

// RegisterPodGroups wires the handlers to a PodGroup informer. The
// returned function reports whether the handlers have been given its
// initial list.
func (h *Handlers) RegisterPodGroups(inf cache.SharedIndexInformer) (synced func() bool, err error) {
	reg, err := inf.AddEventHandler(typed(func(pg *schedulingv1beta1.PodGroup, _ bool) { h.AddPodGroup(pg) },
		h.UpdatePodGroup, h.DeletePodGroup))
	if err != nil {
		return nil, err
	}
	return reg.HasSynced, nil
}
