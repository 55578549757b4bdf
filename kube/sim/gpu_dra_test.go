package sim

import (
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// TestTraceGPUsAsDRADevices: with gpuModel dra, DynamicResources places
// the trace's GPU pods GPU by GPU. Two shares of 600 take the two GPUs of
// the V100 node, so a share of 500 fits on neither (the capacity model,
// which sees 800 thousandths free, binds it); a whole GPU with gpu_spec T4
// goes to the T4 node, by the selector on the model attribute. The
// device model places them as DRA does.
func TestTraceGPUsAsDRADevices(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nv100,16000,65536,2,V100\nt4,16000,65536,1,T4\n",
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"+
			"share-a,1000,1024,1,600,V100,LS,Running,0,1000,0\n"+
			"share-b,1000,1024,1,600,V100,LS,Running,1,1000,1\n"+
			"share-c,1000,1024,1,500,V100,LS,Running,2,1000,2\n"+
			"whole-t4,1000,1024,1,1000,T4,LS,Running,3,1000,3\n")
	placed := func(model string, upstream bool) map[string]string {
		sc := &Scenario{Name: "dra", Seed: 1, Trace: &TraceSpec{Format: TraceAlibabaGPU, Dir: dir}}
		sc.Scheduler.GPUModel = model
		if upstream {
			sc.Scheduler.Plugins = PluginsUpstream
		}
		s := runSim(t, sc)
		out := map[string]string{}
		for _, st := range s.order {
			node := st.ext.node
			if st.bound.IsZero() {
				node = "pending: " + st.lastMessage
			}
			out[st.key.Name] = node
		}
		if upstream {
			checkClaimsMatchPods(t, s)
		}
		return out
	}
	dra := placed(GPUModelDRA, true)
	if dra["share-a"] != "v100" || dra["share-b"] != "v100" || dra["whole-t4"] != "t4" {
		t.Errorf("dra: %v, want share-a and share-b on v100, whole-t4 on t4", dra)
	}
	if !strings.Contains(dra["share-c"], "cannot allocate all claims") {
		t.Errorf("dra: share-c %q, want pending on DynamicResources", dra["share-c"])
	}
	if c := placed(GPUModelCapacity, false); c["share-c"] != "v100" {
		t.Errorf("capacity: share-c %q, want bound on v100 (800 thousandths free)", c["share-c"])
	}
	if d := placed(GPUModelDevice, false); !strings.HasPrefix(d["share-c"], "pending") || d["whole-t4"] != "t4" {
		t.Errorf("device: %v, want share-c pending and whole-t4 on t4", d)
	}
}

// TestTraceGPUClassNarrowsForOtherDrivers: the trace's DeviceClass has
// no selector while the trace's driver is the only one, and a scenario's
// ResourceSlice of another driver, created before the trace's objects or
// by an event, narrows it to the trace's driver. Three shares of 600 take
// the three GPUs of the node; a whole GPU then fits in its thousandths
// (1,200 free) but on no GPU, so it waits: it never takes the other
// driver's device on that node.
func TestTraceGPUClassNarrowsForOtherDrivers(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nv100,16000,65536,3,V100\n",
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"+
			"a,1000,1024,1,600,,LS,Running,10,1000,10\n"+
			"b,1000,1024,1,600,,LS,Running,11,1000,11\n"+
			"c,1000,1024,1,600,,LS,Running,12,1000,12\n"+
			"whole,1000,1024,1,1000,,LS,Running,13,1000,13\n")
	slice := `
      - apiVersion: resource.k8s.io/v1
        kind: ResourceSlice
        metadata: {name: v100-nic}
        spec: {nodeName: v100, driver: nic.example.com, pool: {name: v100-nic, generation: 1, resourceSliceCount: 1}, devices: [{name: nic-0}]}`
	for name, yaml := range map[string]string{
		"objects": "objects:" + slice,
		"event":   "events:\n  - at: 1s\n    createObjects:" + slice,
	} {
		sc, err := Parse([]byte("name: narrow\nscheduler: {plugins: upstream, gpuModel: dra}\ntrace: {format: alibaba-gpu-v2023, dir: " + dir + "}\n" + yaml + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		s := runSim(t, sc)
		for _, st := range s.order {
			if bound := !st.bound.IsZero(); bound != (st.key.Name != "whole") {
				t.Errorf("%s: %s bound %v (%s), want the shares bound and the whole GPU pending", name, st.key.Name, bound, st.lastMessage)
			}
		}
		class := s.obj.byKey[objectKey(traceGPUClass(false))].(*resourceapi.DeviceClass)
		if len(class.Spec.Selectors) != 1 {
			t.Errorf("%s: the trace's class has %d selectors, want 1", name, len(class.Spec.Selectors))
		}
	}
}

// TestFGDChoosesTheGPUThroughDRA: under FGD with gpuModel dra, DRA's
// allocation takes the GPU FGD chooses for a share. On a node of two
// GPUs where x (300) holds GPU 0, y (200) fits on either: the best fit is
// GPU 0 (700 left), but the workload is mostly shares of 600, which
// could no longer use GPU 0 (500 left), so FGD puts y on GPU 1. DRA's
// replay measures the fragmentation the device model's does; with
// BestFit, which takes GPU 0, it differs.
func TestFGDChoosesTheGPUThroughDRA(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn,64000,262144,2,V100\n", timedHeader+
		"x,1000,1024,1,300,,LS,Running,0,1000,0\ny,1000,1024,1,200,,LS,Running,10,1000,10\n"+
		"z1,1000,1024,1,600,,LS,Running,2000,2100,2000\nz2,1000,1024,1,600,,LS,Running,2200,2300,2200\n"+
		"z3,1000,1024,1,600,,LS,Running,2400,2500,2400\nz4,1000,1024,1,600,,LS,Running,2600,2700,2600\n")
	fragAt := func(model, policy string) []float64 {
		sc := traceScenario(dir)
		sc.Scheduler.GPUModel, sc.Scheduler.GPUPolicy = model, policy
		r := run(t, sc)
		var out []float64
		for _, a := range r.Alloc {
			if n := len(out); n == 0 || out[n-1] != a.Frag {
				out = append(out, a.Frag)
			}
		}
		return out
	}
	dra, device := fragAt(GPUModelDRA, "fgd"), fragAt(GPUModelDevice, "fgd")
	if !slices.Equal(dra, device) {
		t.Errorf("fragmentation with DRA %v, with the device model %v; want the same", dra, device)
	}
	if best := fragAt(GPUModelDRA, "bestfit"); slices.Equal(dra, best) {
		t.Errorf("FGD and BestFit measure the same fragmentation %v: the case does not tell their GPUs apart", best)
	}
}
