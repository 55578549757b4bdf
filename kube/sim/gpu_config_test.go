package sim

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/schedq/schedq/kube/gpu"
	"github.com/schedq/schedq/kube/internal/errtest"
	"github.com/schedq/schedq/kube/profile"
)

// gpuBurstTrace writes a burst of shares and whole GPUs on six nodes of
// two T4s, where GPUs often fit in aggregate but not one by one.
func gpuBurstTrace(t *testing.T) string {
	t.Helper()
	nodes := "sn,cpu_milli,memory_mib,gpu,model\n"
	for i := range 6 {
		nodes += fmt.Sprintf("n%d,64000,262144,2,T4\n", i)
	}
	pods := timedHeader
	shares := []struct{ n, milli int }{{1, 300}, {1, 600}, {1, 1000}, {2, 1000}, {1, 500}, {1, 700}}
	for i := range 40 {
		s := shares[(i*7)%len(shares)]
		pods += fmt.Sprintf("p%02d,1000,1024,%d,%d,,LS,Running,%d,%d,%d\n", i, s.n, s.milli, i, i+200+(i*37)%300, i)
	}
	return writeTrace(t, nodes, pods)
}

// placements runs sc and returns each pod's node.
func placements(t *testing.T, sc *Scenario) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, rec := range run(t, sc).Records {
		out[rec.Name] = rec.Node
	}
	return out
}

// TestGPUPolicyConfigMatchesFlag: for each policy, the example
// configuration (testdata/gpu-policy-fgd.yaml, its policy replaced)
// places every pod where --gpu-policy does, and the policies do not all
// place alike.
func TestGPUPolicyConfigMatchesFlag(t *testing.T) {
	example, err := os.ReadFile("testdata/gpu-policy-fgd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := gpuBurstTrace(t)
	distinct := map[string]bool{}
	for _, p := range gpu.Policies() {
		t.Run(p.String(), func(t *testing.T) {
			name, err := gpuPolicyArg(p.String())
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "config.yaml")
			body := strings.Replace(string(example), "policy: FGD", "policy: "+name, 1)
			if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			byFlag := traceScenario(dir)
			byFlag.Scheduler.GPUPolicy = p.String()
			byConfig := traceScenario(dir)
			byConfig.Scheduler.Config = file
			want, got := placements(t, byFlag), placements(t, byConfig)
			if !maps.Equal(got, want) {
				t.Fatalf("config places %v\nflag places   %v", got, want)
			}
			distinct[fmt.Sprint(got)] = true
		})
	}
	if len(distinct) < 3 {
		t.Errorf("%d distinct placements over the six policies: the policies are not in effect", len(distinct))
	}
}

// gpuProfileOf decodes a configuration's only profile.
func gpuProfileOf(t *testing.T, body string) *config.KubeSchedulerProfile {
	t.Helper()
	cfg, err := profile.Decode([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + body))
	if err != nil {
		t.Fatal(err)
	}
	return &cfg.Profiles[0]
}

// TestApplyGPUConfig: how scheduler.gpuPolicy and a profile that names
// GPUDevices combine, case by case.
func TestApplyGPUConfig(t *testing.T) {
	const (
		scoreW5   = "profiles:\n- plugins:\n    score:\n      enabled: [{name: GPUDevices, weight: 5}]\n"
		argsBest  = "  pluginConfig:\n  - {name: GPUDevices, args: {policy: BestFit}}\n"
		argsAlone = "profiles:\n- pluginConfig:\n  - {name: GPUDevices, args: {policy: GpuPacking}}\n"
	)
	for _, tc := range []struct {
		name, config, flag string
		mode               string // "" (the device model), "none" or "dra"
		policy             string // accepted: the args' policy
		only               bool   // accepted: GPUDevices the only scorer
		weight             int32  // accepted: its weight at score (0: not scoring)
		want               []string
	}{
		{name: "flag alone makes the policy the only scorer", flag: "fgd", policy: "FGD", only: true, weight: 1},
		{name: "neither: GPUDevices filters and reserves only"},
		{name: "config's weight and args", config: scoreW5 + argsBest, policy: "BestFit", weight: 5},
		{name: "flag with the config's weight keeps its other scorers", config: scoreW5, flag: "dotprod", policy: "DotProd", weight: 5},
		{name: "flag and config agree", config: scoreW5 + argsBest, flag: "bestfit", policy: "BestFit", weight: 5},
		{name: "args without score choose GPUs only", config: argsAlone, policy: "GpuPacking"},
		{name: "flag and config disagree", config: scoreW5 + argsBest, flag: "fgd",
			want: []string{"scheduler.gpuPolicy (--gpu-policy) fgd", "gpu.yaml's profiles[0].pluginConfig[", "args.policy BestFit disagree"}},
		{name: "flag with GPUDevices' score disabled", config: "profiles:\n- plugins:\n    score:\n      disabled: [{name: GPUDevices}]\n", flag: "fgd",
			want: []string{"scheduler.gpuPolicy (--gpu-policy) fgd scores with GPUDevices, which gpu.yaml disables at score"}},
		{name: "score without a policy", config: scoreW5,
			want: []string{"gpu.yaml enables GPUDevices at score without a policy"}},
		{name: "filter disabled", config: "profiles:\n- plugins:\n    filter:\n      disabled: [{name: GPUDevices}]\n",
			want: []string{"gpu.yaml disables GPUDevices at filter"}},
		{name: "multiPoint disabled", config: "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: GPUDevices}]\n",
			want: []string{"gpu.yaml disables GPUDevices at preFilter"}},
		{name: "multiPoint enabled scores too", config: "profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: GPUDevices, weight: 2}]\n",
			want: []string{"enables GPUDevices at score without a policy"}},
		{name: "named without the device model", config: argsAlone, mode: "none",
			want: []string{"gpu.yaml names GPUDevices (profiles[0].pluginConfig[", "gpuModel device or dra"}},
		{name: "dra: flag alone makes the policy the only scorer", mode: "dra", flag: "gpupacking", policy: "GpuPacking", only: true, weight: 1},
		{name: "dra: config's weight and args", mode: "dra", config: scoreW5 + argsBest, policy: "BestFit", weight: 5},
		{name: "dra: GPUDevices at filter", mode: "dra", config: "profiles:\n- plugins:\n    filter:\n      enabled: [{name: GPUDevices}]\n",
			want: []string{"gpu.yaml enables GPUDevices at filter: with gpuModel dra, DynamicResources fits and allocates"}},
		{name: "dra: score without a policy", mode: "dra", config: scoreW5,
			want: []string{"gpu.yaml enables GPUDevices at score without a policy"}},
		{name: "enabled without the device model", config: scoreW5, mode: "none",
			want: []string{"gpu.yaml names GPUDevices (profiles[0].plugins.score.enabled[0])"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prof := gpuProfileOf(t, tc.config)
			mode := map[string]gpuMode{"": gpuModeDevice, "none": gpuModeNone, "dra": gpuModeDRA}[tc.mode]
			err := applyGPUConfig(prof, 0, SchedulerSpec{Config: "gpu.yaml", GPUPolicy: tc.flag}, mode)
			if tc.want != nil {
				errtest.Names(t, err, tc.want...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkGPUProfile(t, prof, mode, tc.policy, tc.only, tc.weight)
		})
	}
}

// checkGPUProfile checks that prof runs GPUDevices at PreFilter, Filter
// and Reserve on the device model (not with DRA), with policy in its args, at score with weight (0: not at
// score), and as the only scorer if only.
func checkGPUProfile(t *testing.T, prof *config.KubeSchedulerProfile, mode gpuMode, policy string, only bool, weight int32) {
	t.Helper()
	p := prof.Plugins
	for _, pt := range gpuPoints {
		if at := enabledAt(p, pt.set(p)); at != (mode == gpuModeDevice) {
			t.Errorf("GPUDevices at %s: %v, want %v", pt.name, at, mode == gpuModeDevice)
		}
	}
	var got int32
	for _, pl := range p.Score.Enabled {
		if pl.Name == profile.GPUDevices {
			got = pl.Weight
		}
	}
	if got != weight {
		t.Errorf("score weight %d, want %d (score %+v)", got, weight, p.Score)
	}
	if starred := disabled(&p.Score, true) && !disabled(&p.Score, false); starred != only {
		t.Errorf("other scorers disabled: %v, want %v", starred, only)
	}
	args := &profile.GPUDevicesArgs{}
	for _, pc := range prof.PluginConfig {
		if pc.Name == profile.GPUDevices {
			a, err := profile.DecodeGPUDevicesArgs(pc.Args)
			if err != nil {
				t.Fatal(err)
			}
			args = a
		}
	}
	if args.Policy != policy {
		t.Errorf("policy %q, want %q", args.Policy, policy)
	}
}

// TestGPUConfigConflictRefusedAtValidate: a scenario whose policy and
// configuration disagree is refused when it is validated, before any run
// (as the per-policy table checks every scenario first).
func TestGPUConfigConflictRefusedAtValidate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gpu.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- pluginConfig:\n  - {name: GPUDevices, args: {policy: FGD}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sc := traceScenario("testdata/alibaba")
	sc.Scheduler.Config = file
	if err := sc.Validate(); err != nil {
		t.Fatalf("the config alone: %v", err)
	}
	sc.Scheduler.GPUPolicy = "fgd"
	if err := sc.Validate(); err != nil {
		t.Fatalf("the same policy twice: %v", err)
	}
	sc.Scheduler.GPUPolicy = "random"
	err := sc.Validate()
	if err == nil || !strings.Contains(err.Error(), "scheduler.config: scheduler.gpuPolicy (--gpu-policy) random and "+file) {
		t.Fatalf("got %v, want the disagreement refused", err)
	}
}

// draRun replays sc (gpuModel dra) and returns each pod's node and the
// devices its claim was allocated.
func draRun(t *testing.T, sc *Scenario) (nodes map[string]string, devices map[string]string) {
	t.Helper()
	s := runSim(t, sc)
	nodes, devices = map[string]string{}, map[string]string{}
	for _, st := range s.order {
		if st.bound.IsZero() {
			t.Fatalf("%s not bound: %s", st.key.Name, st.lastMessage)
		}
		nodes[st.key.Name] = st.ext.node
	}
	for _, o := range s.obj.byKey {
		c, ok := o.(*resourceapi.ResourceClaim)
		if !ok || c.Status.Allocation == nil {
			continue
		}
		var ds []string
		for _, d := range c.Status.Allocation.Devices.Results {
			ds = append(ds, d.Pool+"/"+d.Device)
		}
		devices[metav1.GetControllerOf(c).Name] = strings.Join(ds, ",")
	}
	checkClaimsMatchPods(t, s)
	return nodes, devices
}

// TestGPUPolicyUnderDRA: with gpuModel dra, GPUDevices scores by the
// policy from the devices DRA allocated, and DRA's allocator chooses the
// devices. Three idle nodes of two T4s, and shares of 600, 300, 500 and
// 500 in turn: GpuPacking puts all four on the node of the first (each
// later share fits a partly used GPU there, or needs one fresh GPU of a
// node in use, which beats an idle node), on the GPUs DRA takes, the
// best fit: 600 and 300 on gpu-0, 500 and 500 on gpu-1. The default scoring spreads them. The example configuration,
// with GpuPacking, places them as --gpu-policy does.
func TestGPUPolicyUnderDRA(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\nn1,32000,65536,2,T4\nn2,32000,65536,2,T4\n",
		timedHeader+
			"a600,1000,1024,1,600,,LS,Running,0,1000,0\n"+
			"b300,1000,1024,1,300,,LS,Running,1,1000,1\n"+
			"c500,1000,1024,1,500,,LS,Running,2,1000,2\n"+
			"d500,1000,1024,1,500,,LS,Running,3,1000,3\n")
	scenario := func(policy, config string) *Scenario {
		sc := traceScenario(dir)
		sc.Scheduler.GPUModel, sc.Scheduler.GPUPolicy, sc.Scheduler.Config = GPUModelDRA, policy, config
		return sc
	}
	nodes, devices := draRun(t, scenario("gpupacking", ""))
	n := nodes["a600"]
	for pod, want := range map[string]string{"a600": "gpu-0", "b300": "gpu-0", "c500": "gpu-1", "d500": "gpu-1"} {
		if nodes[pod] != n || devices[pod] != n+"/"+want {
			t.Errorf("gpupacking: %s on %s (%s), want %s/%s", pod, nodes[pod], devices[pod], n, want)
		}
	}
	if def, _ := draRun(t, scenario("", "")); def["a600"] == def["b300"] && def["b300"] == def["c500"] {
		t.Errorf("default scoring packs too: %v", def)
	}
	example, err := os.ReadFile("testdata/gpu-policy-fgd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(string(example), "policy: FGD", "policy: GpuPacking", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if byConfig, _ := draRun(t, scenario("", file)); !maps.Equal(byConfig, nodes) {
		t.Errorf("the configuration places %v, --gpu-policy %v", byConfig, nodes)
	}
}

// TestGPUPolicyUnderDRAReadsAllocations: under DRA the policy's choice
// of GPU is DRA's allocation (the devices listed fullest first), and the
// node GPUDevices scores is the one DRA's allocations make, not one
// rebuilt from the pods in order. On node a (two T4s): a400 and b300 take
// gpu-0, c700 gpu-1 (300 left); a400 leaves (gpu-0: 700 left). A share of
// 300 then fits a partly used GPU exactly on a (GpuPacking 97), more than
// on b, whose gpu-0 v200 holds (800 left: 92), and goes to a's gpu-1, the
// best fit, where DRA in index order would take gpu-0. Rebuilt from the
// pods in order (b300 and c700 both on gpu-0), a would have no partly used
// GPU that holds 300 (49), and w300 would go to b.
func TestGPUPolicyUnderDRAReadsAllocations(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\na,32000,65536,2,T4\nb,32000,65536,2,V100\n",
		timedHeader+
			"a400,1000,1024,1,400,T4,LS,Running,0,5,0\n"+
			"b300,1000,1024,1,300,T4,LS,Running,1,1000,1\n"+
			"c700,1000,1024,1,700,T4,LS,Running,2,1000,2\n"+
			"v200,1000,1024,1,200,V100,LS,Running,3,1000,3\n"+
			"w300,1000,1024,1,300,,LS,Running,7,1000,7\n")
	sc := traceScenario(dir)
	sc.Scheduler.GPUModel, sc.Scheduler.GPUPolicy = GPUModelDRA, "gpupacking"
	nodes, devices := draRun(t, sc)
	for pod, want := range map[string]string{"b300": "a/gpu-0", "c700": "a/gpu-1", "v200": "b/gpu-0", "w300": "a/gpu-1"} {
		if devices[pod] != want {
			t.Errorf("%s on %s (%s), want %s", pod, nodes[pod], devices[pod], want)
		}
	}
}

// TestConfigRefusedAtValidate: a scheduler.config that does not load, or
// one of whose profiles (the second's, named by its field path) names
// GPUDevices outside a GPU replay, is refused when the scenario is
// validated, so that --compare config=FILE fails before the first run
// rather than after it.
func TestConfigRefusedAtValidate(t *testing.T) {
	dir := t.TempDir()
	two := filepath.Join(dir, "two.yaml")
	if err := os.WriteFile(two, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n- schedulerName: b\n"+
		"  plugins: {filter: {enabled: [{name: GPUDevices}]}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	for _, c := range []struct{ name, file, want string }{
		{"missing file", missing, "scheduler.config: open " + missing},
		{"second profile names GPUDevices", two, "scheduler.config: " + two + " names GPUDevices (profiles[1].plugins.filter.enabled[0])"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := load(t, "VolumeWait")
			if err := sc.Set("config", c.file); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// TestGPUReplayRefusesTwoProfiles: a GPU replay (a trace on the DRA or
// device model) runs one profile, the GPU model holding one policy: a
// scheduler.config of two is refused at validation, the file named.
func TestGPUReplayRefusesTwoProfiles(t *testing.T) {
	two := filepath.Join(t.TempDir(), "two.yaml")
	if err := os.WriteFile(two, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n- schedulerName: b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{GPUModelDRA, GPUModelDevice} {
		t.Run(model, func(t *testing.T) {
			sc := &Scenario{Trace: &TraceSpec{}, Scheduler: SchedulerSpec{Config: two, GPUModel: model}}
			var got []string
			sc.checkGPUConfig(func(field, format string, args ...any) { got = append(got, field+": "+fmt.Sprintf(format, args...)) })
			want := "scheduler.config: scheduler.config " + two + ": a GPU replay runs one profile (the GPU model holds one policy), the file has 2"
			if len(got) != 1 || !strings.Contains(got[0], want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}
