package sim

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/schedq/schedq/kube/gpu"
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
		noDevices          bool   // a replay without the device model
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
		{name: "named without the device model", config: argsAlone, noDevices: true,
			want: []string{"gpu.yaml names GPUDevices (profiles[0].pluginConfig[", "gpuModel device"}},
		{name: "enabled without the device model", config: scoreW5, noDevices: true,
			want: []string{"gpu.yaml names GPUDevices (profiles[0].plugins.score.enabled[0])"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prof := gpuProfileOf(t, tc.config)
			err := applyGPUConfig(prof, SchedulerSpec{Config: "gpu.yaml", GPUPolicy: tc.flag}, !tc.noDevices)
			if tc.want != nil {
				if err == nil {
					t.Fatal("accepted")
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkGPUProfile(t, prof, tc.policy, tc.only, tc.weight)
		})
	}
}

// checkGPUProfile checks that prof runs GPUDevices at PreFilter, Filter
// and Reserve, with policy in its args, at score with weight (0: not at
// score), and as the only scorer if only.
func checkGPUProfile(t *testing.T, prof *config.KubeSchedulerProfile, policy string, only bool, weight int32) {
	t.Helper()
	p := prof.Plugins
	for _, pt := range gpuPoints {
		if !enabledAt(p, pt.set(p)) {
			t.Errorf("GPUDevices not at %s", pt.name)
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
