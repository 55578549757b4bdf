package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	fwframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// fwBinding is what the binding of a pod placed by the framework needs of
// its cycle: the framework, the cycle's state and the assumed pod
// (spec.nodeName set), to run PreBind, PostBind or Unreserve from the
// binding's goroutine. Unreserve runs at most once, from whichever of the
// cycle or the binding gets there first, and never from the cache's abort
// while the plugins still run: a node deleted while Reserve, Permit or
// PreBind is still running on it must not undo the reservation before (or
// while) it is made; it unreserves once both the abort has come and those
// plugins are done (ended), and only then gives the pod back (requeue): a
// pod retried earlier could reserve again before the late Unreserve,
// which would undo that new reservation (plugins key theirs by pod,
// DynamicResources by its claims).
type fwBinding struct {
	fw    fwframework.Framework
	state fwk.CycleState
	pod   *v1.Pod
	node  string
	once  sync.Once
	// requeue gives the pod back after its node's deletion aborted the
	// binding, once unreserved (ended).
	requeue func()
	// log gets the panics of Unreserve and PostBind, which end nothing.
	log *slog.Logger
	// prof is fw's profile, which names the plugin a panic came from.
	prof *profile.Framework
	// noms writes the pod's nomination before a PreBind that has work
	// (Options.Nominations; nil: none), and nominated says one was
	// decided and is not cleared yet (bindnom.go).
	noms      BindingNominator
	nominated atomic.Bool

	mu          sync.Mutex
	aborted     bool // the node's deletion aborted the binding
	pluginsDone bool // Reserve, Permit and PreBind have returned
	requeued    bool
}

// ended records that the binding was aborted (abort) or that its plugins
// are done (!abort); the second of the two to come unreserves and
// requeues the pod, once. Safe for concurrent use: the abort comes from
// the informer's goroutine.
func (b *fwBinding) ended(ctx context.Context, abort bool) {
	b.mu.Lock()
	if abort {
		b.aborted = true
	} else {
		b.pluginsDone = true
	}
	now := b.aborted && b.pluginsDone && !b.requeued
	b.requeued = b.requeued || now
	b.mu.Unlock()
	if now {
		b.unreserve(ctx)
		b.unnominate(ctx) // before the pod goes back: see unnominate
		if b.requeue != nil {
			b.requeue()
		}
	}
}

// unreserve runs the Unreserve plugins, once. A panic in one is logged
// and ends only that plugin's Unreserve (profile.Framework.Unreserve):
// the other plugins give back what they reserved, and what called it
// (forgetting the assumed pod, requeueing it, the next member's
// Unreserve) goes on, on the cycle's goroutine and on the binding's
// alike.
func (b *fwBinding) unreserve(ctx context.Context) {
	b.once.Do(func() {
		if b.prof == nil {
			defer b.logPanic("Unreserve")
			b.fw.RunReservePluginsUnreserve(ctx, b.state, b.pod, b.node)
			return
		}
		for _, err := range b.prof.Unreserve(ctx, b.state, b.pod, b.node) {
			b.logger().Error("Unreserve plugin panicked", "pod", framework.Key(b.pod), "node", b.node, "panic", err)
		}
	})
}

// postBind runs the PostBind plugins, on the binding's goroutine (the
// cycle's with a synchronous binder). The pod is bound: a panic in one
// is logged, the plugins after it still run (profile.Framework.PostBind),
// and the binding ends as bound.
func (b *fwBinding) postBind(ctx context.Context) {
	if b.prof == nil {
		defer b.logPanic("PostBind")
		b.fw.RunPostBindPlugins(ctx, b.state, b.pod, b.node)
		return
	}
	for _, err := range b.prof.PostBind(ctx, b.state, b.pod, b.node) {
		b.logger().Error("PostBind plugin panicked", "pod", framework.Key(b.pod), "node", b.node, "panic", err)
	}
}

// logPanic, deferred, recovers a panic of the plugins of point and logs
// it with its stack.
func (b *fwBinding) logPanic(point string) {
	if r := recover(); r != nil {
		b.logger().Error(point+" plugin panicked", "pod", framework.Key(b.pod), "node", b.node, "panic", b.site(r), "stack", string(debug.Stack()))
	}
}

// site is r, a recovered panic's value, prefixed with the plugin and
// the extension point it came from, when known (profile.PanicSite). Call
// it from the deferred function that recovers.
func (b *fwBinding) site(r any) any {
	if name, method, ok := b.prof.PanicSite(); ok {
		return fmt.Sprintf("%v (plugin %s, at %s)", r, name, method)
	}
	return r
}

// logger is b.log, or slog's default.
func (b *fwBinding) logger() *slog.Logger {
	if b.log == nil {
		return slog.Default()
	}
	return b.log
}

// preBind runs the PreBind plugins; a panic in one is returned as an
// error status, since it runs on the binding's goroutine, and so is one
// on the framework's parallelizer, which runs several PreBind plugins at
// once (profile.WithPanicSink).
func (b *fwBinding) preBind(ctx context.Context) (st *fwk.Status) {
	defer func() {
		if r := recover(); r != nil {
			st = fwk.AsStatus(fmt.Errorf("PreBind panicked: %v", b.site(r)))
		}
	}()
	ctx = b.prof.WithPanicSink(ctx)
	st = b.fw.RunPreBindPlugins(ctx, b.state, b.pod, b.node)
	profile.RepanicIn(ctx, false)
	return st
}

// preFlight runs the PreBind plugins' PreBindPreFlight; a panic in one
// is returned as an error status: it runs after the cycle handed the pod
// to its binding, where the cycle's recovery no longer ends the attempt,
// and the binding ends it as a failed one.
func (b *fwBinding) preFlight(ctx context.Context) (st *fwk.Status) {
	defer func() {
		if r := recover(); r != nil {
			st = fwk.AsStatus(fmt.Errorf("PreBindPreFlight panicked: %v", b.site(r)))
		}
	}()
	return b.fw.RunPreBindPreFlights(ctx, b.state, b.pod, b.node)
}

// forget undoes an assumption after a binding that did not go through,
// and the framework's reservations with it.
func (s *Scheduler) forget(ctx context.Context, pod *v1.Pod, pb *pendingBinding) {
	s.unassume(pod, pb)
	if pb.fw != nil {
		pb.fw.unreserve(ctx)
	}
}

// forgetToRetry is forget for a group member whose binding failed and
// that is to be given back with its group once the other bindings of its
// attempt have ended: the cache holds it as retrying from the same step
// (Cache.retrying). It reports whether the cache still held the member's
// assumption; if not, the informer has shown the member bound, deleted or
// replaced, and it is not to be given back.
func (s *Scheduler) forgetToRetry(ctx context.Context, pod *v1.Pod, pb *pendingBinding) bool {
	held := s.cache.forget(pod, pb.gang)
	if pb.fw != nil {
		pb.fw.unreserve(ctx)
	}
	return held
}

// assumedOn returns pod placed on node, the object the framework's
// Reserve, Permit and binding plugins are given: a shallow copy with
// spec.nodeName set, which shares pod's maps and slices. Objects from the
// informers are read-only (every writer copies first), and so they are
// to plugins: kube-scheduler's plugins take the pod as read-only too. O(1).
func assumedOn(pod *v1.Pod, node string) *v1.Pod {
	cp := *pod
	cp.Spec.NodeName = node
	return &cp
}

// fwCommit assumes pod on the chosen node, runs Reserve and Permit there
// and starts the binding (startBinding). A rejection at Reserve or Permit
// (or a panic) unreserves and forgets the pod before the attempt fails.
func (s *Scheduler) fwCommit(ctx context.Context, info Attempt, pi *framework.PodInfo, cs fwk.CycleState, out Outcome, start time.Time) Outcome {
	fw := s.cur.fw.Framework()
	node := out.Node
	assumed := assumedOn(info.Item, node)
	fb := &fwBinding{fw: fw, state: cs, pod: assumed, node: node, log: s.o.Logger, prof: s.cur.fw, noms: s.o.Nominations}
	pb := s.newBinding(info, node)
	pb.fw = fb
	fb.requeue = pb.abort
	pb.abort = func() { fb.ended(ctx, true) }
	if err := s.cache.Assume(pi, node, pb); err != nil {
		if errors.Is(err, errDeletionStarted) {
			return s.dropDeleting(info, start, err)
		}
		s.endNomination(info.Item, "not assumed")
		return s.fail(ctx, info, start, Outcome{Result: Error, Message: err.Error()})
	}
	held := true
	release := func() {
		if held {
			held = false
			fb.unreserve(ctx)
			s.unassume(info.Item, pb)
		}
	}
	defer release() // a panic in Reserve or Permit
	// A panic there gives the pod back as pb holds it (recovered).
	s.reserving = pb
	if st := fb.reservePermit(ctx); st != nil {
		release()
		s.reserving = nil
		s.endNomination(info.Item, "rejected at Reserve or Permit")
		// As the informer shows it now, if it was updated since Assume.
		return s.fail(ctx, pb.current(info), start, onNodeOutcome(assumed, node, st))
	}
	held = false
	s.reserving = nil
	s.committed = true // the binding owns the attempt from here
	s.assumed(info.Item, node)
	s.activateStashed(cs) // the end of a successful scheduling cycle
	s.startBinding(ctx, info, node, pb, start)
	return out
}

// dropDeleting ends, with no report, the attempt of a pod whose deletion
// the informer showed start during its cycle, which Assume refused: the
// queue has dropped the pod already, and the API server would refuse its
// binding. It counts as an attempt that ended in an error.
func (s *Scheduler) dropDeleting(info Attempt, start time.Time, err error) Outcome {
	out := Outcome{Result: Error, Message: err.Error()}
	s.o.Logger.Debug("not assumed: its deletion started during its cycle", "pod", info.Key, "err", err)
	s.o.Metrics.attempt(s.label(info.Item), out.Result, s.o.Now().Sub(start))
	s.done(info)
	return out
}

// reservePermit runs the Reserve plugins, then the Permit plugins, on b's
// node, and returns the status that stopped them (nil if none did). The
// caller unreserves after a failure. Permit's Wait is an error: schedq
// does not hold pods at Permit.
func (b *fwBinding) reservePermit(ctx context.Context) *fwk.Status {
	if st := b.fw.RunReservePluginsReserve(ctx, b.state, b.pod, b.node); !st.IsSuccess() {
		return st
	}
	if waits, st := b.fw.RunPermitPlugins(ctx, b.state, b.pod, b.node); !st.IsSuccess() {
		if st.IsWait() {
			// The framework's wait status names no plugin: the plugins
			// that asked are the keys of their wait times.
			names := strings.Join(slices.Sorted(maps.Keys(waits)), ", ")
			st = fwk.NewStatus(fwk.Error, fmt.Sprintf("Permit plugin %s asked the pod to wait; schedq does not wait at Permit", names))
		}
		return st
	}
	return nil
}

// startBinding starts the binding of an assumed pod. For a pod placed by
// the framework (pb.fw), it binds on this goroutine if no PreBind plugin
// has work (RunPreBindPreFlights skips), else on one of its own that runs
// PreBind first (on this one too with Options.SyncPreBind), which Wait
// waits for; a PreFlight or PreBind failure is a failed binding.
func (s *Scheduler) startBinding(ctx context.Context, info Attempt, node string, pb *pendingBinding, start time.Time) {
	fb := pb.fw
	if fb == nil {
		s.bind(ctx, info, node, pb, start)
		return
	}
	if pb.state.Load() == bindAborted { // the node went during Reserve or Permit
		s.bound(ctx, info, node, pb, start, ErrNodeDeleted)
		return
	}
	switch st := fb.preFlight(ctx); {
	case st.IsSkip():
		fb.ended(ctx, false)
		s.bind(ctx, info, node, pb, start)
	case !st.IsSuccess():
		s.bound(ctx, info, node, pb, start, pluginBindError{st.AsError()})
	default:
		// PreBind has work: the pod's status names the node meanwhile.
		write := fb.nominate()
		bind := func() {
			fb.writeNomination(ctx, write)
			if st := fb.preBind(ctx); !st.IsSuccess() {
				s.bound(ctx, info, node, pb, start, pluginBindError{fmt.Errorf("PreBind: %w", st.AsError())})
				return
			}
			fb.ended(ctx, false)
			s.bind(ctx, info, node, pb, start)
		}
		if s.o.SyncPreBind {
			bind()
		} else {
			s.preBinds.Go(bind)
		}
	}
}

// onNodeOutcome is the outcome of a rejection on the chosen node (at
// Reserve or Permit): Unschedulable with upstream's message for one node
// if the plugin rejected the pod, an Error otherwise.
func onNodeOutcome(pod *v1.Pod, node string, st *fwk.Status) Outcome {
	if !st.IsRejected() {
		return Outcome{Result: Error, Message: st.AsError().Error()}
	}
	diag := fwframework.Diagnosis{NodeToStatus: fwframework.NewDefaultNodeToStatus()}
	diag.NodeToStatus.Set(node, st)
	diag.AddPluginStatus(st)
	return fitOutcome(pod, 1, diag)
}

// Wait waits for the goroutines the scheduler started to run PreBind
// before a binding (startBinding) to end, each having handed its binding
// to the Binder or ended it. Call it once the scheduling loop has stopped,
// then wait for the Binder's own bindings (APIBinder.Wait): a PreBind
// that ends late still starts its binding.
func (s *Scheduler) Wait() { s.preBinds.Wait() }
