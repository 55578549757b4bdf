package profile

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// capturePlugins wraps every factory of r so that the instance it builds
// is recorded in built, by name, for the profile's own lists
// (postFiltersBut).
func capturePlugins(r frameworkruntime.Registry, built map[string]fwk.Plugin) {
	for name, inner := range r {
		r[name] = func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			p, err := inner(ctx, args, h)
			if err == nil {
				built[name] = p
			}
			return p, err
		}
	}
}

// postFiltersBut lists the PostFilter plugins of f, in the profile's
// order, but the one named skip, from the instances built.
func postFiltersBut(f framework.Framework, built map[string]fwk.Plugin, skip string) []fwk.PostFilterPlugin {
	var out []fwk.PostFilterPlugin
	for _, p := range f.ListPlugins().PostFilter.Enabled {
		if pf, ok := built[p.Name].(fwk.PostFilterPlugin); ok && p.Name != skip {
			out = append(out, pf)
		}
	}
	return out
}

// HasPostFilterWithoutPreemption reports whether the profile has a
// PostFilter plugin other than DefaultPreemption: whether
// RunPostFilterWithoutPreemption has any to run. kube-scheduler clears
// the nomination of a pod that fits nowhere when its profile has none.
func (f *Framework) HasPostFilterWithoutPreemption() bool { return len(f.postFilters) > 0 }

// RunPostFilterWithoutPreemption runs the profile's PostFilter plugins
// other than DefaultPreemption, as kube-scheduler runs them when the
// profile disables DefaultPreemption: in order, until one succeeds or
// rejects for good; their reasons otherwise. It is what a scheduler
// without preemption runs for a pod that fits nowhere, so that the
// other plugins still act (DynamicResources deallocates a claim
// allocated on a node where the pod no longer fits).
func (f *Framework) RunPostFilterWithoutPreemption(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if len(f.postFilters) == 0 || cs.ShouldSkipAllPostFilterPlugins() {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	var result *fwk.PostFilterResult
	var reasons []string
	rejector := ""
	for _, pl := range f.postFilters {
		r, st := pl.PostFilter(ctx, cs, pod, statuses)
		switch {
		case st.IsSuccess():
			return r, st
		case st.Code() == fwk.UnschedulableAndUnresolvable:
			return r, st.WithPlugin(pl.Name())
		case !st.IsRejected():
			return nil, fwk.AsStatus(st.AsError()).WithPlugin(pl.Name())
		case r != nil && r.Mode() != fwk.ModeNoop:
			result = r
		}
		reasons = append(reasons, st.Reasons()...)
		if rejector == "" {
			rejector = pl.Name()
		}
	}
	return result, fwk.NewStatus(fwk.Unschedulable, reasons...).WithPlugin(rejector)
}
