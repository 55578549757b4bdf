package sim

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/schedq/schedq/kube/gpu"
)

// TestSpreadByHand: the mean over the seeds, the sample standard
// deviation (n − 1), min and max.
func TestSpreadByHand(t *testing.T) {
	for _, c := range []struct {
		name string
		xs   []float64
		want Spread
	}{
		{"one seed: no spread", []float64{0.9}, Spread{Mean: 0.9, SD: 0, Min: 0.9, Max: 0.9}},
		{"equal runs", []float64{0.5, 0.5}, Spread{Mean: 0.5, SD: 0, Min: 0.5, Max: 0.5}},
		// deviations −0.02, 0, 0.02: √(0.0008/2) = 0.02
		{"three seeds", []float64{0.90, 0.92, 0.94}, Spread{Mean: 0.92, SD: 0.02, Min: 0.90, Max: 0.94}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := spread(c.xs)
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
			if !near(got.Mean, c.want.Mean) || !near(got.SD, c.want.SD) || got.Min != c.want.Min || got.Max != c.want.Max {
				t.Fatalf("spread = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestGPUExperimentPointsByHand runs the experiment on one node of two
// T4s and a pod list of one share of 500: each draw adds 500 thousandths
// of demand (a quarter of the capacity of 2000). BestFit packs the shares
// two to a GPU, the fifth and sixth find no room and are dropped but
// count as arrived. Each point is measured at the first draw that reaches
// it: 70% (1400) at the third pod, 1500 allocated; 80% to 100% at the
// fourth, full; 110% and 120% at the fifth, 130% at the sixth. The
// workload is the share alone, so the GPU with 500 left is no fragment.
// One node and one kind: every seed gives the same run.
func TestGPUExperimentPointsByHand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("openb_node_list_all_node.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,T4\n")
	write("openb_pod_list_default.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"+
		"p0,1000,1024,1,500,,LS,Running,0,10,0\n")
	rep, err := RunGPUExperiment(GPUExperiment{Trace: TraceSpec{Format: "alibaba-gpu-v2023", Dir: dir}, Policies: []gpu.Policy{gpu.BestFit}, Demand: 1.3, Seeds: 2, FirstSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range rep.Runs {
		if run.Arrived != 6 || run.Placed != 4 {
			t.Fatalf("seed %d: %d drawn, %d placed; want 6 and 4", run.Seed, run.Arrived, run.Placed)
		}
	}
	for i, c := range []struct {
		name            string
		demand, alloc   float64
		arrived, placed int
	}{
		{"70%: three shares", 0.7, 0.75, 3, 3},
		{"80%: four, full", 0.8, 1, 4, 4},
		{"90%", 0.9, 1, 4, 4},
		{"100%", 1.0, 1, 4, 4},
		{"110%: one dropped", 1.1, 1, 5, 4},
		{"120%", 1.2, 1, 5, 4},
		{"130%: two dropped", 1.3, 1, 6, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := rep.Runs[0].Points[i]
			if p.Demand != c.demand || p.Allocation != c.alloc || p.FragRatio != 0 || p.Arrived != c.arrived || p.Placed != c.placed {
				t.Fatalf("point %+v, want demand %v, allocation %v, ratio 0, %d drawn, %d placed", p, c.demand, c.alloc, c.arrived, c.placed)
			}
			s := rep.Summary[i]
			if s.Demand != c.demand || s.Alloc.Mean != c.alloc || s.Alloc.SD != 0 || s.Frag.Mean != 0 {
				t.Fatalf("summary %+v, want mean %v and no spread", s, c.alloc)
			}
		})
	}
}

// TestGPUExperimentGPUNodesOnly: a node without GPUs holds the pods too
// big for the GPU node (32 CPUs against 16); left out, as the artifact's
// node list leaves it, those pods find no node. The four shares of 500
// that reach 100% of the two GPUs are placed either way.
func TestGPUExperimentGPUNodesOnly(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("openb_node_list_all_node.csv", "sn,cpu_milli,memory_mib,gpu,model\nn-cpu,10000000,100000000,0,\nn-t4,16000,262144,2,T4\n")
	write("openb_pod_list_default.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"+
		"big,32000,1024,0,0,,LS,Running,0,10,0\nshare,0,1024,1,500,,LS,Running,0,10,0\n")
	for _, tc := range []struct {
		name      string
		gpuOnly   bool
		wantNodes int
	}{
		{"every node", false, 2},
		{"the nodes with GPUs only", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := RunGPUExperiment(GPUExperiment{Trace: TraceSpec{Format: "alibaba-gpu-v2023", Dir: dir}, Policies: []gpu.Policy{gpu.BestFit}, Demand: 1, Seeds: 3, FirstSeed: 1, GPUNodesOnly: tc.gpuOnly})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Nodes != tc.wantNodes || rep.GPUs != 2 || rep.GPUNodesOnly != tc.gpuOnly {
				t.Fatalf("report: %d nodes, %d GPUs, gpuNodesOnly %v; want %d, 2, %v", rep.Nodes, rep.GPUs, rep.GPUNodesOnly, tc.wantNodes, tc.gpuOnly)
			}
			bigDrawn := 0
			for _, run := range rep.Runs {
				want := run.Arrived // the CPU node holds every big pod
				if tc.gpuOnly {
					want = 4 // the shares only
				}
				if run.Placed != want {
					t.Fatalf("seed %d: %d of %d placed, want %d", run.Seed, run.Placed, run.Arrived, want)
				}
				bigDrawn += run.Arrived - 4
			}
			if bigDrawn == 0 {
				t.Fatal("no seed drew a big pod: the case checks nothing")
			}
		})
	}
}
