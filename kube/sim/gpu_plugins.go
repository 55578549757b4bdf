package sim

import (
	"context"
	"fmt"
	"math/rand/v2"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/gpu"
)

// GPU models of a replay, for scheduler.gpuModel.
const (
	GPUModelDevice   = "device"
	GPUModelCapacity = "capacity"
)

// gpuDevices models the GPUs of the trace's nodes one by one in a replay
// (scheduler.gpuModel: device, the default with a trace). It is a filter
// plugin (GPUDevices) that refuses a node whose GPUs cannot hold the pod
// GPU by GPU, as gpu.Node.FitsGPUs; with scheduler.gpuPolicy, a score
// plugin (GPUPolicy, see gpuScore) replaces the default scoring. At
// binding it chooses the GPUs the pod takes (the policy's choice, or the
// best fit without a policy) and remembers them, so that later cycles see
// each GPU's free share.
//
// A node's GPUs are rebuilt from its pods on each call: O(pods on the
// node + GPUs). Not safe for concurrent use: the simulator runs one
// cycle at a time.
type gpuDevices struct {
	policy    gpu.Policy
	hasPolicy bool
	workload  gpu.Workload        // the trace's typical workload, for FGD
	assigned  map[types.UID][]int // the GPUs each bound or binding pod took
	rnd       *rand.Rand          // for the Random policy
	view      func(func(framework.Snapshot))
}

// newGPUDevices returns the model for the scenario; view must be set to
// the scheduler cache's View before the first binding.
func newGPUDevices(sc *Scenario) *gpuDevices {
	g := &gpuDevices{assigned: map[types.UID][]int{}, rnd: rand.New(rand.NewPCG(sc.Seed, 0x6770))}
	if sc.Scheduler.GPUPolicy != "" {
		p, err := gpu.ParsePolicy(sc.Scheduler.GPUPolicy)
		if err == nil { // Validate refused it otherwise
			g.policy, g.hasPolicy = p, true
		}
	}
	return g
}

// Name is the filter's name.
func (*gpuDevices) Name() string { return "GPUDevices" }

// gpuRequest reads the pod's GPU request: a total below 1000 is a share
// of one GPU, a multiple of 1000 that many whole GPUs. ok is false for
// any other total, which the device model cannot place.
func gpuRequest(pi *framework.PodInfo) (r gpu.Request, ok bool) {
	t := pi.Requests.Scalar[v1.ResourceName(ResourceGPUMilli)]
	r.CPU, r.Mem = pi.Requests.MilliCPU, pi.Requests.Memory>>20
	switch {
	case t == 0:
		return r, true
	case t < gpu.Milli:
		r.Count, r.Share = 1, t
	case t%gpu.Milli == 0:
		r.Count, r.Share = int(t/gpu.Milli), gpu.Milli
	default:
		return r, false
	}
	return r, true
}

// node rebuilds a node's GPUs from the pods on it, leaving out skip.
// Pods without remembered GPUs (none, unless the simulator is changed)
// take the best fit, in the node's pod order.
func (g *gpuDevices) node(ni *framework.NodeInfo, skip types.UID) *gpu.Node {
	gpus := ni.Allocatable.Scalar[v1.ResourceName(ResourceGPUMilli)] / gpu.Milli
	n := gpu.NewNode(ni.Name(), ni.Node.Labels[LabelGPUModel], ni.Allocatable.MilliCPU, ni.Allocatable.Memory>>20, int(gpus))
	n.CPUFree = ni.Allocatable.MilliCPU - ni.Requested.MilliCPU
	n.MemFree = (ni.Allocatable.Memory - ni.Requested.Memory) >> 20
	for _, pi := range ni.Pods {
		r, ok := gpuRequest(pi)
		if pi.Pod.UID == skip {
			n.CPUFree += r.CPU
			n.MemFree += r.Mem
			continue
		}
		if !ok || r.Count == 0 {
			continue
		}
		r.CPU, r.Mem = 0, 0 // counted above
		at := g.assigned[pi.Pod.UID]
		if len(at) != r.Count || !fitsAt(n, r, at) {
			at = n.BestFit(r)
		}
		if at != nil {
			n.Place(r, at)
		}
	}
	return n
}

func fitsAt(n *gpu.Node, r gpu.Request, at []int) bool {
	for _, i := range at {
		if i < 0 || i >= len(n.Free) || n.Free[i] < r.Share {
			return false
		}
	}
	return true
}

// Filter refuses a node whose GPUs cannot hold the pod one by one.
func (g *gpuDevices) Filter(_ context.Context, _ *framework.CycleState, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	r, ok := gpuRequest(pi)
	if !ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("GPU request of %d thousandths is neither a share of one GPU nor whole GPUs", pi.Requests.Scalar[v1.ResourceName(ResourceGPUMilli)]))
	}
	if r.Count == 0 {
		return nil
	}
	if !g.node(ni, pi.Pod.UID).FitsGPUs(r) {
		return framework.NewStatus(framework.Unschedulable, "GPUs do not fit one by one")
	}
	return nil
}

// EventsToRegister: a new node, or a pod leaving, may free GPUs.
func (g *gpuDevices) EventsToRegister() []schedq.EventHint[*v1.Pod] {
	queue := func(*v1.Pod, any, any) (schedq.Hint, error) { return schedq.HintQueue, nil }
	return []schedq.EventHint[*v1.Pod]{
		{Event: clusterevent.New(clusterevent.Node, clusterevent.Add|clusterevent.UpdateNodeAllocatable), Fn: queue},
		{Event: clusterevent.New(clusterevent.Pod, clusterevent.Delete), Fn: queue},
	}
}

// assign chooses and remembers the GPUs the pod takes on node: the
// policy's choice, or the best fit. An error if they no longer fit.
func (g *gpuDevices) assign(pod *v1.Pod, node string) error {
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		return err
	}
	r, ok := gpuRequest(pi)
	if !ok || r.Count == 0 {
		return nil
	}
	g.view(func(snap framework.Snapshot) {
		ni, found := snap.Node(node)
		if !found {
			err = fmt.Errorf("node %s not found", node)
			return
		}
		n := g.node(ni, pod.UID)
		if !n.FitsGPUs(r) {
			err = fmt.Errorf("GPUs of %s no longer hold the pod one by one", node)
			return
		}
		var at []int
		if g.hasPolicy && n.Fits(r) {
			_, at = g.policy.Score(n, r, g.workload, g.rnd)
		}
		if at == nil {
			at = n.BestFit(r)
		}
		g.assigned[pod.UID] = at
	})
	return err
}

// forget drops the GPUs a pod took, when it leaves the cluster, so that
// the map holds only pods on nodes. O(1).
func (g *gpuDevices) forget(uid types.UID) { delete(g.assigned, uid) }

// gpuScore is the GPU policy as a score plugin (GPUPolicy).
type gpuScore struct{ g *gpuDevices }

// Name is the plugin's name.
func (gpuScore) Name() string { return "GPUPolicy" }

// Score is the policy's score of the node for the pod (0 to 100).
func (s gpuScore) Score(_ context.Context, _ *framework.CycleState, pi *framework.PodInfo, ni *framework.NodeInfo) (int64, *framework.Status) {
	r, ok := gpuRequest(pi)
	if !ok {
		return 0, nil
	}
	n := s.g.node(ni, pi.Pod.UID)
	if !n.Fits(r) {
		return 0, nil
	}
	score, _ := s.g.policy.Score(n, r, s.g.workload, s.g.rnd)
	return score, nil
}
