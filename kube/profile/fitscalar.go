package profile

import (
	"context"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	feature "k8s.io/apiserver/pkg/util/feature"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// fitScalar is kube-scheduler's NodeResourcesFit with the check of a
// pod's one extended resource (a trace's alibaba.com/gpu-milli) made
// here. Upstream's Filter validates the name of every extended resource
// a pod asks for on every node it filters (a formatted string and a
// regular expression per node): a tenth of the CPU of a DRA replay of the
// paper's draw. The name is validated once per cycle instead: PreFilter
// gives upstream's PreFilter the pod without that request, and Filter
// adds upstream's verdict on it to upstream's verdict on the rest, with
// the same reasons in the same order and the same code.
//
// A pod whose requests name another resource besides CPU, memory and
// ephemeral storage, that has pod-level resources or a node already,
// or a profile that ignores some extended resources, goes to upstream's
// plugin unchanged.
type fitScalar struct {
	*noderesources.Fit
	h fwk.Handle
	// dra is the DRAExtendedResource gate: on a node without the
	// resource, a DeviceClass that provides it leaves it to DRA.
	dra bool
	// why keeps the reason of a node without room for each extended
	// resource asked ("Insufficient " and its name), by name: one
	// string for every node and cycle (scalarAsk.insufficient). At most
	// fitScalarReasonsMax names are kept: a pod may name any extended
	// resource, and the process lives long; a name past them gets a
	// string of its own per cycle (still one for all the cycle's nodes).
	whyMu sync.Mutex
	why   map[v1.ResourceName]string
	// prescore keeps PreScore's state from pod to pod (preScoreMemo).
	prescore *preScoreMemo
}

// fitScalarReasonsMax bounds the reason strings a fitScalar keeps (a
// cluster's extended resources are a handful; the bound is for names
// that pods ask for and no node has).
const fitScalarReasonsMax = 64

// reason is the reason of a node without room for name: the string kept
// for name, made and kept at its first call while fewer than
// fitScalarReasonsMax are, else made afresh. O(1).
func (f *fitScalar) reason(name v1.ResourceName) string {
	f.whyMu.Lock()
	defer f.whyMu.Unlock()
	if why, ok := f.why[name]; ok {
		return why
	}
	why := "Insufficient " + string(name)
	if len(f.why) < fitScalarReasonsMax {
		if f.why == nil {
			f.why = map[v1.ResourceName]string{}
		}
		f.why[name] = why
	}
	return why
}

// scalarAsk is what fitScalar's PreFilter left out of upstream's: the
// pod's request of name.
type scalarAsk struct {
	name v1.ResourceName
	n    int64
	// insufficient is the reason of a node without room for it
	// ("Insufficient " and name), the plugin's one string for name
	// (fitScalar.reason): the nodes' reasons, kept in the scheduler's
	// verdicts from cycle to cycle, then compare by the string's
	// address (noteRejections' runs), with no string made per node.
	insufficient string
}

// Clone gives a itself: it is never changed.
func (a *scalarAsk) Clone() fwk.StateData { return a }

const scalarAskKey fwk.StateKey = "schedq/NodeResourcesFit.scalar"

// scalarFit wraps the registry's NodeResourcesFit factory so that the
// plugin it builds is a fitScalar, unless its args ignore resources.
func scalarFit(inner frameworkruntime.PluginFactory) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		pl, err := inner(ctx, args, h)
		if err != nil {
			return nil, err
		}
		fit, ok := pl.(*noderesources.Fit)
		a, aok := args.(*config.NodeResourcesFitArgs)
		if !ok || !aok || len(a.IgnoredResources) > 0 || len(a.IgnoredResourceGroups) > 0 {
			return pl, nil
		}
		var resources []config.ResourceSpec
		if a.ScoringStrategy != nil {
			resources = a.ScoringStrategy.Resources
		}
		return &fitScalar{Fit: fit, h: h, dra: feature.DefaultFeatureGate.Enabled(features.DRAExtendedResource),
			prescore: newPreScoreMemo("PreScore"+noderesources.Name, resources)}, nil
	}
}

// PreScore is upstream's, or its answer for the last pod if pod asks the
// same (preScoreMemo).
func (f *fitScalar) PreScore(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	if f.prescore == nil {
		return f.Fit.PreScore(ctx, cs, pod, nodes)
	}
	return f.prescore.preScore(ctx, cs, pod, nodes, f.Fit.PreScore)
}

// PreFilter is upstream's, given pod without its one extended resource
// when it has one (oneExtended).
func (f *fitScalar) PreFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	ask, ok := oneExtended(pod)
	if !ok {
		cs.Delete(scalarAskKey)
		return f.Fit.PreFilter(ctx, cs, pod, nodes)
	}
	res, st := f.Fit.PreFilter(ctx, cs, withoutRequest(pod, ask.name), nodes)
	ask.insufficient = f.reason(ask.name)
	cs.Write(scalarAskKey, ask)
	return res, st
}

// Filter is upstream's verdict on what PreFilter gave it, with the
// check of the request it left out added as upstream makes it: last,
// after the pod count, CPU, memory and ephemeral storage. O(1) beyond
// upstream's.
func (f *fitScalar) Filter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	st := f.Fit.Filter(ctx, cs, pod, ni)
	d, err := cs.Read(scalarAskKey)
	if err != nil {
		return st
	}
	ask := d.(*scalarAsk)
	if ask.n == 0 || (!st.IsSuccess() && st.Code() != fwk.Unschedulable && st.Code() != fwk.UnschedulableAndUnresolvable) {
		return st
	}
	alloc := ni.GetAllocatable().GetScalarResources()[ask.name]
	if alloc <= 0 && f.toDRA(ask.name) {
		return st
	}
	if ask.n <= alloc-ni.GetRequested().GetScalarResources()[ask.name] {
		return st
	}
	code := fwk.Unschedulable
	if ask.n > alloc || st.Code() == fwk.UnschedulableAndUnresolvable {
		code = fwk.UnschedulableAndUnresolvable
	}
	var reasons []string
	if !st.IsSuccess() {
		reasons = slices.Clone(st.Reasons())
	}
	why := ask.insufficient
	if why == "" {
		why = "Insufficient " + string(ask.name)
	}
	return fwk.NewStatus(code, append(reasons, why)...)
}

// toDRA reports whether a DeviceClass provides name, which upstream then
// leaves to DynamicResources on a node that has none of it.
func (f *fitScalar) toDRA(name v1.ResourceName) bool {
	if !f.dra || f.h == nil {
		return false
	}
	m := f.h.SharedDRAManager()
	return m != nil && m.DeviceClassResolver().GetDeviceClass(name) != nil
}

// oneExtended is the pod's request of its one extended resource, when
// its requests name nothing else but CPU, memory and ephemeral storage,
// it has no pod-level resources (whose requests replace its
// containers') and no node (upstream then compares with what the node
// has of it already). O(containers).
func oneExtended(pod *v1.Pod) (*scalarAsk, bool) {
	if pod.Spec.NodeName != "" || pod.Spec.Resources != nil || basicRequests(pod) {
		return nil, false
	}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{SkipPodLevelResources: true})
	var ask *scalarAsk
	for name, q := range reqs {
		switch name {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
			continue
		}
		if ask != nil || !v1helper.IsExtendedResourceName(name) {
			return nil, false
		}
		// Upstream counts a negative request (the API server refuses
		// one) as none: its pod fits wherever the rest does.
		ask = &scalarAsk{name: name, n: max(0, q.Value())}
	}
	return ask, ask != nil
}

// basicRequests reports whether pod's containers, init containers and
// overhead request nothing but CPU, memory and ephemeral storage. The
// requests oneExtended sums (containers' and init containers' requests
// and the overhead: no status, no pod-level resources, no DRA claims)
// then name nothing else, so it need not sum them: most pods' case,
// where summing was most of what oneExtended cost, for every attempt.
// O(containers).
func basicRequests(pod *v1.Pod) bool {
	for _, cs := range [...][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if !basicNames(cs[i].Resources.Requests) {
				return false
			}
		}
	}
	return basicNames(pod.Spec.Overhead)
}

// basicNames reports whether l names nothing but CPU, memory and
// ephemeral storage.
func basicNames(l v1.ResourceList) bool {
	for name := range l {
		switch name {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
		default:
			return false
		}
	}
	return true
}

// withoutRequest is a copy of pod whose containers, init containers and
// overhead do not request name. The copy shares what it does not change.
func withoutRequest(pod *v1.Pod, name v1.ResourceName) *v1.Pod {
	p := *pod
	p.Spec.Containers = withoutIn(pod.Spec.Containers, name)
	p.Spec.InitContainers = withoutIn(pod.Spec.InitContainers, name)
	p.Spec.Overhead = without(pod.Spec.Overhead, name)
	return &p
}

func withoutIn(cs []v1.Container, name v1.ResourceName) []v1.Container {
	if cs == nil {
		return nil
	}
	out := slices.Clone(cs)
	for i := range out {
		out[i].Resources.Requests = without(out[i].Resources.Requests, name)
	}
	return out
}

func without(l v1.ResourceList, name v1.ResourceName) v1.ResourceList {
	if _, ok := l[name]; !ok {
		return l
	}
	out := make(v1.ResourceList, len(l)-1)
	for k, v := range l {
		if k != name {
			out[k] = v
		}
	}
	return out
}
