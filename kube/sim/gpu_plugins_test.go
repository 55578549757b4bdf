package sim

import (
	"strings"
	"testing"
)

const timedHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"

func nodeOf(r *Report, name string) (string, bool) {
	for _, rec := range r.Records {
		if rec.Name == name {
			return rec.Node, rec.Bound
		}
	}
	return "", false
}

// Three shares of 600 take one GPU each of a 3-GPU node, leaving 400 free
// on each: the device model refuses a whole GPU there, the capacity model
// (1,200 thousandths free) takes it.
func TestGPUDeviceModelRefusesSplitCapacity(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,3,T4\n", timedHeader+
		"a,1000,1024,1,600,,LS,Running,0,100,0\nb,1000,1024,1,600,,LS,Running,0,100,0\nc,1000,1024,1,600,,LS,Running,0,100,0\n"+
		"d,1000,1024,1,1000,,LS,Running,10,50,10\n")
	for _, c := range []struct {
		model string
		bound bool
	}{{"", false}, {GPUModelDevice, false}, {GPUModelCapacity, true}} {
		t.Run("model "+c.model, func(t *testing.T) {
			sc := traceScenario(dir)
			sc.Scheduler.GPUModel = c.model
			r := run(t, sc)
			if _, bound := nodeOf(r, "d"); bound != c.bound {
				t.Fatalf("whole-GPU pod bound %v, want %v", bound, c.bound)
			}
			for _, p := range []string{"a", "b", "c"} {
				if n, ok := nodeOf(r, p); !ok || n != "n0" {
					t.Fatalf("%s on %q", p, n)
				}
			}
		})
	}
}

// With a GPU policy the policy scores: GpuPacking, BestFit and FGD put
// the second share on the half-used GPU of the first node, where the
// default least-allocated scoring spreads to the idle node. (For FGD the
// whole-GPU pod c, a third of the workload, is what an idle GPU split in
// two would lose.)
func TestGPUPolicyInReplay(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,1,T4\nn1,64000,262144,1,T4\n", timedHeader+
		"a,1000,1024,1,500,,LS,Running,0,100,0\nb,1000,1024,1,500,,LS,Running,5,100,5\nc,1000,1024,1,1000,,LS,Running,200,300,200\n")
	for _, c := range []struct {
		policy   string
		together bool
	}{{"", false}, {"gpupacking", true}, {"bestfit", true}, {"fgd", true}} {
		t.Run("policy "+c.policy, func(t *testing.T) {
			sc := traceScenario(dir)
			sc.Scheduler.GPUPolicy = c.policy
			r := run(t, sc)
			na, _ := nodeOf(r, "a")
			nb, ok := nodeOf(r, "b")
			if !ok || (na == nb) != c.together {
				t.Fatalf("a on %s, b on %s: want together %v", na, nb, c.together)
			}
		})
	}
}

// The GPUs each pod took are forgotten when it ends: after a replay in
// which a and b end and c still runs (the replay stops at its deletion
// time), the model remembers c's two GPUs only.
func TestGPUDevicesForgetEndedPods(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,T4\n", timedHeader+
		"a,1000,1024,1,500,,LS,Running,0,100,0\nb,1000,1024,1,1000,,LS,Running,5,50,5\nc,1000,1024,2,1000,,LS,Running,200,300,200\n")
	s, err := newSim(traceScenario(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.loop(); err != nil {
		t.Fatal(err)
	}
	r := s.report()
	for _, p := range []string{"a", "b", "c"} {
		if _, bound := nodeOf(r, p); !bound {
			t.Fatalf("%s was never bound", p)
		}
	}
	if n := len(s.x.gpu.assigned); n != 1 {
		t.Fatalf("the model remembers the GPUs of %d pods, want only c's", n)
	}
	for _, at := range s.x.gpu.assigned {
		if len(at) != 2 {
			t.Fatalf("c's GPUs %v, want two", at)
		}
	}
}

func TestGPUScenarioFields(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"scheduler: {gpuModel: cards}", `scheduler.gpuModel: "cards" is not device, capacity or dra`},
		{"scheduler: {gpuPolicy: tetris}", `scheduler.gpuPolicy: "tetris" is not a GPU policy`},
		{"scheduler: {gpuModel: capacity, gpuPolicy: fgd}", "scheduler.gpuPolicy: needs gpuModel device"},
	} {
		if _, err := Parse([]byte("name: x\n" + c.yaml + "\n")); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.yaml, err, c.want)
		}
	}
}
