package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/schedq/schedq/kube/sim"
)

// TestGCPercent: small runs collect less often, up to GOGC 400; from
// about half of the budget up they keep Go's default.
func TestGCPercent(t *testing.T) {
	est := func(nodes, pods int64) int64 { return nodes*sim.MemoryPerNode + pods*sim.MemoryPerPod }
	cases := []struct {
		name       string
		est, limit int64
		want       int
	}{
		{"5k x 10k", est(5000, 10_000), 0, 400},
		{"15k x 30k", est(15_000, 30_000), 0, 400},
		// A budget of 1 GiB (half the limit) for 205 MiB.
		{"15k x 30k under a 2Gi limit", est(15_000, 30_000), 2 << 30, 399},
		{"50k x 100k", est(50_000, 100_000), 0, 100},
		// 128 MiB of budget for 68 MiB: 88%, raised to the default.
		{"5k x 10k under a 256Mi limit", est(5000, 10_000), 256 << 20, 100},
		{"empty", 0, 0, 400},
	}
	for _, c := range cases {
		if got := gcPercent(c.est, c.limit); got != c.want {
			t.Errorf("%s: gcPercent(%d, %d) = %d, want %d", c.name, c.est, c.limit, got, c.want)
		}
	}
	// Once running, 800 MiB live: 50% by the budget, raised to the floor.
	if got := percentOf(800<<20, gcBudget, followFloor, 400); got != followFloor {
		t.Errorf("percentOf(800 MiB, %d, %d) = %d, want the floor", gcBudget, followFloor, got)
	}
	// The ceiling: 400 for a run whose heap would stay within the budget
	// at 400, else none: 50,000 × 100,000 with 120 MiB live while the
	// cluster is built may grow to the budget.
	if got := gcCeiling(est(15_000, 30_000), gcBudget); got != 400 {
		t.Errorf("gcCeiling(15k x 30k) = %d, want 400", got)
	}
	big := est(50_000, 100_000)
	if got := percentOf(120<<20, gcBudget, followFloor, gcCeiling(big, gcBudget)); got != 900 {
		t.Errorf("50k x 100k with 120 MiB live: GOGC %d, want 900 (up to the budget)", got)
	}
	// The memory limit: the budget, or twice the live heap if more.
	if got := limitOf(100<<20, gcBudget); got != gcBudget {
		t.Errorf("limitOf(100 MiB) = %d, want the budget %d", got, gcBudget)
	}
	if got := limitOf(1<<30, gcBudget); got != 2<<30 {
		t.Errorf("limitOf(1 GiB) = %d, want 2 GiB", got)
	}
}

// memLimit reads the soft memory limit in force.
func memLimit() int64 { return debug.SetMemoryLimit(-1) }

// TestTuneGC: the GOGC environment variable, when set, decides alone;
// unset, a small scenario gets GOGC 400 and the budget as its memory
// limit, given back by stop; a GOMEMLIMIT environment variable keeps the
// limit in force and lowers the budget to it.
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	prevLimit := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prevLimit)
	small := &sim.Scenario{Nodes: []sim.NodeGroup{{Count: 10}}, Pods: []sim.PodGroup{{Count: 10}}}
	limit := memoryLimit{bytes: 8 << 30, set: true}

	t.Setenv("GOGC", "150")
	stop := tuneGC(small, limit)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, tuneGC changed the GC percent to %d", got)
	}
	if got := memLimit(); got != math.MaxInt64 {
		t.Errorf("with GOGC set, tuneGC changed the memory limit to %d", got)
	}
	stop()

	os.Unsetenv("GOGC") // restored by t.Setenv's cleanup
	t.Setenv("GOMEMLIMIT", "")
	os.Unsetenv("GOMEMLIMIT")
	stop = tuneGC(small, limit)
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("small scenario: GC percent %d, want 400", got)
	}
	if got := memLimit(); got != gcBudget {
		t.Errorf("small scenario: memory limit %d, want the budget %d", got, gcBudget)
	}
	stop()
	if got := memLimit(); got != math.MaxInt64 {
		t.Errorf("after stop, memory limit %d, want it given back (%d)", got, int64(math.MaxInt64))
	}

	// GOMEMLIMIT=100MiB, as the runtime read it at start: about 59 MiB
	// of estimate may grow by 70%, raised to the default.
	t.Setenv("GOMEMLIMIT", "100MiB")
	debug.SetMemoryLimit(100 << 20)
	mid := &sim.Scenario{Pods: []sim.PodGroup{{Count: 10_000}}}
	stop = tuneGC(mid, limit)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOMEMLIMIT=100MiB: GC percent %d, want 100", got)
	}
	if got := memLimit(); got != 100<<20 {
		t.Errorf("with GOMEMLIMIT=100MiB: memory limit %d, want it kept", got)
	}
	stop()
	if got := memLimit(); got != 100<<20 {
		t.Errorf("with GOMEMLIMIT=100MiB: memory limit %d after stop, want it kept", got)
	}
}

// gogc reads the GC percent in force.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// finalizersRun returns once the finalizers queued by a collection run
// now have run: the one goroutine that runs finalizers takes those a
// collection queued as one batch, so a sentinel's finalizer queued by
// the collection it starts runs after every finalizer of the collections
// before. runtime.GC returns after a whole cycle, which finds the
// sentinel, made before it, unreachable.
func finalizersRun(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) { close(done) })
	runtime.GC()
	select {
	case <-done:
	case <-time.After(time.Minute): // a watchdog: the success path does not wait for it
		t.Fatal("the sentinel's finalizer did not run within a minute of a collection")
	}
}

// TestGCFollowsLiveHeap: a run estimated at 2 GiB starts at GOGC 100
// with a memory limit of 4 GiB; after a collection that finds a few MiB
// live (this test's heap), GOGC follows the live heap past 400 (no
// ceiling for a run this large) and the limit comes down to the budget;
// once stopped, the follower's next collection sets nothing and arms no
// more, GOGC is left alone and the limit given back. The test waits for
// the follower's own report of each collection it follows (gcFollowed),
// not on the clock.
func TestGCFollowsLiveHeap(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	prevLimit := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prevLimit)
	// The followers of tests before, stopped, see their last sentinels
	// collected first: they report to no hook and arm no more.
	finalizersRun(t)
	finalizersRun(t)
	followed := make(chan bool, 64) // more than the collections of this test
	hook := func(stopped bool) {
		select {
		case followed <- stopped:
		default:
			t.Error("gcFollowed: more collections followed than the test makes")
		}
	}
	gcFollowed.Store(&hook)
	defer gcFollowed.Store(nil)
	watchdog := time.After(time.Minute) // fails a hung test; the success path does not wait for it
	next := func() bool {
		t.Helper()
		select {
		case stopped := <-followed:
			return stopped
		case <-watchdog:
			t.Fatal("the follower did not follow a collection within a minute")
			return false
		}
	}
	stop := followGC(2<<30, gcBudget, true)
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC %d at the start, want 100 (the estimate's)", got)
	}
	if got := memLimit(); got != 4<<30 {
		t.Fatalf("memory limit %d at the start, want 4 GiB (twice the estimate)", got)
	}
	runtime.GC() // a whole cycle: the follower's sentinel is collected
	if next() {
		t.Fatal("the follower saw itself stopped before stop")
	}
	if gogc() <= 400 || memLimit() != gcBudget {
		t.Fatalf("GOGC %d, memory limit %d after a collection of a small heap, want over 400 and %d", gogc(), memLimit(), gcBudget)
	}
	stop()
	if got := memLimit(); got != math.MaxInt64 {
		t.Errorf("memory limit %d after stop, want it given back", got)
	}
	// The follower's last sentinel, armed before stop: its collection
	// finds the follower stopped (a collection followed before stop may
	// be reported first).
	for i, stopped := 0, false; !stopped; i++ {
		if i > cap(followed) {
			t.Fatalf("the follower still follows after stop: %d collections followed since", i)
		}
		runtime.GC()
		stopped = next()
	}
	debug.SetGCPercent(100)
	finalizersRun(t)
	finalizersRun(t) // the batch of the collection before has run whole
	select {
	case <-followed:
		t.Error("the follower followed a collection after it saw itself stopped")
	default:
	}
	if got := gogc(); got != 100 {
		t.Errorf("GOGC %d after stop, want it left at 100", got)
	}
	if got := memLimit(); got != math.MaxInt64 {
		t.Errorf("memory limit %d after stop and collections, want it left alone", got)
	}
}
