package scheduler

import (
	"slices"

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
// twice. The room that the pods nominated to the node hold (preemptors
// waiting for their victims to go) is not offered to pods of their
// priority or lower, as kube-scheduler's filters count it against those
// pods, unless a nominee is of the woken pod's hint class (the queue
// judges a class as one pod). This goes beyond kube-scheduler, which
// wakes every pod whose hint accepts the event.
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
// fws (nil ones ignored): a node's room for a pod is counted as the
// NodeResourcesFit filter of the pod's profile counts it (roomChecks):
// without the extended resources its args ignore and, on a node that
// has none of one, those that a DeviceClass provides
// (profile.Framework.FitSkips); not at all if the profile runs no
// NodeResourcesFit filter. Without it, a pod asking for such a resource
// would never fit an event's room, and would wait for another event or
// the leftover flush while its hints said the new room might hold it.
// With several profiles' frameworks (Options.Profiles), a pod's profile
// is the one its spec.schedulerName names.
func WakeBudgetOn(c *Cache, fws ...*profile.Framework) func(ev schedq.Event, oldObj, newObj any) (schedq.Budget[*v1.Pod], bool) {
	ledger := plugins.NewRoomLedgerBy(c, roomChecks(fws))
	ledger.Class = PodHintClass // the class UseFrameworkHints gives the queue
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

// roomChecks is how WakeBudgetOn counts a pod's room for fws (nil
// frameworks ignored): all of it for none; as the one framework's
// NodeResourcesFit counts it, for every pod; with several, as that of
// the profile the pod names (all of it for a pod of none). O(1) per call.
func roomChecks(fws []*profile.Framework) func(*v1.Pod) plugins.RoomCheck {
	checks := map[string]plugins.RoomCheck{}
	var one plugins.RoomCheck
	for _, fw := range fws {
		if fw != nil {
			one = plugins.RoomCheck{Skip: fw.FitSkips, None: !slices.Contains(fwFilterNames(fw.Framework()), nodeResourcesFit)}
			checks[fw.Name()] = one
		}
	}
	if len(checks) <= 1 {
		return func(*v1.Pod) plugins.RoomCheck { return one }
	}
	return func(p *v1.Pod) plugins.RoomCheck { return checks[p.Spec.SchedulerName] }
}
