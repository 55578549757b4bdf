package plugins

import (
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// NodeResourcesFit's rejection reasons. An extended resource is reported as
// "Insufficient " followed by its name, see ReasonInsufficient.
const (
	ReasonTooManyPods                  = "Too many pods"
	ReasonInsufficientCPU              = "Insufficient cpu"
	ReasonInsufficientMemory           = "Insufficient memory"
	ReasonInsufficientEphemeralStorage = "Insufficient ephemeral-storage"
)

// ReasonInsufficient is NodeResourcesFit's reason for a short resource.
func ReasonInsufficient(name v1.ResourceName) string { return "Insufficient " + string(name) }

// NodeResourcesFit checks that a node has room for a pod's requests (cpu,
// memory, ephemeral storage, extended resources and a pod slot) and scores
// feasible nodes by the strategy it was built with.
type NodeResourcesFit struct {
	strategy ScoringStrategy
}

var (
	_ framework.PreFilterPlugin   = (*NodeResourcesFit)(nil)
	_ framework.FilterPlugin      = (*NodeResourcesFit)(nil)
	_ framework.ScorePlugin       = (*NodeResourcesFit)(nil)
	_ framework.EnqueueExtensions = (*NodeResourcesFit)(nil)
)

// NewNodeResourcesFit returns the plugin scoring by strategy.
func NewNodeResourcesFit(strategy ScoringStrategy) *NodeResourcesFit {
	return &NodeResourcesFit{strategy: strategy}
}

// Name returns "NodeResourcesFit".
func (*NodeResourcesFit) Name() string { return "NodeResourcesFit" }

// PreFilter refuses a pod whose requests cannot be accounted (an amount
// overflows int64 or is negative, see framework.ConvertResources) on every
// node at once, with the reason, for example "invalid resource request
// cpu=1e18: overflows int64 milli-units". No node change can help; an
// update of the pod itself can.
func (*NodeResourcesFit) PreFilter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, _ framework.Snapshot) *framework.Status {
	return invalidRequests(pod)
}

func invalidRequests(pod *framework.PodInfo) *framework.Status {
	if pod.InvalidRequests != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pod.InvalidRequests.Error())
	}
	return nil
}

// Filter fails a node whose free allocatable (allocatable minus what its
// pods request) is short of the pod's requests, with one reason per short
// resource.
func (*NodeResourcesFit) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	if st := invalidRequests(pod); st != nil {
		return st // in case PreFilter was skipped
	}
	if reasons := insufficientResources(pod.Requests, node); len(reasons) > 0 {
		return framework.NewStatus(framework.Unschedulable, reasons...)
	}
	return nil
}

// insufficientResources lists a reason for each resource of req that node
// cannot spare: the pod slot first, then cpu, memory, ephemeral storage,
// and extended resources by name. A resource the pod does not request is
// never short, and one the node does not have at all is short.
func insufficientResources(req framework.Resource, node *framework.NodeInfo) []string {
	return shortages(req, node.Allocatable, node.Requested, int64(len(node.Pods)))
}

// shortages lists what insufficientResources lists, for a node with
// allocatable alloc whose pods number pods and request used in all.
func shortages(req, alloc, used framework.Resource, pods int64) []string {
	var reasons []string
	if pods+1 > alloc.Pods {
		reasons = append(reasons, ReasonTooManyPods)
	}
	if req.MilliCPU > 0 && req.MilliCPU > alloc.MilliCPU-used.MilliCPU {
		reasons = append(reasons, ReasonInsufficientCPU)
	}
	if req.Memory > 0 && req.Memory > alloc.Memory-used.Memory {
		reasons = append(reasons, ReasonInsufficientMemory)
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > alloc.EphemeralStorage-used.EphemeralStorage {
		reasons = append(reasons, ReasonInsufficientEphemeralStorage)
	}
	if len(req.Scalar) == 0 {
		return reasons
	}
	var short []v1.ResourceName
	for name, q := range req.Scalar {
		if q > 0 && q > alloc.Scalar[name]-used.Scalar[name] {
			short = append(short, name)
		}
	}
	slices.Sort(short)
	for _, name := range short {
		reasons = append(reasons, ReasonInsufficient(name))
	}
	return reasons
}

// EventsToRegister asks for new nodes and allocatable changes, and for pod
// deletions and scale-downs, which free requested resources.
func (pl *NodeResourcesFit) EventsToRegister() []schedq.EventHint[*v1.Pod] {
	return []schedq.EventHint[*v1.Pod]{
		{Event: clusterevent.New(clusterevent.Node, clusterevent.Add|clusterevent.UpdateNodeAllocatable), Fn: pl.afterNodeChange},
		{Event: clusterevent.New(clusterevent.Pod, clusterevent.Delete|clusterevent.UpdatePodScaleDown), Fn: pl.afterPodChange},
	}
}

// requestsOf returns pod's effective requests as framework.NewPodInfo
// computes them, without parsing its affinity; they are clamped if
// invalid. They are computed once per pod object (framework.RequestsOf).
func requestsOf(pod *v1.Pod) framework.Resource {
	r, _ := framework.RequestsOf(pod)
	return r
}

// afterNodeChange queues the pod when a node appears whose allocatable could
// hold it if it were empty, or when an update raises the allocatable of a
// resource the pod requests on a node that could hold it. A node too small
// for the pod on its own can never take it, and an update that raises
// nothing the pod asks for cannot turn a refusal into a fit.
func (*NodeResourcesFit) afterNodeChange(pod *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
	oldNode, newNode, err := nodeEvent(oldObj, newObj)
	if err != nil {
		return schedq.HintQueue, err
	}
	req, invalid := framework.RequestsOf(pod)
	if invalid != nil {
		return schedq.HintSkip, nil // no node can take it; only its own update can help
	}
	alloc := framework.NewResource(newNode.Status.Allocatable)
	if !fitsEmpty(req, alloc) {
		return schedq.HintSkip, nil
	}
	if oldNode != nil && !anyIncreased(req, framework.NewResource(oldNode.Status.Allocatable), alloc) {
		return schedq.HintSkip, nil
	}
	return schedq.HintQueue, nil
}

// fitsEmpty reports whether req fits an empty node with allocatable alloc.
func fitsEmpty(req, alloc framework.Resource) bool {
	if alloc.Pods < 1 || req.MilliCPU > alloc.MilliCPU || req.Memory > alloc.Memory || req.EphemeralStorage > alloc.EphemeralStorage {
		return false
	}
	for name, q := range req.Scalar {
		if q > alloc.Scalar[name] {
			return false
		}
	}
	return true
}

// anyIncreased reports whether after has more than before of the pod slot
// or of some resource that req asks for.
func anyIncreased(req, before, after framework.Resource) bool {
	return after.Pods > before.Pods || someRequested(req, func(b, a int64) bool { return a > b }, before, after)
}

// someRequested reports whether cmp holds for the two amounts of some
// resource that req asks for (the pod slot aside).
func someRequested(req framework.Resource, cmp func(x, y int64) bool, x, y framework.Resource) bool {
	switch {
	case req.MilliCPU > 0 && cmp(x.MilliCPU, y.MilliCPU),
		req.Memory > 0 && cmp(x.Memory, y.Memory),
		req.EphemeralStorage > 0 && cmp(x.EphemeralStorage, y.EphemeralStorage):
		return true
	}
	for name, q := range req.Scalar {
		if q > 0 && cmp(x.Scalar[name], y.Scalar[name]) {
			return true
		}
	}
	return false
}

// afterPodChange handles pod deletions and scale-downs.
//
// A bound pod's deletion queues the pod: it frees a pod slot, which any pod
// needs, and the hint cannot tell which resource the pod was short of.
// Deleting an unbound pod frees nothing. A scale-down queues the pod if it
// is the pod's own (it now asks for less), or if a bound pod now requests
// less of a resource the pod needs. A pod whose requests are invalid waits
// for its own update only.
func (*NodeResourcesFit) afterPodChange(pod *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
	oldPod, newPod, err := podEvent(oldObj, newObj)
	if err != nil {
		return schedq.HintQueue, err
	}
	switch {
	case newPod == nil && oldPod.Spec.NodeName == "":
		return schedq.HintSkip, nil
	case samePod(pod, newPod):
		return schedq.HintQueue, nil
	case newPod != nil && (oldPod == nil || newPod.Spec.NodeName == ""):
		return schedq.HintSkip, nil
	}
	req, invalid := framework.RequestsOf(pod)
	switch {
	case invalid != nil:
		return schedq.HintSkip, nil // freed room cannot help; only its own update can
	case newPod == nil:
		return schedq.HintQueue, nil
	}
	decreased := func(before, after int64) bool { return after < before }
	if someRequested(req, decreased, requestsOf(oldPod), requestsOf(newPod)) {
		return schedq.HintQueue, nil
	}
	return schedq.HintSkip, nil
}
