package app

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

type podQueue = schedq.Queue[types.NamespacedName, *v1.Pod]

// switchQueue is the queue the informers' handlers, the metrics and the
// debug endpoints see: the queue of the current (or next) term. Each term
// of leadership schedules from its own queue; when a term ends, its queue
// is closed and replaced by a fresh one rebuilt from the informers'
// caches, so that nothing the old term popped is stranded in flight.
type switchQueue struct {
	mu  sync.RWMutex
	cur *podQueue
	// stop ends the current queue's Run.
	stop context.CancelFunc
}

var _ scheduler.Queue = (*switchQueue)(nil)

func (s *switchQueue) get() *podQueue {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur
}

// replace makes next current and starts its Run, after fill has put the
// pending pods into it. Handler calls wait meanwhile, so none is lost
// between the listing and the switch: a call that repeats what the listing
// already put in is harmless (an Add replaces, a Delete of what is gone
// does nothing).
func (s *switchQueue) replace(ctx context.Context, next *podQueue, fill func(*podQueue)) {
	s.mu.Lock()
	old, stop := s.cur, s.stop
	fill(next)
	qctx, cancel := context.WithCancel(ctx)
	s.cur, s.stop = next, cancel
	s.mu.Unlock()
	go next.Run(qctx)
	if old != nil {
		stop()
		old.Close()
	}
}

// close closes the current queue.
func (s *switchQueue) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		s.stop()
		s.cur.Close()
	}
}

// Add implements scheduler.Queue.
func (s *switchQueue) Add(pod *v1.Pod) error {
	return s.do(func(q *podQueue) error { return q.Add(pod) })
}

// Update implements scheduler.Queue.
func (s *switchQueue) Update(oldPod, newPod *v1.Pod) error {
	return s.do(func(q *podQueue) error { return q.Update(oldPod, newPod) })
}

// Delete implements scheduler.Queue.
func (s *switchQueue) Delete(key types.NamespacedName) error {
	return s.do(func(q *podQueue) error { return q.Delete(key) })
}

// Done implements scheduler.Queue.
func (s *switchQueue) Done(a scheduler.Attempt) error {
	return s.do(func(q *podQueue) error { return q.Done(a) })
}

// Requeue implements scheduler.Queue.
func (s *switchQueue) Requeue(a scheduler.Attempt, f schedq.Failure) error {
	return s.do(func(q *podQueue) error { return q.Requeue(a, f) })
}

// DoneMembers implements scheduler.Queue.
func (s *switchQueue) DoneMembers(a scheduler.Attempt, placed []int, message string, reasons ...string) error {
	return s.do(func(q *podQueue) error { return q.DoneMembers(a, placed, message, reasons...) })
}

// Park implements scheduler.Queue.
func (s *switchQueue) Park(pod *v1.Pod, f schedq.Failure) error {
	return s.do(func(q *podQueue) error { return q.Park(pod, f) })
}

// Move implements scheduler.Queue.
func (s *switchQueue) Move(ev schedq.Event, oldObj, newObj any, match func(*schedq.Info[*v1.Pod]) bool) error {
	return s.do(func(q *podQueue) error { return q.Move(ev, oldObj, newObj, match) })
}

// Activate implements scheduler.Queue.
func (s *switchQueue) Activate(keys ...types.NamespacedName) error {
	return s.do(func(q *podQueue) error { return q.Activate(keys...) })
}

// Get implements scheduler.Queue.
func (s *switchQueue) Get(key types.NamespacedName) (schedq.Info[*v1.Pod], schedq.Location, bool) {
	return s.get().Get(key)
}

// Nominate implements scheduler.Queue.
func (s *switchQueue) Nominate(key types.NamespacedName, node string) error {
	return s.do(func(q *podQueue) error { return q.Nominate(key, node) })
}

// Nomination implements scheduler.Queue.
func (s *switchQueue) Nomination(key types.NamespacedName) (string, bool) {
	return s.get().Nomination(key)
}

// Nominated implements scheduler.Queue.
func (s *switchQueue) Nominated(node string) []*v1.Pod { return s.get().Nominated(node) }

// NominatedTargets implements scheduler.Queue.
func (s *switchQueue) NominatedTargets() []string { return s.get().NominatedTargets() }

func (s *switchQueue) do(f func(*podQueue) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return f(s.cur)
}

// Counts returns the current queue's counts.
func (s *switchQueue) Counts() schedq.Counts { return s.get().Counts() }

// Stats implements metrics.Source.
func (s *switchQueue) Stats() schedq.Stats { return s.get().Stats() }

// Dump implements queueView.
func (s *switchQueue) Dump() schedq.Dump[types.NamespacedName] { return s.get().Dump() }

// ExplainListed implements queueView.
func (s *switchQueue) ExplainListed(items []schedq.PendingItem[types.NamespacedName]) {
	s.get().ExplainListed(items)
}

// Explain implements queueView.
func (s *switchQueue) Explain(key types.NamespacedName) (schedq.Explanation[types.NamespacedName], error) {
	return s.get().Explain(key)
}
