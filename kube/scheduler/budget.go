package scheduler

import (
	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/plugins"
	"github.com/schedq/schedq/kube/profile"
)

// WakeBudget is the queue's Config.Budget for a scheduler on cache: a
// cluster event that makes room on one node (the node joined, its
// allocatable grew, a pod bound to it was deleted or scaled down) wakes
// only the pending pods that fit in that node's free room, in pop order;
// the others stay parked until room comes back (see schedq.Budget). Other
// events are not limited, and neither are the pods that a deleted pod's
// departure may let onto other nodes than its own: those its topology
// constraints (spread or anti-affinity over a domain wider than a node)
// counted it against (plugins.NodeRoom.Take). One ledger of promised room
// serves every event, so two events on one node do not promise its room
// twice. This goes beyond kube-scheduler, which wakes every pod whose
// hint accepts the event.
//
// A budget's Take reads only the pod's requests, namespace, labels and
// topology constraints, which are equal for the pods of one PodHintClass
// (equal namespaces, labels and specs, no resize status), so the queue
// may set Config.ClassBudget with it: an event's room is then offered to
// one pod per class that does not fit, not to every parked pod.
func WakeBudget(c *Cache) func(ev schedq.Event, oldObj, newObj any) (schedq.Budget[*v1.Pod], bool) {
	return WakeBudgetOn(c, nil)
}

// WakeBudgetOn is WakeBudget for a scheduler that runs the plugins of
// fws (nil ones ignored): a node's room leaves out, as their
// NodeResourcesFit does, the
// extended resources its args ignore and, on a node that has none of one,
// those that a DeviceClass provides (profile.Framework.FitSkips). Without
// it, a pod asking for such a resource would never fit an event's room,
// and would wait for another event or the leftover flush while its hints
// said the new room might hold it.
//
// With several profiles' frameworks (Options.Profiles), a resource is
// left out if any of their NodeResourcesFit leaves it out: a pod of a
// profile that counts it may then be woken by room it does not fit,
// which costs an attempt; the other way round, a pod would wait for the
// flush.
func WakeBudgetOn(c *Cache, fws ...*profile.Framework) func(ev schedq.Event, oldObj, newObj any) (schedq.Budget[*v1.Pod], bool) {
	ledger := plugins.NewRoomLedger(c, fitSkips(fws))
	return func(ev schedq.Event, oldObj, newObj any) (schedq.Budget[*v1.Pod], bool) {
		node, gone := roomOn(ev, oldObj, newObj)
		if node == "" {
			return nil, false
		}
		return ledger.RoomFreedBy(node, gone), true
	}
}

// roomOn returns the node on which ev makes room, or "", and the pod
// whose deletion made it, if one did. A general update (every update bit
// set: a change of none of the kinds the handlers tell apart) makes none.
func roomOn(ev schedq.Event, oldObj, newObj any) (string, *v1.Pod) {
	if ev.Action == clusterevent.Update {
		return "", nil
	}
	switch ev.Kind {
	case clusterevent.Node:
		if ev.Action&(clusterevent.Add|clusterevent.UpdateNodeAllocatable) != 0 {
			if n, ok := newObj.(*v1.Node); ok {
				return n.Name, nil
			}
		}
	case clusterevent.AssignedPod:
		switch {
		case ev.Action&clusterevent.Delete != 0:
			if p, ok := oldObj.(*v1.Pod); ok {
				return p.Spec.NodeName, p
			}
		case ev.Action&clusterevent.UpdatePodScaleDown != 0:
			if p, ok := newObj.(*v1.Pod); ok {
				return p.Spec.NodeName, nil
			}
		}
	}
	return "", nil
}

// fitSkips is what WakeBudgetOn leaves out of a node's room for fws (nil
// frameworks ignored): nil for none, one's FitSkips, or whether any of
// theirs skips. O(frameworks) per call.
func fitSkips(fws []*profile.Framework) func(v1.ResourceName, int64) bool {
	var skips []func(v1.ResourceName, int64) bool
	for _, fw := range fws {
		if fw != nil {
			skips = append(skips, fw.FitSkips)
		}
	}
	switch len(skips) {
	case 0:
		return nil
	case 1:
		return skips[0]
	}
	return func(name v1.ResourceName, alloc int64) bool {
		for _, skip := range skips {
			if skip(name, alloc) {
				return true
			}
		}
		return false
	}
}
