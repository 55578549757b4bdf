package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// liveHeapMetric is the runtime's count of the bytes the last collection
// found live.
const liveHeapMetric = "/gc/heap/live:bytes"

// gcFollower sets GOGC again after every collection, from the heap the
// collection found live (gcPercent of it): the estimate a run starts
// from is its largest heap, and while the heap is smaller (building the
// cluster, the first pods bound) the heap may grow to the same budget
// with fewer collections. The heap's peak stays the larger of the
// budget and twice the live heap, as with the estimate alone. It runs on
// the runtime's finalizer goroutine until stop; a run's output does not
// depend on it. Safe for concurrent use.
type gcFollower struct {
	limit   int64 // as gcPercent's
	stopped atomic.Bool
	sample  []metrics.Sample
}

// gcSentinel is the object whose finalizer runs after a collection; it
// holds a pointer so that it is not one of the tiny objects the runtime
// packs together.
type gcSentinel struct{ f *gcFollower }

// followGC sets GOGC to gcPercent(est, limit) now, then after each
// collection to gcPercent of the live heap, until the returned stop.
func followGC(est, limit int64) (stop func()) {
	f := &gcFollower{limit: limit, sample: []metrics.Sample{{Name: liveHeapMetric}}}
	debug.SetGCPercent(gcPercent(est, limit))
	f.arm()
	return func() { f.stopped.Store(true) }
}

// arm leaves a sentinel for the next collection to find unreachable.
func (f *gcFollower) arm() {
	runtime.SetFinalizer(&gcSentinel{f: f}, func(s *gcSentinel) { s.f.collected() })
}

// collected follows one collection and arms for the next, unless
// stopped. Only the finalizer goroutine calls it.
func (f *gcFollower) collected() {
	if f.stopped.Load() {
		return
	}
	metrics.Read(f.sample)
	if f.sample[0].Value.Kind() == metrics.KindUint64 {
		debug.SetGCPercent(gcPercent(int64(f.sample[0].Value.Uint64()), f.limit))
	}
	f.arm()
}
