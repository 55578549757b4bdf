package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

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
// (scheduler.gpuModel: device, the default with a trace). It is the one
// implementation of the per-GPU fit, scoring and choice of GPUs, which two
// thin adapters plug into a scheduler:
//
//   - with schedq's own plugins, it is itself a filter plugin
//     (GPUDevices) that refuses a node whose GPUs cannot hold the pod GPU
//     by GPU, as gpu.Node.FitsGPUs; with scheduler.gpuPolicy, a score
//     plugin (GPUPolicy, see gpuScore) replaces the default scoring. At
//     binding it chooses the GPUs the pod takes (the policy's choice, or
//     the best fit without a policy) and remembers them;
//   - with kube-scheduler's framework (scheduler.plugins: upstream),
//     gpuFramework (gpu_framework.go) is an out-of-tree plugin doing the
//     same at PreFilter, Filter, Score and Reserve, on the cycle's
//     snapshot.
//
// Later cycles see each GPU's free share from the GPUs remembered. A
// node's GPUs are rebuilt from its pods on each call: O(pods on the node
// + GPUs). Filter, Score, Reserve and binding run one cycle at a time
// (the Random policy's rnd has no lock); what is remembered is guarded by
// mu, so that Unreserve and forget may come from other goroutines.
type gpuDevices struct {
	policy    gpu.Policy
	hasPolicy bool
	workload  gpu.Workload // the trace's typical workload, for FGD
	rnd       *rand.Rand   // for the Random policy
	view      func(func(framework.Snapshot))

	mu       sync.Mutex
	assigned map[types.UID][]int // the GPUs each bound or binding pod took
}

// newGPUDevices returns the model for the scenario; with schedq's plugins,
// view must be set to the scheduler cache's View before the first binding.
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

// podUsage is what a pod requests that the model reads: GPU thousandths
// in all, milli-CPU and memory in bytes.
type podUsage struct{ gpuMilli, cpu, mem int64 }

// request reads a pod's GPU request: a total below 1000 is a share of one
// GPU, a multiple of 1000 that many whole GPUs. ok is false for any other
// total, which the device model cannot place.
func (u podUsage) request() (r gpu.Request, ok bool) {
	t := u.gpuMilli
	r.CPU, r.Mem = u.cpu, u.mem>>20
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

// badRequest is the reason a pod whose GPU request the model cannot place
// is refused.
func badRequest(milli int64) string {
	return fmt.Sprintf("GPU request of %d thousandths is neither a share of one GPU nor whole GPUs", milli)
}

// reasonNoFit is the reason a node is refused.
const reasonNoFit = "GPUs do not fit one by one"

// gpuRequest reads a pod's GPU request from schedq's pod info.
func gpuRequest(pi *framework.PodInfo) (gpu.Request, bool) {
	return usageOf(pi).request()
}

func usageOf(pi *framework.PodInfo) podUsage {
	return podUsage{pi.Requests.Scalar[v1.ResourceName(ResourceGPUMilli)], pi.Requests.MilliCPU, pi.Requests.Memory}
}

// nodeIn is what the model reads of a node, from either scheduler's node
// info: allocatable and requested CPU (milli) and memory (bytes), the
// GPUs' model and thousandths, and each pod's usage in the node's order.
type nodeIn struct {
	name, model        string
	cpu, mem, gpuMilli int64
	usedCPU, usedMem   int64
	pods               func(yield func(types.UID, podUsage) bool)
}

// build rebuilds a node's GPUs from the pods on it, leaving out skip.
// Pods without remembered GPUs (pods nominated there, or not placed by
// the model) take the best fit, in the node's pod order. O(pods + GPUs).
func (g *gpuDevices) build(in nodeIn, skip types.UID) *gpu.Node {
	n := gpu.NewNode(in.name, in.model, in.cpu, in.mem>>20, int(in.gpuMilli/gpu.Milli))
	n.CPUFree = in.cpu - in.usedCPU
	n.MemFree = (in.mem - in.usedMem) >> 20
	g.mu.Lock()
	defer g.mu.Unlock()
	for uid, u := range in.pods {
		r, ok := u.request()
		if uid == skip {
			n.CPUFree += r.CPU
			n.MemFree += r.Mem
			continue
		}
		if !ok || r.Count == 0 {
			continue
		}
		r.CPU, r.Mem = 0, 0 // counted above
		at := g.assigned[uid]
		if len(at) != r.Count || !fitsAt(n, r, at) {
			at = n.BestFit(r)
		}
		if at != nil {
			n.Place(r, at)
		}
	}
	return n
}

// fits reports whether r's GPUs fit the node one by one. A node whose
// pods request no GPU (usedGPU) holds any r of no more GPUs than it has,
// without being rebuilt (in is called only otherwise): O(1); else O(pods +
// GPUs).
func (g *gpuDevices) fits(usedGPU, gpuMilli int64, in func() nodeIn, skip types.UID, r gpu.Request) bool {
	if usedGPU == 0 {
		return int64(r.Count) <= gpuMilli/gpu.Milli
	}
	return g.build(in(), skip).FitsGPUs(r)
}

// node rebuilds a node of schedq's snapshot (see build).
func (g *gpuDevices) node(ni *framework.NodeInfo, skip types.UID) *gpu.Node {
	return g.build(g.nodeIn(ni), skip)
}

// nodeIn is what the model reads of a node of schedq's snapshot.
func (*gpuDevices) nodeIn(ni *framework.NodeInfo) nodeIn {
	return nodeIn{
		name: ni.Name(), model: ni.Node.Labels[LabelGPUModel],
		cpu: ni.Allocatable.MilliCPU, mem: ni.Allocatable.Memory, gpuMilli: ni.Allocatable.Scalar[v1.ResourceName(ResourceGPUMilli)],
		usedCPU: ni.Requested.MilliCPU, usedMem: ni.Requested.Memory,
		pods: func(yield func(types.UID, podUsage) bool) {
			for _, pi := range ni.Pods {
				if !yield(pi.Pod.UID, usageOf(pi)) {
					return
				}
			}
		},
	}
}

func fitsAt(n *gpu.Node, r gpu.Request, at []int) bool {
	for _, i := range at {
		if i < 0 || i >= len(n.Free) || n.Free[i] < r.Share {
			return false
		}
	}
	return true
}

// score is the policy's score of n for r (0 to 100); 0 if r does not fit.
func (g *gpuDevices) score(n *gpu.Node, r gpu.Request) int64 {
	if !n.Fits(r) {
		return 0
	}
	score, _ := g.policy.Score(n, r, g.workload, g.rnd)
	return score
}

// take chooses the GPUs r takes on n (the policy's choice, or the best
// fit) and remembers them for uid. An error if they do not fit. O(GPUs),
// or the policy's cost.
func (g *gpuDevices) take(uid types.UID, n *gpu.Node, r gpu.Request) error {
	if !n.FitsGPUs(r) {
		return fmt.Errorf("GPUs of %s no longer hold the pod one by one", n.Name)
	}
	var at []int
	if g.hasPolicy && n.Fits(r) {
		_, at = g.policy.Score(n, r, g.workload, g.rnd)
	}
	if at == nil {
		at = n.BestFit(r)
	}
	g.mu.Lock()
	g.assigned[uid] = at
	g.mu.Unlock()
	return nil
}

// Filter refuses a node whose GPUs cannot hold the pod one by one.
func (g *gpuDevices) Filter(_ context.Context, _ *framework.CycleState, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	r, ok := gpuRequest(pi)
	if !ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, badRequest(usageOf(pi).gpuMilli))
	}
	if r.Count == 0 {
		return nil
	}
	in := func() nodeIn { return g.nodeIn(ni) }
	if !g.fits(ni.Requested.Scalar[gpuName], ni.Allocatable.Scalar[gpuName], in, pi.Pod.UID, r) {
		return framework.NewStatus(framework.Unschedulable, reasonNoFit)
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
		err = g.take(pod.UID, g.node(ni, pod.UID), r)
	})
	return err
}

// forget drops the GPUs a pod took, when it leaves the cluster, so that
// the map holds only pods on nodes. O(1).
func (g *gpuDevices) forget(uid types.UID) {
	g.mu.Lock()
	delete(g.assigned, uid)
	g.mu.Unlock()
}

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
	return s.g.score(s.g.node(ni, pi.Pod.UID), r), nil
}
