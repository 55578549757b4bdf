package main

import (
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
		{"15k x 30k", est(15_000, 30_000), 0, 399},
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
	// Once running, 800 MiB live: 28% by the budget, raised to the floor.
	if got := percentOf(800<<20, 0, followFloor); got != followFloor {
		t.Errorf("percentOf(800 MiB, 0, %d) = %d, want the floor", followFloor, got)
	}
}

// TestTuneGC: the GOGC environment variable, when set, decides; unset, a
// small scenario gets 400.
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	sc := &sim.Scenario{Nodes: []sim.NodeGroup{{Count: 10}}, Pods: []sim.PodGroup{{Count: 10}}}

	t.Setenv("GOGC", "150")
	tuneGC(sc, memoryLimit{bytes: 8 << 30, set: true})()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, tuneGC changed the GC percent to %d", got)
	}

	os.Unsetenv("GOGC") // restored by t.Setenv's cleanup
	tuneGC(sc, memoryLimit{bytes: 8 << 30, set: true})()
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("small scenario: GC percent %d, want 400", got)
	}
}

// gogc reads the GC percent in force.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// finalizersRun returns once the finalizers queued by a collection run
// now have run (one goroutine runs them in order).
func finalizersRun(t *testing.T) {
	done := make(chan struct{})
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) { close(done) })
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		select {
		case <-done:
			return
		case <-deadline:
			t.Fatal("no finalizer ran within 10s")
		default:
		}
	}
}

// TestGCFollowsLiveHeap: a run estimated at 2 GiB starts at GOGC 100;
// after a collection that finds a few MiB live (this test's heap), GOGC
// follows the live heap up to 400; once stopped, it is left alone.
func TestGCFollowsLiveHeap(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	stop := followGC(2<<30, 0)
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC %d at the start, want 100 (the estimate's)", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for gogc() != 400 {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d 10s after collections of a small heap, want 400", gogc())
		}
		runtime.GC()
		runtime.Gosched()
	}
	stop()
	finalizersRun(t) // the follower's last finalizer, armed before stop
	finalizersRun(t)
	debug.SetGCPercent(100)
	finalizersRun(t)
	finalizersRun(t)
	if got := gogc(); got != 100 {
		t.Errorf("GOGC %d after stop, want it left at 100", got)
	}
}
