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
	nom, pod := s.queue, info.Item
	if !p.found {
		if node, ok := nom.Nomination(info.Key); ok && s.clearNomination(info.Key, "preemption cannot help") {
			s.nominationFreed(pod, node)
		}
		return
	}
	c := p.cand
	if err := nom.Nominate(info.Key, c.Node); err != nil {
		s.o.Logger.Debug("nominate", "pod", info.Key, "err", err)
		return
	}
	prio := framework.Priority(pod)
	var unnominated []*v1.Pod
	for _, other := range nom.Nominated(c.Node) {
		if framework.Priority(other) < prio && s.clearNomination(framework.Key(other), "a higher-priority pod took its room") {
			unnominated = append(unnominated, other)
		}
	}
	s.pre.o.Metrics.victims(len(c.Victims))
	s.o.Logger.Debug("preempting", "pod", info.Key, "node", c.Node, "victims", len(c.Victims), "pdbViolations", c.PDBViolations)
	uid, key := pod.UID, info.Key
	s.pre.setRunning(uid, true)
	s.pre.evict(c.Victims, s.o.Now())
	s.pre.o.Evictor.Preempt(ctx, Preemption{Preemptor: pod, Node: c.Node, Victims: c.Victims, Unnominated: unnominated}, func(errs []error) {
		s.pre.setRunning(uid, false)
		if len(errs) > 0 {
			// Some room may not come: look again from scratch next time.
			// The victims deleted still count as leaving until the cache
			// shows them so; those not deleted no longer do.
			s.pre.forget(unevicted(c.Victims, errs))
			s.o.Logger.Warn("preemption incomplete", "pod", key, "node", c.Node, "errors", errs)
			s.retryPreemptor(key, uid)
		}
	})
}

// retryPreemptor ends, in the queue, the preemption of the pod key with
// uid whose victims could not all be evicted: its nomination is cleared
// so that it looks again from scratch, and it is activated, since no
// deletion will come to wake it (it was parked behind the filters that
// rejected it, or will be when its cycle ends). Nothing is done if the
// queue's pod under key is another one (deleted and created again under
// its name since; its own nomination is not this preemption's) or none.
func (s *Scheduler) retryPreemptor(key types.NamespacedName, uid types.UID) {
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

// nominationFreed wakes the pods that pod's nomination to node, just
// cleared, kept out (freeNominatedRoom), as kube-scheduler does when a
// pod's nominatedNodeName changes.
func (s *Scheduler) nominationFreed(pod *v1.Pod, node string) {
	if err := freeNominatedRoom(s.queue, pod, node); err != nil && !errors.Is(err, schedq.ErrClosed) {
		s.o.Logger.Debug("move after a nomination was cleared", "pod", framework.Key(pod), "err", err)
	}
}
