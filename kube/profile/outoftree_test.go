package profile

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq/kube/internal/errtest"
)

// gpuConfig is a profile that enables GPUDevices at score with weight 3
// and gives it args.
func gpuConfig(args string) string {
	return header + `profiles:
- schedulerName: a
  plugins:
    score:
      enabled:
      - name: GPUDevices
        weight: 3
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
  - name: GPUDevices
` + args
}

// TestGPUDevicesArgs: GPUDevices can be named, weighed and given args in
// a configuration; its args are decoded strictly, and each bad one is
// refused with its field path, as upstream's validation names them.
func TestGPUDevicesArgs(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		policy     string   // accepted: the policy decoded
		want       []string // refused: substrings of the error
	}{
		{name: "policy", args: "    args: {policy: FGD}\n", policy: "FGD"},
		{name: "policy with apiVersion and kind", args: "    args:\n      apiVersion: kubescheduler.config.k8s.io/v1\n      kind: GPUDevicesArgs\n      policy: BestFit\n", policy: "BestFit"},
		{name: "no args", args: "", policy: ""},
		{name: "empty args", args: "    args: {}\n", policy: ""},
		{name: "unknown policy", args: "    args: {policy: Tetris}\n",
			want: []string{`profiles[0].pluginConfig[1].args.policy: Unsupported value: "Tetris"`, `"FGD"`, `"GpuPacking"`}},
		{name: "policy in the wrong case", args: "    args: {policy: fgd}\n",
			want: []string{`profiles[0].pluginConfig[1].args.policy: Unsupported value: "fgd"`}},
		{name: "unknown field", args: "    args: {polcy: FGD}\n",
			want: []string{"profiles[0].pluginConfig[1].args.polcy: Not found", `"polcy": unknown field`}},
		{name: "field in the wrong case", args: "    args: {Policy: FGD}\n",
			want: []string{"profiles[0].pluginConfig[1].args.Policy: Not found"}},
		{name: "policy of the wrong type", args: "    args: {policy: 3}\n",
			want: []string{"profiles[0].pluginConfig[1].args.policy: Invalid value", "must be a string"}},
		{name: "policy a list", args: "    args: {policy: [FGD]}\n",
			want: []string{"profiles[0].pluginConfig[1].args.policy: Invalid value", "must be a string"}},
		{name: "args a list", args: "    args: [FGD]\n",
			want: []string{"profiles[0].pluginConfig[1].args"}},
		{name: "another plugin's kind", args: "    args: {kind: NodeResourcesFitArgs}\n",
			want: []string{`profiles[0].pluginConfig[1].args.kind: Unsupported value: "NodeResourcesFitArgs"`}},
		{name: "duplicate field", args: "    args: {policy: FGD, policy: BestFit}\n",
			want: []string{"policy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Decode([]byte(gpuConfig(tc.args)))
			if tc.want != nil {
				errtest.Names(t, err, tc.want...)
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			prof := cfg.Profiles[0]
			if s := prof.Plugins.Score.Enabled; len(s) != 1 || s[0].Name != GPUDevices || s[0].Weight != 3 {
				t.Errorf("score plugins %+v, want GPUDevices of weight 3", s)
			}
			var args runtime.Object
			for _, pc := range prof.PluginConfig {
				if pc.Name == GPUDevices {
					args = pc.Args
				}
			}
			a, err := DecodeGPUDevicesArgs(args)
			if err != nil {
				t.Fatal(err)
			}
			if a.Policy != tc.policy {
				t.Errorf("policy %q, want %q", a.Policy, tc.policy)
			}
		})
	}
}

// stubPlugin is a plugin that only has a name.
type stubPlugin struct{ name string }

func (p stubPlugin) Name() string { return p.name }

// TestOutOfTreeImplementations: a profile naming GPUDevices builds only
// where the program gives its implementation (Setup.Plugins), and that
// implementation gets the args; a Setup plugin may not take an in-tree
// name.
func TestOutOfTreeImplementations(t *testing.T) {
	cfg, err := Decode([]byte(header + "profiles:\n- schedulerName: a\n  plugins:\n    preFilter:\n      enabled: [{name: GPUDevices}]\n  pluginConfig:\n  - {name: GPUDevices, args: {policy: GpuPacking}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	prof := &cfg.Profiles[0]
	build := func(r frameworkruntime.Registry) error {
		f, err := NewFrameworkOn(context.Background(), prof, Setup{Snapshot: backendcache.NewEmptySnapshot(), Plugins: r})
		if err == nil {
			f.Close()
		}
		return err
	}
	t.Run("no implementation", func(t *testing.T) {
		err := build(nil)
		if err == nil || !strings.Contains(err.Error(), "GPUDevices is not available here") {
			t.Fatalf("got %v, want GPUDevices refused", err)
		}
	})
	t.Run("the program's implementation", func(t *testing.T) {
		var got *GPUDevicesArgs
		err := build(frameworkruntime.Registry{GPUDevices: func(_ context.Context, args runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
			a, err := DecodeGPUDevicesArgs(args)
			got = a
			return prefilterStub{stubPlugin{GPUDevices}}, err
		}})
		if err != nil {
			t.Fatal(err)
		}
		if got == nil || got.Policy != "GpuPacking" {
			t.Fatalf("args %+v, want policy GpuPacking", got)
		}
	})
	t.Run("in-tree name", func(t *testing.T) {
		err := build(frameworkruntime.Registry{"NodePorts": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return stubPlugin{"NodePorts"}, nil
		}})
		if err == nil || !strings.Contains(err.Error(), `"NodePorts" is already registered`) {
			t.Fatalf("got %v, want the in-tree name refused", err)
		}
	})
}

// prefilterStub is a PreFilter plugin that lets every pod through.
type prefilterStub struct{ stubPlugin }

func (prefilterStub) PreFilter(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return nil, nil
}

func (prefilterStub) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
