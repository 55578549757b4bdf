package scheduler

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"
)

// recovered ends an attempt whose cycle panicked (r is what it panicked
// with): the panic and its stack are logged, and the attempt fails as an
// error, requeued with backoff and reported (event, PodScheduled=False,
// Explain's last failure), as any error is. If the cycle had already
// handed the attempt to its bindings, they end it: it is not requeued
// twice. A pod that panicked in Reserve or Permit, assumed, goes back as
// the informer showed it last (pendingBinding.current), as after a
// rejection there. The scheduling loop goes on with the next pod.
func (s *Scheduler) recovered(ctx context.Context, info Attempt, start time.Time, r any) Outcome {
	out := Outcome{Result: Error, Message: fmt.Sprintf("internal error: scheduling cycle panicked: %v", r), logged: true}
	key := info.Key
	if info.Group != "" {
		s.o.Logger.Error("group scheduling cycle panicked", "group", info.Group, "panic", r, "stack", string(debug.Stack()))
	} else {
		s.o.Logger.Error("scheduling cycle panicked", "pod", key, "panic", r, "stack", string(debug.Stack()))
	}
	if s.committed {
		return out
	}
	if info.Group != "" {
		return s.failGroup(ctx, info, start, &groupTry{before: beforeUnknown}, out)
	}
	if pb := s.reserving; pb != nil {
		s.reserving = nil
		info = pb.current(info)
	}
	return s.fail(ctx, info, start, out)
}

// panicSite is r, the value a cycle panicked with, prefixed with the
// plugin and the extension point it came from, if the cycle's
// framework's plugins are on the panicking stack (profile.PanicSite):
// "... (plugin Faulty, at Filter)". Call it from the deferred
// function that recovers.
func (s *Scheduler) panicSite(r any) any {
	if s.cur == nil {
		return r
	}
	if name, method, ok := s.cur.fw.PanicSite(); ok {
		return fmt.Sprintf("%v (plugin %s, at %s)", r, name, method)
	}
	return r
}
