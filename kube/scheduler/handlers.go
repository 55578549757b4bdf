package scheduler

import (
	"errors"
	"log/slog"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// Handlers turn what the scheduler sees of the cluster into cache updates
// and queue operations. Informers call them in a real cluster; the
// simulator calls them directly.
type Handlers struct {
	Queue         Queue
	Cache         *Cache
	SchedulerName string
	// Profiles, if set, are the schedulerNames of several profiles
	// (Options.Profiles): the pods of each are this scheduler's, and
	// SchedulerName is not read (ours).
	Profiles []string
	Logger   *slog.Logger
	// AffinityMatch reports whether an assigned pod satisfies one of a
	// queued pod's required pod-affinity terms: the targeted move for
	// assigned pods wakes only those. Nil wakes every candidate.
	AffinityMatch func(queued, assigned *v1.Pod, nsLabels labels.Set) bool
	// ColdStart turns off the warm start of Register (see failover.go):
	// every pending pod of the initial list then goes to activeQ, as in
	// kube-scheduler, even if a previous leader recorded why it failed.
	ColdStart bool
	// Hints is the queue's hint configuration (QueueConfig's Hints). If
	// set, the warm start parks a pod only if every plugin of its record
	// registered events here, so that a record from another version or
	// profile cannot park a pod that no event would wake.
	Hints map[string][]schedq.EventHint[*v1.Pod]
	// HintProfiles, with Profiles, are the profiles whose plugin of each
	// name registered events (HintProfiles): the warm start parks a pod
	// behind a plugin only if its own profile's did, since the other
	// profiles' hints of that name skip the pod (UseProfileHints). A
	// plugin it does not name (schedq's own) is any pod's.
	HintProfiles map[string][]string
	// Events, if set, emits warning events about bad input (a PodGroup the
	// queue refuses, a member whose PodGroup does not exist).
	Events Warner

	warm *warmStart // nil: cold
}

// responsible reports whether p is a pending pod this scheduler must place.
func (h *Handlers) responsible(p *v1.Pod) bool {
	return h.ours(p) && p.Spec.NodeName == "" &&
		p.DeletionTimestamp == nil && !terminal(p)
}

// assigned reports whether p runs (or will run) on a node.
func assigned(p *v1.Pod) bool { return p.Spec.NodeName != "" && !terminal(p) }

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

func (h *Handlers) log() *slog.Logger {
	if h.Logger == nil {
		return slog.Default()
	}
	return h.Logger
}

// check logs queue errors other than the expected ones.
func (h *Handlers) check(op string, p *v1.Pod, err error) {
	if err != nil && !errors.Is(err, schedq.ErrNotFound) && !errors.Is(err, schedq.ErrClosed) {
		h.log().Warn("queue", "op", op, "pod", framework.Key(p), "err", err)
	}
}

// AddPod handles a new pod.
func (h *Handlers) AddPod(p *v1.Pod) { h.addPodEvent(p, false) }

// addPodEvent is addPod holding the pod events' lock (see Cache), as the
// informer calls it.
func (h *Handlers) addPodEvent(p *v1.Pod, initial bool) {
	h.Cache.lockEvents()
	defer h.Cache.unlockEvents()
	h.addPod(p, initial)
}

// addPod handles a new pod; initial says it comes from the informer's
// initial list.
func (h *Handlers) addPod(p *v1.Pod, initial bool) { h.addPodParking(p, initial, true) }

// addPodParking is addPod; with mayPark false, a pending pod is queued
// as it would be without the warm start, whatever record it carries.
func (h *Handlers) addPodParking(p *v1.Pod, initial, mayPark bool) {
	switch {
	case assigned(p):
		if initial && h.warm != nil {
			h.cacheAssigned(p)    // the warm start reconciles the parked pods
			h.warm.listedBound(p) // and regates its group's gated members
			return
		}
		h.assignedPodAdded(p)
	case h.responsible(p):
		if _, placed := h.Cache.NodeOf(framework.Key(p)); placed {
			return // a stale view of a pod we assumed or bound
		}
		member := framework.GroupName(p) != ""
		defer h.restoreNomination(p)
		if !member && mayPark && h.warm != nil && h.warm.park(h, p) {
			return
		}
		if member {
			h.Cache.members.pending(p, true) // before the gang gate's check
		}
		h.check("add", p, h.Queue.Add(p))
		if member {
			h.memberAdded(p)
		}
	}
}

// restoreNomination takes over a nomination that the pod's status records
// (status.nominatedNodeName, written by a previous leader's preemption or
// by another scheduler's), so that the room freed for it is counted as
// taken after a failover too. A node that is gone clears it at the pod's
// next attempt, as for any nomination.
func (h *Handlers) restoreNomination(p *v1.Pod) {
	node := p.Status.NominatedNodeName
	if node == "" {
		return
	}
	h.check("nominate", p, h.Queue.Nominate(framework.Key(p), node))
}

// followNomination makes the queue's nomination of newPod, a pending pod
// of ours that is queued or in flight, follow an update of its
// status.nominatedNodeName, as kube-scheduler v1.37.2's nominator does: a
// nomination the update adds, changes or removes (a previous leader's
// late write, a user's or another component's) is taken as the pod's.
// When old and new agree, the queue's nomination (prev, had, read before
// the update) is kept: one the scheduler made and whose write is not
// seen yet, or one it dropped without clearing the status (see
// docs/preemption.md). A requeue that dropped it (repark) gets it back.
// The room a nomination leaves on a node frees the pods it kept out
// (freeNominatedRoom); schedq's own write, seen later, changes nothing.
func (h *Handlers) followNomination(oldPod, newPod *v1.Pod, prev string, had bool) {
	key := framework.Key(newPod)
	want := newPod.Status.NominatedNodeName
	if oldPod.Status.NominatedNodeName == want {
		if !had {
			return
		}
		want = prev
	}
	if cur, _ := h.Queue.Nomination(key); cur != want {
		h.check("nominate", newPod, h.Queue.Nominate(key, want))
	}
	if now, ok := h.Queue.Nomination(key); had && (!ok || now != prev) {
		h.check("move", newPod, freeNominatedRoom(h.Queue, oldPod, prev))
	}
}

// updatePodEvent is UpdatePod for the pod informer's updates, but that
// an update of a pending pod whose two versions have the same
// ResourceVersion (a resync, or a relist that found it unchanged: the
// informer's only updates that change nothing) is dropped, as
// kube-scheduler v1.37.2 drops it: it would cost the queue an update and
// its hints, and a plugin that wakes on any update of the pod would retry
// it for nothing. The simulator, whose pods may keep a snapshot's
// ResourceVersion through its changes, calls UpdatePod itself. Only the
// same pod's is dropped: a new UID under the name is a pod deleted and
// created again (UpdatePod replaces the old one), whatever the two
// versions say (kube-scheduler compares the versions alone).
func (h *Handlers) updatePodEvent(oldPod, newPod *v1.Pod) {
	if !assigned(oldPod) && !assigned(newPod) && oldPod.UID == newPod.UID &&
		oldPod.ResourceVersion != "" && oldPod.ResourceVersion == newPod.ResourceVersion {
		return
	}
	h.UpdatePod(oldPod, newPod)
}

// UpdatePod handles a changed pod. A new UID under the same name is a
// pod deleted and created again (seen as an update after a watch gap): it
// is handled as such, so that the new pod is not taken for a stale view of
// the old one's assumption.
func (h *Handlers) UpdatePod(oldPod, newPod *v1.Pod) {
	h.Cache.lockEvents()
	defer h.Cache.unlockEvents()
	h.updatePod(oldPod, newPod)
}

// updatePod is UpdatePod; the caller holds the pod events' lock.
func (h *Handlers) updatePod(oldPod, newPod *v1.Pod) {
	if oldPod.UID != newPod.UID {
		h.deletePod(oldPod)
		h.addPod(newPod, false)
		return
	}
	switch {
	case assigned(newPod) && !assigned(oldPod):
		// Just bound, by us or by another scheduler.
		h.unqueue(newPod)
		h.Cache.members.pending(newPod, false) // the cache counts it placed
		h.assignedPodAdded(newPod)
	case assigned(newPod):
		if err := h.Cache.AddPod(newPod); err != nil {
			h.log().Warn("cache", "pod", framework.Key(newPod), "err", err)
		}
		// A relabelled or scaled-down pod can help through affinity, through
		// anti-affinity it no longer matches, or through freed resources:
		// the plugins' hints, not an affinity pre-filter, decide.
		for _, ev := range PodUpdateEvents(oldPod, newPod) {
			h.check("move", newPod, h.Queue.Move(ev, oldPod, newPod, nil))
		}
	case h.responsible(newPod):
		placed, held := h.Cache.seenPending(newPod)
		if placed {
			// Assumed (binding under way) or already bound: an update that
			// still shows it unassigned must not queue it again. An
			// assumed pod's binding keeps it, to give back if it fails.
			return
		}
		if held {
			// A group member held to retry with its group: the hold keeps
			// the update, to give back, unless a queue took the member in
			// all the same (a new term's, rebuilt while a hold of the
			// ended term's lingers; a binding left in doubt no longer
			// keeps one, gangBinds.inDoubt, so this is a defence).
			if _, _, queued := h.Queue.Get(framework.Key(newPod)); !queued {
				return
			}
		}
		h.Cache.members.pending(newPod, true)
		prev, had := h.Queue.Nomination(framework.Key(newPod))
		if h.warm == nil || !h.warm.repark(h, oldPod, newPod) {
			h.check("update", newPod, h.Queue.Update(oldPod, newPod))
		}
		h.followNomination(oldPod, newPod, prev, had)
	case assigned(oldPod):
		// Finished: its resources are free.
		h.deletePod(oldPod)
	case h.responsible(oldPod):
		// Being deleted, finished, or handed to another scheduler.
		node, nominated := h.Queue.Nomination(framework.Key(oldPod))
		h.unqueue(oldPod)
		h.Cache.members.pending(oldPod, false)
		if nominated {
			h.nominationGone(oldPod, node)
		}
		h.Cache.buryMember(oldPod)
		if newPod.DeletionTimestamp != nil {
			h.Cache.buryDeleting(newPod) // not assumed by a cycle under way either
		}
		if terminal(newPod) || newPod.DeletionTimestamp != nil {
			// Bound and finished in one update (seen after a watch gap), or
			// being deleted unbound (a finalizer keeps it): its assumption,
			// in doubt say, holds its room no more. The API server refuses
			// to bind a pod being deleted, so its binding under way fails;
			// kube-scheduler v1.37.2 frees the room of an assumed pod at
			// this update too.
			h.release(newPod)
		}
	}
}

// DeletePod handles a deleted pod; it may be the last state of a cache
// tombstone. A pod of ours that was not bound leaves the queue, even if it
// was assumed and its binding is under way (the attempt is then dropped
// when the binding fails). Whatever it held on a node is freed, and the
// event says on which node: the pod as placed there, for an assumed pod
// that the informer saw unbound (the hints and the wake budget read the
// deleted pod's node).
func (h *Handlers) DeletePod(p *v1.Pod) {
	h.Cache.lockEvents()
	defer h.Cache.unlockEvents()
	h.deletePod(p)
}

// deletePod is DeletePod; the caller holds the pod events' lock.
func (h *Handlers) deletePod(p *v1.Pod) {
	if !assigned(p) && h.ours(p) {
		node, nominated := h.Queue.Nomination(framework.Key(p))
		h.check("delete", p, h.Queue.Delete(framework.Key(p)))
		if nominated {
			h.nominationGone(p, node)
		}
	}
	h.Cache.unretry(p) // a member held for a retry is gone
	h.Cache.members.pending(p, false)
	h.Cache.buryMember(p)
	h.release(p)
}

// unqueue takes p out of the queue, and out of the group members held
// for a retry (Cache.retrying): it is no longer a pending pod of ours.
func (h *Handlers) unqueue(p *v1.Pod) {
	h.check("delete", p, h.Queue.Delete(framework.Key(p)))
	h.Cache.unretry(p)
}

// nominationGone says to the queue that p, a pending pod nominated to
// node, left it unbound (deleted, terminating, handed to another
// scheduler): see freeNominatedRoom. A pod that leaves because it was
// bound is not one: its room is taken for real.
func (h *Handlers) nominationGone(p *v1.Pod, node string) {
	h.check("move", p, freeNominatedRoom(h.Queue, p, node))
}

// freeNominatedRoom tells q that the room p's nomination to node kept
// from the pods of p's priority or lower is free (p left, or its
// nomination was cleared). As kube-scheduler v1.37.2 does, it is an
// AssignedPodDelete event of p, carrying the nomination in its status
// (NodeResourcesFit's hint skips a deleted pod that was neither on a node
// nor nominated), to the pods of p's priority or lower only: pods of
// higher priority never counted the nomination.
func freeNominatedRoom(q Queue, p *v1.Pod, node string) error {
	gone := p
	if p.Status.NominatedNodeName != node {
		gone = p.DeepCopy()
		gone.Status.NominatedNodeName = node
	}
	prio := corev1helpers.PodPriority(p)
	lower := func(info *schedq.Info[*v1.Pod]) bool { return corev1helpers.PodPriority(info.Item) <= prio }
	return q.Move(clusterevent.AssignedPodDelete, gone, nil, lower)
}

// release frees what p held on a node, bound or assumed, if anything, and
// says so to the queue as an assigned pod's deletion.
func (h *Handlers) release(p *v1.Pod) {
	key := framework.Key(p)
	if node, onNode := h.Cache.NodeOf(key); onNode || assigned(p) {
		h.Cache.RemovePod(key)
		gone := p
		if onNode && p.Spec.NodeName == "" {
			gone = assumedOn(p, node)
		}
		h.check("move", p, h.Queue.Move(clusterevent.AssignedPodDelete, gone, nil, nil))
	}
}

func (h *Handlers) assignedPodAdded(p *v1.Pod) {
	h.cacheAssigned(p)
	h.check("move", p, h.Queue.Move(clusterevent.AssignedPodAdd, nil, p, h.affinityTo(p)))
}

func (h *Handlers) cacheAssigned(p *v1.Pod) {
	if err := h.Cache.AddPod(p); err != nil {
		h.log().Warn("cache", "pod", framework.Key(p), "err", err)
	}
}

// affinityTo selects the parked pods that p, an assigned pod just added,
// may help: through their required affinity (AffinityMatch), or through
// any other plugin that held them back and hears the event
// (hearsAssignedAdd), whose hint then decides. PodTopologySpread is one:
// a matching pod in another domain lowers the skew a domain is measured
// against, and kube-scheduler v1.37.2 wakes such pods. Every group
// member is selected: the queue offers it each member's Info, whose
// status holds none of its group's rejecting plugins (the group's entity
// does), and judges the event by the group's plugins' hints only.
func (h *Handlers) affinityTo(p *v1.Pod) func(*schedq.Info[*v1.Pod]) bool {
	if h.AffinityMatch == nil {
		return func(*schedq.Info[*v1.Pod]) bool { return true }
	}
	var ns labels.Set
	h.Cache.View(func(s framework.Snapshot) { ns = s.NamespaceLabels(p.Namespace) })
	return func(info *schedq.Info[*v1.Pod]) bool {
		return h.AffinityMatch(info.Item, p, ns) || h.hearsAssignedAdd(&info.Status) || framework.GroupName(info.Item) != ""
	}
}

// affinityPlugin is the plugin whose interest in an assigned pod's
// arrival AffinityMatch stands for.
const affinityPlugin = "InterPodAffinity"

// hearsAssignedAdd reports whether a plugin that rejected, awaits or
// gates the pod, other than InterPodAffinity, hears an assigned pod's
// arrival (pluginHearsAssignedAdd). O(plugins × registrations).
func (h *Handlers) hearsAssignedAdd(st *schedq.Status) bool {
	return slices.ContainsFunc(st.RejectedBy, h.pluginHearsAssignedAdd) ||
		slices.ContainsFunc(st.WaitingOn, h.pluginHearsAssignedAdd) || h.pluginHearsAssignedAdd(st.GatedBy)
}

// pluginHearsAssignedAdd reports whether the plugin name, other than
// InterPodAffinity, registered for an assigned pod's arrival in Hints;
// without Hints, true for any plugin (its registrations are unknown, so
// its hint decides). O(registrations).
func (h *Handlers) pluginHearsAssignedAdd(name string) bool {
	if name == "" || name == affinityPlugin {
		return false
	}
	if h.Hints == nil {
		return true
	}
	for _, r := range h.Hints[name] {
		if clusterevent.Match(r.Event, clusterevent.AssignedPodAdd) {
			return true
		}
	}
	return false
}

// AddNode handles a new node.
func (h *Handlers) AddNode(n *v1.Node) { h.addNode(n, false) }

// addNode handles a new node; initial says it comes from the informer's
// initial list. With the warm start on, those wake nothing: the parked
// pods were rejected with these nodes there, and the warm start replays
// the ones that changed since.
func (h *Handlers) addNode(n *v1.Node, initial bool) {
	h.Cache.AddNode(n)
	if initial && h.warm != nil {
		return
	}
	h.move(clusterevent.NodeAdd, nil, n)
}

// UpdateNode handles a changed node: one move request per kind of change.
func (h *Handlers) UpdateNode(oldNode, newNode *v1.Node) {
	h.Cache.AddNode(newNode)
	for _, ev := range NodeUpdateEvents(oldNode, newNode) {
		h.move(ev, oldNode, newNode)
	}
}

// DeleteNode handles a deleted node.
func (h *Handlers) DeleteNode(n *v1.Node) {
	h.Cache.RemoveNode(n.Name)
	h.move(clusterevent.New(clusterevent.Node, clusterevent.Delete), n, nil)
}

// Other handles an event on a resource no plugin of ours reads but a
// plugin may register for: volumes, storage classes, CSI nodes, services.
func (h *Handlers) Other(res string, action schedq.Action, oldObj, newObj any) {
	h.move(clusterevent.New(res, action), oldObj, newObj)
}

func (h *Handlers) move(ev schedq.Event, oldObj, newObj any) {
	if err := h.Queue.Move(ev, oldObj, newObj, nil); err != nil && !errors.Is(err, schedq.ErrClosed) {
		h.log().Warn("queue", "op", "move", "event", ev.Label, "err", err)
	}
}

// Register wires the handlers to informers. The returned function reports
// whether every handler has been given its informer's initial list: an
// informer's own HasSynced turns true when its store is filled, which can
// be before our handlers have put the pending pods into the queue and the
// nodes into the cache. Wait for it before the first Pop, or the first
// pops see a partial queue and the priority order is lost.
//
// Unless ColdStart is set, Register also turns on the warm start: pending
// pods with a failure record are parked behind their plugins, and synced,
// the first time it reports true, has reconciled them with the cluster
// (see failover.go).
func (h *Handlers) Register(pods, nodes, namespaces cache.SharedIndexInformer, others map[string]EventSource) (synced func() bool, err error) {
	type reg struct {
		inf EventSource
		h   cache.ResourceEventHandler
	}
	if !h.ColdStart {
		h.warm = &warmStart{others: slices.Sorted(maps.Keys(others))}
	}
	regs := []reg{
		{pods, typed(h.addPodEvent, h.updatePodEvent, h.DeletePod)},
		{nodes, typed(h.addNode, h.UpdateNode, h.DeleteNode)},
	}
	if namespaces != nil {
		regs = append(regs, reg{namespaces, typed(func(ns *v1.Namespace, _ bool) { h.Cache.SetNamespace(ns) },
			func(_, ns *v1.Namespace) { h.Cache.SetNamespace(ns) },
			func(ns *v1.Namespace) { h.Cache.RemoveNamespace(ns.Name) })})
	}
	for res, inf := range others {
		regs = append(regs, reg{inf, cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				if !initial || h.warm == nil {
					h.Other(res, clusterevent.Add, nil, obj)
					return
				}
				h.warm.listed(res) // the warm start replays the kind

			},
			UpdateFunc: func(o, n any) { h.Other(res, clusterevent.Update, o, n) },
			DeleteFunc: func(obj any) { h.Other(res, clusterevent.Delete, obj, nil) },
		}})
	}
	var done []cache.ResourceEventHandlerRegistration
	for _, r := range regs {
		reg, err := r.inf.AddEventHandler(r.h)
		if err != nil {
			return nil, err
		}
		done = append(done, reg)
	}
	return func() bool {
		for _, r := range done {
			if !r.HasSynced() {
				return false
			}
		}
		if h.warm != nil {
			h.warm.finish(h)
		}
		return true
	}, nil
}

// EventSource is what Register adds a handler of other kinds to: their
// informer, or the store DynamicResources reads, fed by the informer,
// for claims and slices (profile.Framework.EventSources), so that the
// queue hears of an object only once the plugins can see it.
type EventSource = profile.EventSource

// typed adapts typed handlers to an informer's, unwrapping the tombstones
// of objects deleted while the watch was down.
func typed[T any](add func(T, bool), update func(T, T), del func(T)) cache.ResourceEventHandler {
	as := func(obj any) (T, bool) {
		switch o := obj.(type) {
		case T:
			return o, true
		case cache.DeletedFinalStateUnknown:
			t, ok := o.Obj.(T)
			return t, ok
		}
		var zero T
		return zero, false
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if t, ok := as(obj); ok {
				add(t, initial)
			}
		},
		UpdateFunc: func(o, n any) {
			ot, ok1 := as(o)
			nt, ok2 := as(n)
			if ok1 && ok2 {
				update(ot, nt)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := as(obj); ok {
				del(t)
			}
		},
	}
}
