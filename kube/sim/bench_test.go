package sim

import (
	"path/filepath"
	"testing"
)

// BenchmarkSchedulingLarge is the simulator's cost at 15,000 nodes and
// 30,000 pods (testdata/perf/Basic15k.yaml), a smaller cousin of the
// 50,000 × 100,000 run in docs/simulator-performance.md that keeps
// "go test -bench" reasonable. Its cost grows with nodes × pods wherever a
// plugin or the bookkeeping walks what it should index.
func BenchmarkSchedulingLarge(b *testing.B) {
	benchScenario(b, filepath.Join("testdata", "perf", "Basic15k.yaml"))
}

func benchScenario(b *testing.B, name string) {
	sc := load(b, name)
	b.ReportAllocs()
	for b.Loop() {
		r, err := Run(sc, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(r.Attempts)/r.Wall.Seconds, "cycles/s")
	}
}
