package sim

import (
	"os"
	"path/filepath"
	"strings"
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

// BenchmarkTraceGPUModels replays the first 500 pods of the Alibaba GPU
// trace's default list on its 1,523 nodes with each GPU model: the cost
// of modelling GPUs one by one (device) and as DRA devices (dra, the
// default) against one number per node (capacity). It needs the trace:
// SCHEDQ_ALIBABA_TRACE, else ../../../shared/traces/alibaba-gpu-v2023.
func BenchmarkTraceGPUModels(b *testing.B) {
	dir := os.Getenv("SCHEDQ_ALIBABA_TRACE")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "traces", "alibaba-gpu-v2023")
	}
	pods, err := os.ReadFile(filepath.Join(dir, "openb_pod_list_default.csv"))
	if err != nil {
		b.Skipf("no trace: %v (set SCHEDQ_ALIBABA_TRACE)", err)
	}
	nodes, err := os.ReadFile(filepath.Join(dir, "openb_node_list_all_node.csv"))
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.SplitAfterN(string(pods), "\n", 502)
	part := b.TempDir()
	if err := os.WriteFile(filepath.Join(part, "openb_node_list_all_node.csv"), nodes, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(part, "openb_pod_list_default.csv"), []byte(strings.Join(lines[:501], "")), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, model := range []string{GPUModelCapacity, GPUModelDevice, GPUModelDRA} {
		b.Run(model, func(b *testing.B) {
			sc := traceScenario(part)
			sc.Scheduler.GPUModel = model
			b.ReportAllocs()
			for b.Loop() {
				r, err := Run(sc, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if r.Scheduled != 500 {
					b.Fatalf("%d of 500 pods scheduled", r.Scheduled)
				}
			}
		})
	}
}
