package sim

import (
	"strings"
	"testing"
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
		s, err := newSim(sc, Options{CheckInvariants: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		if err := s.loop(); err != nil {
			t.Fatal(err)
		}
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
