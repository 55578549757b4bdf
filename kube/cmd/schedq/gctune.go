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

// followFloor is the least GOGC followGC sets. Below Go's default of
// 100: what a run allocates while a collection marks counts as live for
// that collection, so the less CPU a run spends per byte it allocates,
// the higher the next heap goal; at 50,000 nodes x 100,000 pods the
// peak resident memory rose by about 10% (120 MiB) with GOGC 100 when
// the cycle got cheaper, and 80 takes most of that back (measured: 1.20
// GB against 1.14-1.17 GB before), for a few more collections at the end
// of the run.
const followFloor = 80

// gcFollower sets GOGC again after every collection, from the heap the
// collection found live (gcPercent's rule, with followFloor as its
// floor): the estimate a run starts from is its largest heap, and while
// the heap is smaller (building the cluster, the first pods bound) the
// heap may grow to the same budget with fewer collections. It runs on
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
// collection from the live heap (gcFollower), until the returned stop.
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
		debug.SetGCPercent(percentOf(int64(f.sample[0].Value.Uint64()), f.limit, followFloor))
	}
	f.arm()
}
