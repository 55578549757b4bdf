package sim

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/schedq/schedq/kube/gpu"
)

// fragTrace is one node of two T4s and three pods, one of each kind, so
// that the typical workload is a third each of a half share (a), a whole
// GPU (b) and no GPU (c): a arrives at 0 and leaves at 100, b arrives at
// 10 and leaves at 200, c runs from 0 to 300.
func fragTrace(t *testing.T) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "openb_node_list_all_node.csv"), []byte(strings.Join(nodeColumns, ",")+"\nn,16000,65536,2,T4\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "openb_pod_list_default.csv"), []byte(strings.Join(podColumns, ",")+
		"\na,1000,1024,1,500,,LS,Running,0,100,0\nc,1000,1024,0,0,,LS,Running,0,300,0\nb,1000,1024,1,1000,,LS,Running,10,200,10\n"), 0o644)
	return dir
}

// The fragmentation series, by hand from the paper's definition
// (F_n = Σ_m p_m·F_n(m), p_m = 1/3; F_n(c) is all the free GPU capacity):
//
//	idle, free [1000 1000]: a 0, b 0, c 2000 → 666.7 of 2000 free: 1/3
//	a on GPU 0, [500 1000]: a 0, b 500, c 1500 → 666.7 of 1500: 4/9
//	b on GPU 1, [500 0]:    a 0, b 500, c 500 → 333.3 of 500: 2/3
//	a leaves, [1000 0]:     a 0, b 0, c 1000 → 333.3 of 1000: 1/3
//	b leaves: idle again, 1/3
//
// The device model and DRA (whose allocations the meter reads) measure
// the same.
func TestFragmentationSeries(t *testing.T) {
	for _, model := range []string{GPUModelDevice, GPUModelDRA} {
		t.Run(model, func(t *testing.T) {
			sc := traceScenario(fragTrace(t))
			sc.Scheduler.GPUModel = model
			checkFragSeries(t, run(t, sc))
		})
	}
}

func checkFragSeries(t *testing.T, r *Report) {
	var ratios, fracs []float64
	for _, a := range r.Alloc {
		if n := len(ratios); n == 0 || math.Abs(ratios[n-1]-a.FragRatio) > 1e-9 {
			ratios = append(ratios, a.FragRatio)
		}
		if n := len(fracs); n == 0 || math.Abs(fracs[n-1]-a.Frag) > 1e-9 {
			fracs = append(fracs, a.Frag)
		}
	}
	near := func(got, want []float64) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-9 {
				return false
			}
		}
		return true
	}
	if want := []float64{1.0 / 3, 4.0 / 9, 2.0 / 3, 1.0 / 3}; !near(ratios, want) {
		t.Errorf("fragmentation ratios %v, want %v", ratios, want)
	}
	// Over the whole capacity of 2000: 666.7, 666.7, 333.3, 333.3, 666.7.
	if want := []float64{1.0 / 3, 1.0 / 6, 1.0 / 3}; !near(fracs, want) {
		t.Errorf("fragmentation over capacity %v, want %v", fracs, want)
	}
	f := r.Allocation.Frag
	if f == nil {
		t.Fatal("no fragmentation summary")
	}
	// 4/9 for 10 s, 2/3 for 90 s, 1/3 for 200 s of 300 (bindings take
	// a few milliseconds).
	if want := (4.0/9*10 + 2.0/3*90 + 1.0/3*200) / 300; math.Abs(f.MeanRatio-want) > 1e-3 || f.PeakRatio != 2.0/3 || f.RatioAtPeak != 2.0/3 || f.Kinds != 3 {
		t.Errorf("summary %+v, want mean ratio %.4f, peak and at the gpu peak 2/3, 3 kinds", f, want)
	}
	// a holds 500 for 100 s, b 1000 for 190 s.
	if row := PolicyRowOf("default", r); math.Abs(row.GPUHours-(0.5*100+1.0*190)/3600) > 1e-5 || row.Never != 0 || row.Scheduled != 3 || row.PeakGPU != 0.75 {
		t.Errorf("policy row %+v, want %.5f GPU-hours, 3 scheduled, a gpu peak of 75%%", row, (0.5*100+1.0*190)/3600)
	}
	out := text(r)
	if !strings.Contains(out, "gpu fragmented   mean 43.7% peak 66.7% of unallocated GPUs, 66.7% at the gpu peak") {
		t.Errorf("report lacks the fragmentation line:\n%s", out)
	}
	var b bytes.Buffer
	if err := r.WriteSeries(&b); err != nil {
		t.Fatal(err)
	}
	if h, _, _ := strings.Cut(b.String(), "\n"); h != "t,active,backoff,unschedulable,gated,inflight,cpu,memory,gpu,gpu_frag,gpu_frag_ratio,gpu_demand" {
		t.Errorf("series header %q", h)
	}
}

// The arrived GPU demand of fragTrace, over its 2000 thousandths: a (500)
// and c (none) at 0, 25%; b (1000) at 10 s, 75%, when a alone is bound:
// the points of 50, 60 and 70% are all that instant (25% allocated, the
// fragmentation 1/3 of all GPUs and 4/9 of the free ones), and the run
// never reaches 80%.
func TestFragmentationAgainstArrivedDemand(t *testing.T) {
	r := run(t, traceScenario(fragTrace(t)))
	var demand []float64
	for _, a := range r.Alloc {
		if n := len(demand); n == 0 || math.Abs(demand[n-1]-a.Demand) > 1e-9 {
			demand = append(demand, a.Demand)
		}
	}
	if want := []float64{0.25, 0.75}; len(demand) != 2 || math.Abs(demand[0]-want[0]) > 1e-9 || math.Abs(demand[1]-want[1]) > 1e-9 {
		t.Errorf("arrived demand %v, want %v", demand, want)
	}
	at := r.Allocation.Frag.AtDemand
	if len(at) != 3 {
		t.Fatalf("points %+v, want 50, 60 and 70%%", at)
	}
	for i, p := range at {
		if want := []float64{0.5, 0.6, 0.7}[i]; p.Demand != want || p.Allocated != 0.25 || math.Abs(p.Frag-1.0/3) > 1e-9 || math.Abs(p.FragRatio-4.0/9) > 1e-9 {
			t.Errorf("point %d: %+v, want demand %v, 25%% allocated, frag 1/3, ratio 4/9", i, p, want)
		}
	}
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `id="frag-demand-chart"`) {
		t.Error("the page lacks the chart against arrived demand")
	}
}

// TestDRAAssignedReadsAllocations: with gpuModel dra the meter places a
// bound pod on the devices of its node that its claims were allocated
// (gpu-1 here), not on a best fit of its own.
func TestDRAAssignedReadsAllocations(t *testing.T) {
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-gpu"}}
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "gpu", Driver: traceGPUDriver, Pool: "other", Device: "gpu-0"},
		{Request: "gpu", Driver: traceGPUDriver, Pool: "n", Device: "gpu-1"},
	}}}
	s := &sim{}
	s.obj.byKey = map[string]runtime.Object{objectKey(claim): claim}
	name := "p-gpu"
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: v1.PodSpec{NodeName: "n"},
		Status: v1.PodStatus{ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &name}}}}
	if at := s.draAssigned(p); len(at) != 1 || at[0] != 1 {
		t.Errorf("assigned %v, want [1] (gpu-1 of n's pool)", at)
	}
	p.Status.ResourceClaimStatuses[0].ResourceClaimName = nil
	if at := s.draAssigned(p); at != nil {
		t.Errorf("assigned %v without a claim, want none", at)
	}
}

// The capacity model has no GPUs one by one, so nothing is measured and
// the series keeps its columns.
func TestFragmentationOnlyOnDevices(t *testing.T) {
	sc := traceScenario(fragTrace(t))
	sc.Scheduler.GPUModel = GPUModelCapacity
	r := run(t, sc)
	if r.Allocation.Frag != nil || strings.Contains(text(r), "gpu fragmented") {
		t.Errorf("capacity model measured fragmentation: %+v", r.Allocation.Frag)
	}
	var b bytes.Buffer
	r.WriteSeries(&b)
	if h, _, _ := strings.Cut(b.String(), "\n"); h != strings.Join(seriesColumns, ",") {
		t.Errorf("series header %q", h)
	}
}

// BenchmarkFragMeter is the cost the measure adds to one pod bound and
// one pod leaving, on a node of 8 GPUs, against a workload of 35 kinds
// (as the default pod list's at 95%).
func BenchmarkFragMeter(b *testing.B) {
	var w gpu.Workload
	for i := range 35 {
		r := gpu.Request{CPU: int64(1000 * (1 + i%8))}
		switch {
		case i%5 == 0: // no GPU
		case i%5 == 1:
			r.Count, r.Share = 1+i%4, gpu.Milli
		default:
			r.Count, r.Share = 1, int64(100*(1+i%9))
		}
		w = append(w, gpu.Class{Req: r, P: 1.0 / 35})
	}
	m := newFragMeter(nil, w)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("96"), v1.ResourceMemory: resource.MustParse("512Gi"), ResourceGPUMilli: resource.MustParse("8000")}}}
	m.nodeAdded(node)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p"}, Spec: v1.PodSpec{NodeName: "n", Containers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("4"), ResourceGPUMilli: resource.MustParse("500")}}}}}}
	for b.Loop() {
		m.podAdded(pod)
		m.podRemoved(pod)
	}
}
