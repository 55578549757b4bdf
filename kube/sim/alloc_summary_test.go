package sim

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The allocation's mean is time-weighted over the run, and its peak the
// largest level; a run of no length (a snapshot with nothing to place)
// has its one level as both, not 0.
func TestAllocSummary(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name       string
		series     []AllocSample
		end        time.Duration
		mean, peak float64
	}{
		{"half the run at one half", []AllocSample{{T: 0, CPU: 0.5}, {T: 10 * s, CPU: 0}}, 20 * s, 0.25, 0.5},
		{"level held to the end", []AllocSample{{T: 0, CPU: 0.25}, {T: 10 * s, CPU: 0.75}}, 20 * s, 0.5, 0.75},
		{"nothing before the first sample", []AllocSample{{T: 10 * s, CPU: 1}}, 20 * s, 0.5, 1},
		{"a run of no length", []AllocSample{{T: 0, CPU: 0.25, FragRatio: 0.5}}, 0, 0.25, 0.25},
		{"a run of no length, two levels at its instant", []AllocSample{{T: 0, CPU: 0.25}, {T: 0, CPU: 0.5}}, 0, 0.5, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := summarize(tc.series, tc.end, false)
			if a.MeanCPU != tc.mean || a.PeakCPU != tc.peak {
				t.Errorf("mean %v peak %v, want %v and %v", a.MeanCPU, a.PeakCPU, tc.mean, tc.peak)
			}
			last := tc.series[len(tc.series)-1]
			if f := summarizeFrag(tc.series, tc.end, 1); tc.end == 0 && f.MeanRatio != last.FragRatio {
				t.Errorf("fragmentation mean %v, want %v", f.MeanRatio, last.FragRatio)
			}
		})
	}
}

// A snapshot whose pods are all bound runs for no time: the report gives
// the allocation its bound pods hold.
func TestAllocZeroLengthRun(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(snap, []byte(`apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: w}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: default}
  spec:
    nodeName: w
    containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]
  status: {phase: Running}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, parse(t, "name: zero\nsnapshot: "+snap+"\n"))
	a := r.Allocation
	if r.RunSeconds != 0 || a.MeanCPU != 0.25 || a.PeakCPU != 0.25 || a.MeanMem != 0.125 || a.PeakMem != 0.125 {
		t.Fatalf("run of %vs: cpu mean %v peak %v, memory mean %v peak %v; want 0.25 and 0.125", r.RunSeconds, a.MeanCPU, a.PeakCPU, a.MeanMem, a.PeakMem)
	}
}
