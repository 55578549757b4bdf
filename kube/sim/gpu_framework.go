package sim

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq/kube/gpu"
	"github.com/schedq/schedq/kube/profile"
)

// gpuName is the GPU's extended resource.
const gpuName = v1.ResourceName(ResourceGPUMilli)

// gpuDevicesName is the out-of-tree plugin's name in kube-scheduler's
// profile.
const gpuDevicesName = profile.GPUDevices

// gpuFramework is the device model (gpuDevices) as an out-of-tree plugin
// of kube-scheduler's framework, for a replay with scheduler.plugins:
// upstream. It reads only the cycle's snapshot (the node infos it is
// given, and the handle's snapshot lister at Reserve):
//
//   - PreFilter reads the pod's GPU request once per cycle; a pod without
//     GPUs skips the Filter, one whose request is neither a share of one
//     GPU nor whole GPUs is refused;
//   - Filter refuses a node whose GPUs cannot hold the pod one by one;
//   - Score (enabled by the profile or by scheduler.gpuPolicy) is the
//     score of the policy its args name;
//   - Reserve chooses the GPUs the pod takes on the chosen node and
//     remembers them, Unreserve forgets them;
//   - its queueing hints wake a pod it refused when a node with enough
//     GPUs comes, or a pod with GPUs leaves a node;
//   - SignPod signs a pod by its GPU request (and CPU and memory, which
//     the policies read), so that opportunistic batching reuses scores
//     only between pods the model treats alike; with the Random policy,
//     whose scores are drawn per call, it signs no pod with GPUs.
//
// Not safe for concurrent cycles (the framework's parallelism is 1);
// Unreserve and the model's bookkeeping are (gpuDevices' lock).
type gpuFramework struct {
	g *gpuDevices
	h fwk.Handle
}

var (
	_ fwk.PreFilterPlugin   = (*gpuFramework)(nil)
	_ fwk.FilterPlugin      = (*gpuFramework)(nil)
	_ fwk.ScorePlugin       = (*gpuFramework)(nil)
	_ fwk.ReservePlugin     = (*gpuFramework)(nil)
	_ fwk.EnqueueExtensions = (*gpuFramework)(nil)
	_ fwk.SignPlugin        = (*gpuFramework)(nil)
)

// gpuPlugins is the implementation of profile.GPUDevices for g, given to
// the framework (profile.Setup.Plugins). Its args set g's policy: the
// profile's pluginConfig, or scheduler.gpuPolicy's (applyGPUConfig).
func gpuPlugins(g *gpuDevices) frameworkruntime.Registry {
	return frameworkruntime.Registry{gpuDevicesName: func(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, ok, err := policyOfArgs(obj)
		if err != nil {
			return nil, err
		}
		g.policy, g.hasPolicy = p, ok
		return &gpuFramework{g: g, h: h}, nil
	}}
}

// Name is the plugin's name.
func (*gpuFramework) Name() string { return gpuDevicesName }

// gpuStateKey is where PreFilter leaves the pod's request.
const gpuStateKey fwk.StateKey = "schedq.io/" + gpuDevicesName

// gpuState is the pod's usage and request, read once per cycle.
type gpuState struct {
	use podUsage
	r   gpu.Request
	ok  bool
}

// Clone returns s: it is never changed.
func (s *gpuState) Clone() fwk.StateData { return s }

// usageOfPod sums what pod requests, as the framework counts it.
func usageOfPod(pod *v1.Pod) podUsage {
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	u := podUsage{cpu: req.Cpu().MilliValue(), mem: req.Memory().Value()}
	if q, ok := req[v1.ResourceName(ResourceGPUMilli)]; ok {
		u.gpuMilli = q.Value()
	}
	return u
}

// stateOf returns the pod's request from the cycle's state, or reads it
// from the pod if PreFilter did not run.
func stateOf(cs fwk.CycleState, pod *v1.Pod) *gpuState {
	if d, err := cs.Read(gpuStateKey); err == nil {
		if s, ok := d.(*gpuState); ok {
			return s
		}
	}
	s := &gpuState{use: usageOfPod(pod)}
	s.r, s.ok = s.use.request()
	return s
}

// PreFilter reads the pod's request into the cycle's state; Filter is
// skipped for a pod without GPUs. O(containers).
func (p *gpuFramework) PreFilter(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	s := &gpuState{use: usageOfPod(pod)}
	s.r, s.ok = s.use.request()
	cs.Write(gpuStateKey, s)
	switch {
	case !s.ok:
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, badRequest(s.use.gpuMilli))
	case s.r.Count == 0:
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// PreFilterExtensions: none; the pods the framework adds or removes
// (nominated pods, preemption's victims) are in the node info itself.
func (*gpuFramework) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// node rebuilds a node of the framework's snapshot (see gpuDevices.build).
func (p *gpuFramework) node(ni fwk.NodeInfo, skip types.UID) *gpu.Node {
	return p.g.build(nodeInOf(ni), skip)
}

// headOfNI is what the model reads of a node of the framework's
// snapshot besides its pods: nodeInOf's figures, without the closure
// over its pods that nodeInOf allocates. O(1).
func headOfNI(ni fwk.NodeInfo) nodeHead {
	alloc, used := ni.GetAllocatable(), ni.GetRequested()
	return nodeHead{
		name: ni.Node().Name, model: ni.Node().Labels[LabelGPUModel],
		cpu: alloc.GetMilliCPU(), mem: alloc.GetMemory(), gpuMilli: alloc.GetScalarResources()[gpuName],
		usedCPU: used.GetMilliCPU(), usedMem: used.GetMemory(),
	}
}

// nodeInOf is what the model reads of a node of the framework's snapshot.
func nodeInOf(ni fwk.NodeInfo) nodeIn {
	h := headOfNI(ni)
	return nodeIn{
		name: h.name, model: h.model, cpu: h.cpu, mem: h.mem, gpuMilli: h.gpuMilli,
		usedCPU: h.usedCPU, usedMem: h.usedMem,
		pods: func(yield func(types.UID, podUsage) bool) {
			for _, pi := range ni.GetPods() {
				res := pi.CalculateResource().Resource
				u := podUsage{gpuMilli: res.GetScalarResources()[gpuName], cpu: res.GetMilliCPU(), mem: res.GetMemory()}
				if !yield(pi.GetPod().UID, u) {
					return
				}
			}
		},
	}
}

// Filter refuses a node whose GPUs cannot hold the pod one by one.
// O(1) on a node whose pods hold no GPU, else O(pods on the node + GPUs).
func (p *gpuFramework) Filter(_ context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	s := stateOf(cs, pod)
	switch {
	case !s.ok:
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, badRequest(s.use.gpuMilli))
	case s.r.Count == 0:
		return nil
	case !p.g.fits(ni.GetRequested().GetScalarResources()[gpuName], ni.GetAllocatable().GetScalarResources()[gpuName],
		func() nodeIn { return nodeInOf(ni) }, pod.UID, s.r):
		return fwk.NewStatus(fwk.Unschedulable, reasonNoFit)
	}
	return nil
}

// Score is the policy's score of the node for the pod (0 to 100), as
// schedq's GPUPolicy scores. O(pods on the node + the policy's cost).
func (p *gpuFramework) Score(_ context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	s := stateOf(cs, pod)
	if !s.ok || !p.g.hasPolicy {
		return 0, nil
	}
	return p.g.score(p.node(ni, pod.UID), s.r), nil
}

// ScoreExtensions: none; the policies score from 0 to 100 already.
func (*gpuFramework) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Reserve chooses the GPUs the pod takes on node, from the snapshot, and
// remembers them. Unschedulable if they no longer fit.
func (p *gpuFramework) Reserve(_ context.Context, cs fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	s := stateOf(cs, pod)
	if !s.ok || s.r.Count == 0 {
		return nil
	}
	ni, err := p.h.SnapshotSharedLister().NodeInfos().Get(node)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("node %s: %w", node, err))
	}
	if err := p.g.take(pod.UID, p.node(ni, pod.UID), s.r); err != nil {
		return fwk.NewStatus(fwk.Unschedulable, reasonNoFit)
	}
	return nil
}

// Unreserve forgets the GPUs Reserve chose.
func (p *gpuFramework) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	p.g.forget(pod.UID)
}

// EventsToRegister: a node added (or given more allocatable) with as many
// GPUs as the pod asks for, or a pod with GPUs leaving a node.
func (p *gpuFramework) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}, QueueingHintFn: nodeHasGPUs},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: podFreesGPUs},
	}, nil
}

// nodeHasGPUs queues pod if the node has at least as many GPUs as it asks
// for. O(containers).
func nodeHasGPUs(_ klog.Logger, pod *v1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	n, ok := newObj.(*v1.Node)
	if !ok {
		return fwk.Queue, fmt.Errorf("not a node: %T", newObj)
	}
	r, ok := usageOfPod(pod).request()
	q := n.Status.Allocatable[v1.ResourceName(ResourceGPUMilli)]
	if !ok || q.Value()/gpu.Milli < int64(r.Count) {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// podFreesGPUs queues pod if the deleted pod was on a node and held GPUs.
func podFreesGPUs(_ klog.Logger, _ *v1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	gone, ok := oldObj.(*v1.Pod)
	if !ok {
		return fwk.Queue, fmt.Errorf("not a pod: %T", oldObj)
	}
	if gone.Spec.NodeName == "" || usageOfPod(gone).gpuMilli == 0 {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// SignPod signs pod by what the model reads of it. With the Random
// policy a pod with GPUs is not signed: its scores are drawn per call, so
// another pod's ranking is not its own.
func (p *gpuFramework) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return signGPU(pod, p.g.hasPolicy && p.g.policy == gpu.Random)
}

// signGPU signs pod by its GPU, CPU and memory requests; a pod with GPUs
// is not signed if random (the Random policy). O(containers).
func signGPU(pod *v1.Pod, random bool) ([]fwk.SignFragment, *fwk.Status) {
	u := usageOfPod(pod)
	if u.gpuMilli > 0 && random {
		return nil, fwk.NewStatus(fwk.Unschedulable, "the Random GPU policy scores each pod afresh")
	}
	return []fwk.SignFragment{{Key: string(gpuStateKey), Value: [3]int64{u.gpuMilli, u.cpu, u.mem}}}, nil
}
