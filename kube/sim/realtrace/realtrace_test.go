// Package realtrace runs the whole Alibaba GPU trace v2023 through the
// simulator. The trace is not in the repository: it is read from
// $SCHEDQ_ALIBABA_TRACE, or from ../shared/traces/alibaba-gpu-v2023 beside
// the checkout. Without it the package's "ok" line ends in
// "[no tests to run]".
//
// Under the race detector it runs nothing and says so: the replay is
// single-threaded, so the detector has nothing to find in it, and two
// replays of the whole trace on kube-scheduler's plugins take more than
// the test command's 30 minutes there (about 20 s of CPU each without it, GPUs as DRA devices).
// .ci/run runs the package again without -race.
package realtrace

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/schedq/schedq/kube/sim"
)

var dir string

func TestMain(m *testing.M) {
	if raceDetector {
		fmt.Println("SKIP: realtrace: not under -race (a single-threaded replay of minutes); run go test -count=1 ./kube/sim/realtrace, as .ci/run does\ntesting: warning: no tests to run")
		os.Exit(0)
	}
	dir = os.Getenv("SCHEDQ_ALIBABA_TRACE")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "..", "shared", "traces", "alibaba-gpu-v2023")
	}
	if _, err := os.Stat(filepath.Join(dir, "openb_pod_list_default.csv")); err != nil {
		fmt.Printf("SKIP: realtrace: no trace at %s (set SCHEDQ_ALIBABA_TRACE)\ntesting: warning: no tests to run\n", dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runTrace(t *testing.T) *sim.Report {
	t.Helper()
	r, err := sim.Run(&sim.Scenario{Name: "alibaba", Seed: 1, Trace: &sim.TraceSpec{Format: sim.TraceAlibabaGPU, Dir: dir}}, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWholeTrace replays all 8,152 pods on the 1,523 nodes: the
// production figures are the trace's own (as its README states them,
// with the report's percentile rule), every pod arrives, and two runs
// print the same bytes.
func TestWholeTrace(t *testing.T) {
	r := runTrace(t)
	pr := r.Production
	if pr.Pods != 8152 || pr.Scheduled != 7255 || pr.Never != 897 {
		t.Fatalf("production: %d pods, %d scheduled, %d never; want 8152, 7255, 897", pr.Pods, pr.Scheduled, pr.Never)
	}
	// The element at index ⌊p·n⌋ of the 7,255 sorted delays; the README's
	// p99 of 874 s is the one before it (index ⌊p·n⌋−1).
	if pr.Delay.P50 != 2 || pr.Delay.P90 != 106 || pr.Delay.P99 != 908 {
		t.Fatalf("production delays %+v, want p50 2s, p90 106s, p99 908s", pr.Delay)
	}
	if r.Pods != 8152 || r.Scheduled+r.Withdrawn+r.Pending != r.Pods {
		t.Fatalf("simulated: %d pods, %d scheduled, %d withdrawn, %d pending", r.Pods, r.Scheduled, r.Withdrawn, r.Pending)
	}
	if r.Allocation == nil || !r.Allocation.HasGPU || r.Allocation.PeakGPU <= 0 {
		t.Fatalf("allocation %+v", r.Allocation)
	}
	var a, b bytes.Buffer
	r.WriteText(&a, false)
	runTrace(t).WriteText(&b, false)
	if a.String() != b.String() {
		t.Fatal("two runs of the trace differ")
	}
}
