package main

import (
	"os"
	"runtime/debug"
	"testing"

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
}

// TestTuneGC: the GOGC environment variable, when set, decides; unset, a
// small scenario gets 400.
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	sc := &sim.Scenario{Nodes: []sim.NodeGroup{{Count: 10}}, Pods: []sim.PodGroup{{Count: 10}}}

	t.Setenv("GOGC", "150")
	tuneGC(sc, memoryLimit{bytes: 8 << 30, set: true})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, tuneGC changed the GC percent to %d", got)
	}

	os.Unsetenv("GOGC") // restored by t.Setenv's cleanup
	tuneGC(sc, memoryLimit{bytes: 8 << 30, set: true})
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("small scenario: GC percent %d, want 400", got)
	}
}
