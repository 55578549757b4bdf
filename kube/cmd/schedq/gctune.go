package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
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
// floor), and, if the run owns it, the soft memory limit (limitOf): the
// estimate a run starts from is its largest heap, and while the heap is
// smaller (building the cluster, the first pods bound) the heap may grow
// to the same budget with fewer collections. The limit counts all of the
// runtime's memory, not only the heap, and makes the runtime return
// freed pages early: at 50,000 nodes × 100,000 pods a limit of 1.2 GiB
// let the heap grow between collections about as far as a GOGC goal of 1
// GiB did, for the same peak resident memory, with 12 collections
// instead of 19 (4-5% less CPU). It runs on the runtime's finalizer
// goroutine until stop; a run's output does not depend on it. Safe for
// concurrent use.
type gcFollower struct {
	budget int64
	ceil   int  // gcCeiling of the estimate
	limit  bool // whether to set the memory limit
	mu     sync.Mutex
	// stopped, under mu, tells collected to set nothing more.
	stopped bool
	sample  []metrics.Sample
}

// gcSentinel is the object whose finalizer runs after a collection; it
// holds a pointer so that it is not one of the tiny objects the runtime
// packs together.
type gcSentinel struct{ f *gcFollower }

// limitOf is the soft memory limit of a run whose live heap is live
// bytes (or estimated at that): the budget, or twice the live heap if
// more, so that a heap the estimate did not foresee is collected as Go's
// default GOGC would rather than near the limit over and over.
func limitOf(live, budget int64) int64 { return max(budget, 2*live) }

// followGC sets GOGC to percentOf(est, budget, 100, gcCeiling) now and, if limit,
// the memory limit to limitOf(est, budget); then again after each
// collection from the live heap (gcFollower), until the returned stop,
// which also gives the memory limit back its former value.
func followGC(est, budget int64, limit bool) (stop func()) {
	f := &gcFollower{budget: budget, ceil: gcCeiling(est, budget), limit: limit, sample: []metrics.Sample{{Name: liveHeapMetric}}}
	debug.SetGCPercent(percentOf(est, budget, 100, f.ceil))
	var prev int64
	if limit {
		prev = debug.SetMemoryLimit(limitOf(est, budget))
	}
	f.arm()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.stopped = true
		if limit {
			debug.SetMemoryLimit(prev)
		}
	}
}

// arm leaves a sentinel for the next collection to find unreachable.
func (f *gcFollower) arm() {
	runtime.SetFinalizer(&gcSentinel{f: f}, func(s *gcSentinel) { s.f.collected() })
}

// collected follows one collection and arms for the next, unless
// stopped. Only the finalizer goroutine calls it.
func (f *gcFollower) collected() {
	stopped := f.follow()
	if h := gcFollowed.Load(); h != nil {
		(*h)(stopped)
	}
}

// follow is collected under f.mu: it reports whether f was stopped (and
// so set nothing and did not arm again).
func (f *gcFollower) follow() (stopped bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return true
	}
	metrics.Read(f.sample)
	if f.sample[0].Value.Kind() == metrics.KindUint64 {
		live := int64(f.sample[0].Value.Uint64())
		debug.SetGCPercent(percentOf(live, f.budget, followFloor, f.ceil))
		if f.limit {
			debug.SetMemoryLimit(limitOf(live, f.budget))
		}
	}
	f.arm()
	return false
}

// gcFollowed, if set, is told after each collection a follower follows
// whether the follower was stopped (it then set nothing and stopped
// arming): a test waits for that, not on the clock.
var gcFollowed atomic.Pointer[func(stopped bool)]
