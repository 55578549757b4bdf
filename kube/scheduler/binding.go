package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// assumption is a pod assumed on a node while its binding is under way.
type assumption struct {
	uid  types.UID
	node string
	b    *pendingBinding // nil: never aborted
	// doubt: the term that sent the binding ended before its answer came
	// (doubt.go); nothing owns the assumption but the informer and
	// SettleInDoubt.
	doubt bool
}

// The states of a pendingBinding.
const (
	bindPending int32 = iota
	bindStarted       // the request may have been sent
	bindAborted       // the node went first: the request is never sent
)

// pendingBinding is an assumed pod's binding, shared by the cache, which
// moves it from pending to started or aborted under its lock, and the
// scheduler.
type pendingBinding struct {
	state atomic.Int32
	abort func() // called, outside the cache's lock, once aborted
	// gang, for a member of a group attempt, gathers the group's binding
	// results (gang_binding.go); nil for a lone pod.
	gang *gangBinds
	// fw, for a pod placed by the framework (fwbind.go), runs its
	// Unreserve and PostBind plugins; nil otherwise.
	fw *fwBinding
	// latest is the newest version of the pod the informer showed,
	// still unassigned, while the cache assumed it (Cache.seenPending);
	// nil if none. The handlers do not give such an update to the queue
	// (the pod may be bound already, and its attempt ended), so a
	// binding that gives the pod back gives this version (current).
	latest atomic.Pointer[v1.Pod]
	// handOver, for a lone pod (nil for a group member), is called once
	// the cache has forgotten the pod's assumption, with the pod events'
	// lock held (Scheduler.unassume, Cache.RemoveNode): it hands latest
	// to the queue as an update of the attempt in flight
	// (Scheduler.handOver).
	handOver func()
}

// current returns a with, as its item, the newest version of the pod the
// informer showed while it was assumed, if any: the pod given back to
// the queue after its binding failed or was aborted, or after Reserve or
// Permit rejected it or panicked, is the cluster's, as kube-scheduler
// requeues the informer's version after a failure, not the one popped.
// The queue's Requeue keeps an update it recorded during the attempt
// over the attempt's item: the forgetting of the assumption records
// this one (handOver), replacing any recorded during the cycle, before
// Assume, which is older; one recorded after the forgetting is newer,
// and is the one requeued. A group member's is covered otherwise
// (Scheduler.updatedInFlight), the queue having forgotten it.
func (pb *pendingBinding) current(a Attempt) Attempt {
	if p := pb.latest.Load(); p != nil {
		a.Item = p
	}
	return a
}

// newBinding returns the binding of an attempt, which aborts by requeueing.
func (s *Scheduler) newBinding(info Attempt, node string) *pendingBinding {
	pb := &pendingBinding{}
	pb.abort = func() { s.aborted(pb.current(info), node) }
	pb.handOver = func() { s.handOver(info, pb) }
	return pb
}

// unassume forgets pod's assumption (Cache.Forget). For a lone pod
// (pb.handOver) it holds the pod events' lock while it does, and hands
// the newest version over to the queue (handOver) if it forgot the
// assumption itself: no pod handler runs in between, so an update the
// handlers give the queue from then on (the pod is no longer assumed) is
// newer than the binding's, and stays. The caller holds no lock.
func (s *Scheduler) unassume(pod *v1.Pod, pb *pendingBinding) {
	if pb.handOver == nil {
		s.cache.Forget(pod)
		return
	}
	s.cache.lockEvents()
	defer s.cache.unlockEvents()
	if s.cache.forget(pod, nil) {
		pb.handOver()
	}
}

// handOver is pb.handOver for the lone pod of the attempt info, whose
// assumption the cache has just forgotten; the caller holds the pod
// events' lock. The handlers, which hold that lock, gave every update
// of the pod they showed after finding it assumed to the binding
// (pb.latest), and none to the queue; so the queue's version of the
// attempt in flight (the popped one, or an update shown before, during
// the cycle) is older than pb.latest, yet the one its Requeue would keep
// if it recorded an update. The queue gets pb.latest as an update of
// that version, its events recorded for the attempt as for any update
// of a pod in flight: after a rejection at Reserve or Permit, the
// rejecting plugins' hints judge them, whether or not the pod was also
// updated before Assume (kube-scheduler v1.37.2 drops an assumed pod's
// updates, events and all: README's table of differences). A later
// update of the pod reaches the queue through the handlers, and
// replaces it. Nothing if the binding holds no update, or the queue's
// pod under the key is not this attempt's (re-added, or another UID).
func (s *Scheduler) handOver(info Attempt, pb *pendingBinding) {
	latest := pb.latest.Load()
	if latest == nil {
		return
	}
	q, loc, ok := s.queue.Get(info.Key)
	if !ok || loc != schedq.InFlight || q.Cycle != info.Cycle || q.Item == latest || q.Item.UID != latest.UID {
		return
	}
	if err := s.queue.Update(q.Item, latest); err != nil {
		s.o.Logger.Debug("hand over the update of a pod no longer assumed", "pod", info.Key, "err", err)
	}
}

// seenPending is the pod handlers' view of p, a pending pod of ours as the
// informer shows it (unassigned). It reports whether the cache places a
// pod under p's key (assumed, or seen bound), and if not, whether it
// holds p as a group member to retry (Cache.retrying), out of every
// queue until its group's bindings have ended. If the cache assumes p
// itself (its UID) with a binding under way, p becomes that binding's
// latest version of the pod (pendingBinding.latest); if it holds p to
// retry, the version given back (takeRetry).
func (c *Cache) seenPending(p *v1.Pod) (placed, held bool) {
	key := framework.Key(p)
	c.mu.RLock()
	if _, placed = c.podNode[key]; placed {
		if a, ok := c.assumed[key]; ok && a.uid == p.UID && a.b != nil {
			a.b.latest.Store(p)
		}
		c.mu.RUnlock()
		return true, false
	}
	h, ok := c.retrying[key]
	c.mu.RUnlock()
	if !ok || h.uid != p.UID {
		return false, false
	}
	// Held to retry (rare): the write lock, to record the version, and
	// what the read saw checked again under it.
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, placed = c.podNode[key]; placed {
		return true, false
	}
	if h, ok := c.retrying[key]; ok && h.uid == p.UID {
		c.markWritten(key)
		h.latest = p
		c.retrying[key] = h
		return false, true
	}
	return false, false
}

// ErrNodeDeleted ends a binding that did not start because the node's
// deletion was seen first.
var ErrNodeDeleted = errors.New("the node was deleted before the binding started")

// StartBinding is called just before a binding request is sent. It reports
// whether the pod is still assumed on node and node still exists; if so the
// binding counts as started, and a deletion of the node seen from now on no
// longer aborts it. If not, the request must not be sent.
func (c *Cache) StartBinding(pod *v1.Pod, node string) bool {
	c.lock()
	defer c.unlock()
	a, ok := c.assumed[framework.Key(pod)]
	if !ok || a.uid != pod.UID || a.node != node {
		return false
	}
	if _, exists := c.nodes[node]; !exists {
		return false
	}
	return a.b == nil || a.b.state.CompareAndSwap(bindPending, bindStarted) || a.b.state.Load() == bindStarted
}

// handsOverOnLocked reports whether a pod assumed on node has a binding
// that abortOnLocked would abort and that hands an update over
// (pendingBinding.handOver: a lone pod's).
func (c *Cache) handsOverOnLocked(node string) bool {
	for _, a := range c.assumed {
		if a.node == node && a.b != nil && a.b.handOver != nil && a.b.state.Load() == bindPending {
			return true
		}
	}
	return false
}

// abortOnLocked forgets the pods assumed on node whose binding has not
// started and returns their bindings, whose handOver and abort functions
// are to be called after unlocking.
func (c *Cache) abortOnLocked(node string) []*pendingBinding {
	var aborted []*pendingBinding
	for key, a := range c.assumed {
		if a.node != node || a.b == nil || !a.b.state.CompareAndSwap(bindPending, bindAborted) {
			continue
		}
		c.removeLocked(key)
		delete(c.assumed, key)
		if a.b.gang != nil {
			c.retrying[key] = retryHold{uid: a.uid, by: a.b.gang} // given back with its group (abortedMember)
		}
		aborted = append(aborted, a.b)
	}
	return aborted
}

// bind starts the binding of an assumed pod.
func (s *Scheduler) bind(ctx context.Context, info Attempt, node string, pb *pendingBinding, start time.Time) {
	pod := info.Item
	ready := func() bool { return s.cache.StartBinding(info.Item, node) }
	done := func(err error) { s.bound(ctx, info, node, pb, start, err) }
	if pb.fw != nil {
		pod = pb.fw.pod // the assumed pod: see Binder
	}
	s.binder.Bind(ctx, pod, node, ready, done)
}

// aborted handles an assumed pod whose node was deleted before its binding
// started: the cache has forgotten it already; it goes back to the queue
// as an error, to be tried again on the nodes that remain.
func (s *Scheduler) aborted(info Attempt, node string) {
	pod := info.Item
	s.o.Logger.Debug("binding not started: node deleted", "pod", framework.Key(pod), "node", node)
	s.o.Metrics.binding(bindingNodeDeleted, 0)
	if err := s.giveBack(info, schedq.Failure{}); err != nil {
		s.o.Logger.Debug("requeue after node deletion", "pod", framework.Key(pod), "err", err)
	}
}

// The results of a binding, as the bindings_total metric names them.
const (
	bindingSuccess     = "success"
	bindingError       = "error"
	bindingConflict    = "conflict"     // already bound (409), by another replica most likely
	bindingGone        = "gone"         // the pod no longer exists (404)
	bindingTerminating = "terminating"  // its namespace is being deleted
	bindingNodeDeleted = "node_deleted" // not sent: the node went first
	bindingStaleTerm   = "stale_term"   // refused by the API server's lease check
)

// bindingResult classifies a binding error. A conflict (the pod is bound
// already, or was recreated under its name) and a vanished pod are not
// failures of ours: there is nothing left to schedule. A namespace being
// deleted refuses every binding in it for good.
func bindingResult(err error) string {
	switch {
	case err == nil:
		return bindingSuccess
	case errors.Is(err, ErrNodeDeleted):
		return bindingNodeDeleted
	case IsStaleTerm(err):
		return bindingStaleTerm
	case errors.As(err, new(pluginBindError)):
		// A PreBind plugin's failure (or its PreFlight's) is about its own
		// objects, not the pod: a claim or volume not found, a conflict
		// writing one. The pod is retried, as kube-scheduler v1.37.2
		// retries it after any PreBind failure.
		return bindingError
	case apierrors.IsConflict(err):
		return bindingConflict
	case apierrors.IsNotFound(err):
		return bindingGone
	case apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause):
		return bindingTerminating
	}
	return bindingError
}

// pluginBindError is the failure of a PreBind plugin (or of its
// PreFlight) before the pod's binding was sent. Its API errors (a claim
// not found, a conflict updating a volume) are the plugin's objects',
// so bindingResult does not take them for the pod's binding's (the pod
// gone, or bound elsewhere), which would drop the pod.
type pluginBindError struct{ err error }

func (e pluginBindError) Error() string { return e.err.Error() }
func (e pluginBindError) Unwrap() error { return e.err }

// bound finishes a binding.
func (s *Scheduler) bound(ctx context.Context, info Attempt, node string, pb *pendingBinding, start time.Time, err error) {
	pod := info.Item
	key := framework.Key(pod)
	result := bindingResult(err)
	if pb.state.Load() == bindAborted {
		// The node's deletion aborted it, so the request was never sent,
		// whatever ended it (PreBind or its PreFlight failing on a node
		// that is gone, say): it ends as not sent, requeued once by the
		// abort (a member: counted down its group's tally once), not also
		// reported and requeued as a failed binding.
		result = bindingNodeDeleted
	}
	s.bindingEnded(pod, start, result)
	if result != bindingSuccess && result != bindingNodeDeleted {
		defer s.roomFreed(pod, node) // after the pod's own requeue
	}
	if result == bindingNodeDeleted {
		// Not sent. If the node's deletion aborted it, the abort requeues
		// the pod (a framework binding's: once its plugins are done and
		// it is unreserved, see fwBinding.ended). Otherwise the assumption
		// went another way: the pod was deleted, or seen bound by someone
		// else. Nothing to retry. Either
		// way the framework's reservation is undone here, once the cycle
		// and PreBind are done with it (see fwBinding).
		if pb.state.Load() != bindAborted {
			s.forget(ctx, pod, pb)
			s.settle(ctx, info, pb, false)
		} else if pb.fw != nil {
			pb.fw.ended(ctx, false)
		}
		return
	}
	s.o.Metrics.binding(result, s.o.Now().Sub(start))
	switch result {
	case bindingSuccess:
		s.o.Metrics.scheduled(info.Status, s.o.Now())
		if pb.fw != nil {
			pb.fw.postBind(ctx)
			s.activateStashed(pb.fw.state) // the end of a successful binding
		}
		s.settle(ctx, info, pb, true)
		s.reporter.Scheduled(ctx, pod, node)
	case bindingConflict, bindingGone:
		// Bound elsewhere, recreated, or deleted: end the attempt quietly.
		// Forget keeps the pod if the cache has seen it bound meanwhile.
		s.forget(ctx, pod, pb)
		s.settle(ctx, info, pb, false)
		s.o.Logger.Debug("binding: pod bound elsewhere or gone", "pod", key, "node", node, "result", result, "err", err)
	case bindingTerminating:
		// Events and bindings are refused in that namespace; the namespace
		// controller deletes the pod soon. Say so once, and drop it.
		s.forget(ctx, pod, pb)
		s.settle(ctx, info, pb, false)
		s.o.Logger.Info("dropping pod: its namespace is terminating", "pod", key)
	case bindingStaleTerm:
		s.staleTerm(ctx, info, node, pb, err)
	default:
		if s.keepInDoubt(ctx, pod, node, pb, err) {
			if pb.gang != nil {
				pb.gang.inDoubt(ctx) // its failed members are held no more once the others end
			}
			return // the next term settles it (doubt.go)
		}
		held := true
		if pb.gang != nil {
			held = s.forgetToRetry(ctx, pod, pb)
		} else {
			s.forget(ctx, pod, pb)
		}
		if errors.Is(err, context.Canceled) {
			if pb.gang != nil {
				s.memberCancelled(ctx, info, pb, held, err)
			}
			return // shutting down: the next leader starts from the API server
		}
		if _, onNode := s.cache.NodeOf(key); onNode {
			// The informer has shown it bound (Forget keeps such a pod): the
			// request went through after all (a timeout on the answer, say),
			// or another replica bound it. Not a failure to report.
			s.cache.unretry(pod)
			s.settle(ctx, info, pb, true)
			s.o.Logger.Debug("binding: error, but the pod is bound", "pod", key, "err", err)
			return
		}
		s.o.Logger.Warn("binding failed", "pod", key, "node", node, "err", err)
		if pb.fw != nil {
			pb.fw.unnominate(ctx) // the nomination its PreBind wrote, if any
		}
		if pb.gang != nil {
			s.memberFailed(ctx, info, pb, held, err) // reported and requeued with its group
			return
		}
		// Report before requeueing: this runs beside the scheduling loop,
		// which could otherwise bind the pod again before the
		// PodScheduled=False patch lands, and the patch would then
		// contradict the binding.
		s.reporter.Unschedulable(ctx, pod, "SchedulerError", fmt.Sprintf("binding rejected: %v", err), nil)
		if qerr := s.giveBack(pb.current(info), schedq.Failure{}); qerr != nil {
			s.o.Logger.Debug("requeue after binding failure", "pod", key, "err", qerr)
		}
	}
}

// roomFreed tells the queue that pod, assumed on node until its binding
// failed, holds its room there no more, as kube-scheduler does: the event
// of an assigned pod's deletion, for every parked pod but pod itself
// (its wake budget is that node's room). Nothing if the cache still
// places the pod (seen bound meanwhile). Called with no lock held.
func (s *Scheduler) roomFreed(pod *v1.Pod, node string) {
	key := framework.Key(pod)
	if _, placed := s.cache.NodeOf(key); placed {
		return
	}
	others := func(info *schedq.Info[*v1.Pod]) bool { return framework.Key(info.Item) != key }
	if err := s.queue.Move(clusterevent.AssignedPodDelete, assumedOn(pod, node), nil, others); err != nil && !errors.Is(err, schedq.ErrClosed) {
		s.o.Logger.Debug("move after a failed binding", "pod", key, "node", node, "err", err)
	}
}

// bindingEnded counts a pod's attempt (a group member's too) once its
// binding has ended, as kube-scheduler does: scheduled if the pod was
// bound, an error otherwise (its latency then covers the binding).
func (s *Scheduler) bindingEnded(pod *v1.Pod, start time.Time, result string) {
	r := Error
	if result == bindingSuccess {
		r = Scheduled
	}
	s.o.Metrics.attempt(s.label(pod), r, s.o.Now().Sub(start))
}

// staleTerm handles a binding the API server refused because its stamp is
// not the Lease's current term: another replica leads now (or the server
// has not seen our new term yet). Like a conflict, it is no failure of the
// pod: nothing is reported and nothing logged as a failure. The pod goes
// back to its term's queue, in backoff: if the term is over, that queue is
// discarded and the pod is the next leader's; if it goes on, the pod is
// tried again once the server has seen the term.
func (s *Scheduler) staleTerm(ctx context.Context, info Attempt, node string, pb *pendingBinding, err error) {
	pod := info.Item
	if pb.gang != nil {
		held := s.forgetToRetry(ctx, pod, pb)
		s.o.Logger.Info("binding refused: made under a lease term that is not the current one", "pod", framework.Key(pod), "node", node)
		s.memberFailed(ctx, info, pb, held, err)
		return
	}
	s.forget(ctx, pod, pb)
	s.o.Logger.Info("binding refused: made under a lease term that is not the current one", "pod", framework.Key(pod), "node", node)
	if qerr := s.giveBack(pb.current(info), schedq.Failure{}); qerr != nil {
		s.o.Logger.Debug("requeue after a stale-term refusal", "pod", framework.Key(pod), "err", qerr)
	}
}

// settle ends a binding that needs no retry; bound says whether the pod
// is bound. A group member's result goes to its group's tally instead.
func (s *Scheduler) settle(ctx context.Context, info Attempt, pb *pendingBinding, bound bool) {
	if pb.gang != nil {
		pb.gang.settle(ctx, bound)
		return
	}
	s.done(info)
}

// done ends an attempt that needs no requeue.
func (s *Scheduler) done(info Attempt) {
	if err := s.queue.Done(info); err != nil {
		s.o.Logger.Debug("done after binding", "pod", framework.Key(info.Item), "err", err)
	}
}
