package sim

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq/kube/profile"
)

const timedHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"

func recordOf(r *Report, name string) PodRecord {
	for _, rec := range r.Records {
		if rec.Name == name {
			return rec
		}
	}
	return PodRecord{}
}

func nodeOf(r *Report, name string) (string, bool) {
	for _, rec := range r.Records {
		if rec.Name == name {
			return rec.Node, rec.Bound
		}
	}
	return "", false
}

// Three shares of 600 take one GPU each of a 3-GPU node, leaving 400 free
// on each: DRA (the default) and the device model refuse a whole GPU
// there, each in one attempt by its filter; the capacity model (1,200
// thousandths free) takes it.
func TestGPUDeviceModelRefusesSplitCapacity(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,3,T4\n", timedHeader+
		"a,1000,1024,1,600,,LS,Running,0,100,0\nb,1000,1024,1,600,,LS,Running,0,100,0\nc,1000,1024,1,600,,LS,Running,0,100,0\n"+
		"d,1000,1024,1,1000,,LS,Running,10,50,10\n")
	const byDRA, byDevices = "cannot allocate all claims", "GPUs do not fit one by one"
	for _, c := range []struct {
		plugins, model string
		bound          bool
		reason         string
	}{{"", "", false, byDRA}, {"", GPUModelDevice, false, byDevices}, {"", GPUModelCapacity, true, ""},
		{PluginsUpstream, "", false, byDRA}, {PluginsUpstream, GPUModelDevice, false, byDevices}, {PluginsUpstream, GPUModelCapacity, true, ""}} {
		t.Run("plugins "+c.plugins+" model "+c.model, func(t *testing.T) {
			sc := traceScenario(dir)
			sc.Scheduler.GPUModel, sc.Scheduler.Plugins = c.model, c.plugins
			r := run(t, sc)
			d := recordOf(r, "d")
			if d.Bound != c.bound {
				t.Fatalf("whole-GPU pod bound %v, want %v", d.Bound, c.bound)
			}
			// Refused by the filter, not by a binding that failed.
			if !c.bound && (d.Attempts != 1 || !strings.Contains(d.LastFailure, c.reason)) {
				t.Fatalf("whole-GPU pod: %d attempts, last failure %q; want one attempt refused by the GPU filter", d.Attempts, d.LastFailure)
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
		for _, plugins := range []string{PluginsUpstream} {
			t.Run("policy "+c.policy+" plugins "+plugins, func(t *testing.T) {
				sc := traceScenario(dir)
				sc.Scheduler.GPUPolicy, sc.Scheduler.Plugins = c.policy, plugins
				r := run(t, sc)
				na, _ := nodeOf(r, "a")
				nb, ok := nodeOf(r, "b")
				if !ok || (na == nb) != c.together {
					t.Fatalf("a on %s, b on %s: want together %v", na, nb, c.together)
				}
			})
		}
	}
}

// A pod refused only because the GPUs do not fit one by one is parked,
// and tried again when pods holding GPUs leave: the three shares end at
// 100 s and the whole-GPU pod is bound then, at its second attempt.
func TestGPUPodWakesWhenGPUsFree(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,3,T4\n", timedHeader+
		"a,1000,1024,1,600,,LS,Running,0,100,0\nb,1000,1024,1,600,,LS,Running,0,100,0\nc,1000,1024,1,600,,LS,Running,0,100,0\n"+
		"d,1000,1024,1,1000,,LS,Running,10,500,10\n")
	for _, plugins := range []string{PluginsUpstream} {
		t.Run(plugins, func(t *testing.T) {
			sc := traceScenario(dir)
			sc.Scheduler.Plugins = plugins
			d := recordOf(run(t, sc), "d")
			if !d.Bound || d.BoundAt < 100 || d.BoundAt > 101 || d.Attempts != 2 {
				t.Fatalf("whole-GPU pod: bound %v at %.3f s after %d attempts; want bound just after 100 s at the second", d.Bound, d.BoundAt, d.Attempts)
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
	for _, plugins := range []string{PluginsUpstream} {
		t.Run(plugins, func(t *testing.T) { testGPUDevicesForget(t, dir, plugins) })
	}
}

func testGPUDevicesForget(t *testing.T, dir, plugins string) {
	sc := traceScenario(dir)
	sc.Scheduler.Plugins, sc.Scheduler.GPUModel = plugins, GPUModelDevice
	s, err := newSim(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
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

// gpuPod is a trace-like pod asking for gpuMilli thousandths of GPU.
func gpuPod(name string, gpuMilli int64) *v1.Pod {
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}
	if gpuMilli > 0 {
		req[v1.ResourceName(ResourceGPUMilli)] = *resource.NewQuantity(gpuMilli, resource.DecimalSI)
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: v1.PodSpec{SchedulerName: schedulerName, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}}}
}

// The GPU plugin signs pods, so that kube-scheduler's default profile with
// it still batches (a filter or score plugin that cannot sign turns
// signatures off for the whole profile): pods of one GPU request share a
// signature, pods of another do not. With the Random policy a pod with
// GPUs is not signed, since its scores are drawn afresh.
func TestGPUPluginSigns(t *testing.T) {
	for _, policy := range []string{"", "fgd", "random"} {
		t.Run("policy "+policy, func(t *testing.T) {
			g := newGPUDevices(&Scenario{Seed: 1, Scheduler: SchedulerSpec{GPUPolicy: policy}})
			cfg, err := profile.Default()
			if err != nil {
				t.Fatal(err)
			}
			if err := applyGPUConfig(&cfg.Profiles[0], 0, SchedulerSpec{GPUPolicy: policy}, gpuModeDevice); err != nil {
				t.Fatal(err)
			}
			fw, err := profile.NewFrameworkOn(context.Background(), &cfg.Profiles[0], profile.Setup{Snapshot: backendcache.NewEmptySnapshot(), Plugins: gpuPlugins(g)})
			if err != nil {
				t.Fatal(err)
			}
			defer fw.Close()
			sign := func(p *v1.Pod) fwk.PodSignature { return fw.Framework().SignPod(context.Background(), p) }
			half, half2, whole, none := sign(gpuPod("a", 500)), sign(gpuPod("b", 500)), sign(gpuPod("c", 1000)), sign(gpuPod("d", 0))
			if none == nil {
				t.Fatal("a pod without GPUs is not signed")
			}
			if policy == "random" {
				if half != nil || whole != nil {
					t.Fatalf("pods with GPUs signed under the Random policy: %s, %s", half, whole)
				}
				return
			}
			if half == nil || !bytes.Equal(half, half2) || bytes.Equal(half, whole) {
				t.Fatalf("signatures: half %s, half again %s, whole %s", half, half2, whole)
			}
		})
	}
}

// A burst of shares and whole GPUs on a few small nodes, where GPUs often
// fit in aggregate but not one by one: with kube-scheduler's plugins no
// binding is refused for its GPUs (the filter and Reserve see them), on
// the default scoring and under each policy, and the policies place the
// pods differently from the default scoring.
func TestGPUUpstreamBurstNoBindingRefused(t *testing.T) {
	dir := gpuBurstTrace(t)
	placed := map[string]map[string]string{}
	for _, policy := range []string{"", "bestfit", "fgd"} {
		sc := traceScenario(dir)
		sc.Scheduler.Plugins, sc.Scheduler.GPUPolicy = PluginsUpstream, policy
		r := run(t, sc)
		placed[policy] = map[string]string{}
		for _, rec := range r.Records {
			if strings.Contains(rec.LastFailure, "binding rejected") {
				t.Fatalf("policy %q: %s: %s", policy, rec.Name, rec.LastFailure)
			}
			placed[policy][rec.Name] = rec.Node
		}
	}
	for _, policy := range []string{"bestfit", "fgd"} {
		if maps.Equal(placed[policy], placed[""]) {
			t.Errorf("policy %s places every pod as the default scoring does", policy)
		}
	}
}
