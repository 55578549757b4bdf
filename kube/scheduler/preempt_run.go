package scheduler

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// preemption is what a cycle decided about preemption, carried in its
// Outcome from the cache's lock to act: the chosen candidate, or, with
// none, whether the pod's nomination is to be cleared.
type preemption struct {
	cand  Candidate
	found bool
}

// act carries out what fwPreempt decided, outside
// the cache's lock and the queue's: it nominates the pod to the chosen
// node, takes the nomination from the pods of lower priority nominated
// there, and hands both, with the victims, to the Evictor, which writes
// the nominations to the pods' status and deletes the victims without
// holding the cycle (with no victim, it only writes the nominations: the
// room is being freed already). Without a candidate, the pod's
// nomination is cleared.
func (s *Scheduler) act(ctx context.Context, info Attempt, out *Outcome) {
	p := out.preempt
	if p == nil || s.pre == nil {
		return
	}
	pod := info.Item
	if !p.found {
		if node, ok := s.unnominateAs(info.Key, pod.UID, "preemption cannot help"); ok {
			s.nominationFreed(pod, node)
		}
		return
	}
	c := p.cand
	unnominated, ok := s.nominateFor(info.Key, pod, c.Node)
	if !ok {
		return
	}
	if len(c.Victims) > 0 {
		// A nomination to room pods leaving free already evicts nobody:
		// no preemption, as kube-scheduler observes only those it makes.
		s.pre.o.Metrics.victims(len(c.Victims))
	}
	s.o.Logger.Debug("preempting", "pod", info.Key, "node", c.Node, "victims", len(c.Victims), "pdbViolations", c.PDBViolations)
	uid, key := pod.UID, info.Key
	s.pre.setRunning(uid, true)
	s.pre.evict(c.Victims, s.o.Now())
	s.pre.o.Evictor.Preempt(ctx, Preemption{Preemptor: pod, Node: c.Node, Victims: c.Victims, Unnominated: unnominated}, func(errs []error) {
		s.pre.setRunning(uid, false)
		if kept := uncleared(unnominated, errs); len(kept) > 0 {
			s.renominate(kept, c.Node)
		}
		if errs = victimErrors(errs); len(errs) > 0 {
			// Some room may not come: look again from scratch next time.
			// The victims deleted still count as leaving until the cache
			// shows them so; those not deleted no longer do.
			s.pre.forget(unevicted(c.Victims, errs))
			s.o.Logger.Warn("preemption incomplete", "pod", key, "node", c.Node, "errors", errs)
			s.retryPreemptor(key, uid)
		}
	})
}

// nominateFor nominates pod, whose cycle chose node, under key, and
// takes the nominations of the pods of lower priority nominated there,
// which it returns. It holds the pod events' lock throughout, so that no
// pod handler runs between its check that the queue's pod under key is
// still pod (the same UID, not deleted) and its writes: a pod deleted
// and created again under its name during the cycle is another pod,
// which the preemption was not for, and must not be nominated (nor the
// victims evicted); nor is a nomination cleared for a pod re-created
// meanwhile. A nomination of pod to another node ends: the pods of its
// priority or lower that it kept out are woken (nominationFreed). ok is
// false if pod is gone or replaced, or the queue refused the nomination:
// nothing was written.
func (s *Scheduler) nominateFor(key types.NamespacedName, pod *v1.Pod, node string) (unnominated []*v1.Pod, ok bool) {
	s.cache.lockEvents()
	defer s.cache.unlockEvents()
	if !s.queuedAs(key, pod.UID) {
		s.o.Logger.Debug("nominate: the preemptor was deleted or replaced during its cycle", "pod", key)
		return nil, false
	}
	prev, had := s.queue.Nomination(key)
	if err := s.queue.Nominate(key, node); err != nil {
		s.o.Logger.Debug("nominate", "pod", key, "err", err)
		return nil, false
	}
	if had && prev != node {
		// The room the nomination held on prev is free: wake the pods
		// it kept out, as when a nomination is cleared.
		s.nominationFreed(pod, prev)
	}
	prio := framework.Priority(pod)
	for _, other := range s.queue.Nominated(node) {
		if framework.Priority(other) < prio && s.clearNomination(framework.Key(other), "a higher-priority pod took its room") {
			unnominated = append(unnominated, other)
		}
	}
	return unnominated, true
}

// renominate gives pods back their nomination to node, which a
// preemption took (nominateFor) but whose clearing in their
// status.nominatedNodeName the Evictor could not write (the lease fence
// closed, say): the status still names node, and the queue follows it,
// as kube-scheduler's nominator keeps a pod whose clearing failed. Each
// pod must still be the queue's under its name (its UID), its queued
// version's status must still name node, and it must have no
// nomination and not be assumed meanwhile: a later decision stands. It
// holds the pod events' lock, as nominateFor does.
func (s *Scheduler) renominate(pods []*v1.Pod, node string) {
	s.cache.lockEvents()
	defer s.cache.unlockEvents()
	for _, p := range pods {
		key := framework.Key(p)
		info, _, ok := s.queue.Get(key)
		if !ok || info.Item.UID != p.UID || info.Item.Status.NominatedNodeName != node {
			continue
		}
		if _, had := s.queue.Nomination(key); had {
			continue
		}
		if _, assumed := s.cache.NodeOf(key); assumed {
			continue
		}
		if err := s.queue.Nominate(key, node); err != nil {
			s.o.Logger.Debug("nominate again: its status was not cleared", "pod", key, "err", err)
		}
	}
}

// queuedAs reports whether the queue's pod under key (queued or in
// flight) is the one of uid.
func (s *Scheduler) queuedAs(key types.NamespacedName, uid types.UID) bool {
	info, _, ok := s.queue.Get(key)
	return ok && info.Item.UID == uid
}

// retryPreemptor ends, in the queue, the preemption of the pod key with
// uid whose victims could not all be evicted: its nomination is cleared
// so that it looks again from scratch, and it is activated, since no
// deletion will come to wake it (it was parked behind the filters that
// rejected it, or will be when its cycle ends). Nothing is done if the
// queue's pod under key is another one (deleted and created again under
// its name since; its own nomination is not this preemption's) or none.
func (s *Scheduler) retryPreemptor(key types.NamespacedName, uid types.UID) {
	s.cache.lockEvents() // see unnominateAs
	defer s.cache.unlockEvents()
	info, _, ok := s.queue.Get(key)
	if !ok || info.Item.UID != uid {
		return
	}
	if node, ok := s.queue.Nomination(key); ok && s.clearNomination(key, "a victim could not be evicted") {
		s.nominationFreed(info.Item, node)
	}
	if err := s.queue.Activate(key); err != nil {
		s.o.Logger.Debug("activate after a failed eviction", "pod", key, "err", err)
	}
}

// unnominateAs clears the nomination of the queue's pod under key if it
// is the one of uid, and returns the node it was nominated to. It holds
// the pod events' lock, so that no pod handler runs between the check
// and the clearing: the nomination of a pod created again under key
// during the cycle (restored from its status) is that pod's, not to be
// cleared by the old one's cycle.
func (s *Scheduler) unnominateAs(key types.NamespacedName, uid types.UID, why string) (string, bool) {
	s.cache.lockEvents()
	defer s.cache.unlockEvents()
	if !s.queuedAs(key, uid) {
		return "", false
	}
	node, ok := s.queue.Nomination(key)
	if !ok || !s.clearNomination(key, why) {
		return "", false
	}
	return node, true
}

// nominationFreed wakes the pods that pod's nomination to node, just
// cleared, kept out (freeNominatedRoom), as kube-scheduler does when a
// pod's nominatedNodeName changes.
func (s *Scheduler) nominationFreed(pod *v1.Pod, node string) {
	if err := freeNominatedRoom(s.queue, pod, node); err != nil && !errors.Is(err, schedq.ErrClosed) {
		s.o.Logger.Debug("move after a nomination was cleared", "pod", framework.Key(pod), "err", err)
	}
}
