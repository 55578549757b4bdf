package sim

import (
	"fmt"
	"math/rand/v2"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/gpu"
)

// GPU models of a replay, for scheduler.gpuModel.
const (
	GPUModelDevice   = "device"
	GPUModelCapacity = "capacity"
)

// gpuDevices models the GPUs of the trace's nodes one by one in a replay
// (scheduler.gpuModel: device; DRA is the default with a trace). It is the one
// implementation of the per-GPU fit, scoring and choice of GPUs, which
// gpuFramework (gpu_framework.go), an out-of-tree plugin of
// kube-scheduler's framework, runs at PreFilter, Filter, Score and
// Reserve, on the cycle's snapshot.
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
	memo      *gpu.Memo    // FGD's scores by node content (see fgdScore)

	mu       sync.Mutex
	assigned map[types.UID][]int // the GPUs each bound or binding pod took
}

// newGPUDevices returns the model for the scenario.
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
	n := emptyNode(in)
	g.mu.Lock()
	defer g.mu.Unlock()
	for uid, u := range in.pods {
		placeHeld(n, u, uid == skip, func() []int { return g.assigned[uid] })
	}
	return n
}

// emptyNode is in's node with its pods' CPU and memory taken and all its
// GPUs free, for placeHeld to fill. O(GPUs).
func emptyNode(in nodeIn) *gpu.Node {
	n := gpu.NewNode(in.name, in.model, in.cpu, in.mem>>20, int(in.gpuMilli/gpu.Milli))
	n.CPUFree = in.cpu - in.usedCPU
	n.MemFree = (in.mem - in.usedMem) >> 20
	return n
}

// placeHeld puts one pod of a node being rebuilt back on n: a skipped
// pod gives its CPU and memory back; a pod with GPUs takes the ones held
// (read only for such a pod) if they still fit, else the best fit.
// O(GPUs).
func placeHeld(n *gpu.Node, u podUsage, skipped bool, held func() []int) {
	r, ok := u.request()
	if skipped {
		n.CPUFree += r.CPU
		n.MemFree += r.Mem
		return
	}
	if !ok || r.Count == 0 {
		return
	}
	r.CPU, r.Mem = 0, 0 // counted in emptyNode
	at := held()
	if len(at) != r.Count || !fitsAt(n, r, at) {
		at = n.BestFit(r)
	}
	if at != nil {
		n.Place(r, at)
	}
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

func fitsAt(n *gpu.Node, r gpu.Request, at []int) bool {
	for _, i := range at {
		if i < 0 || i >= len(n.Free) || n.Free[i] < r.Share {
			return false
		}
	}
	return true
}

// policyScore is g.policy.Score(n, r, ...), FGD's read from g's memo
// (made at the first call, once the trace has set the workload). Only
// from the scheduling cycle (Score, Reserve), one at a time.
func (g *gpuDevices) policyScore(n *gpu.Node, r gpu.Request) (int64, []int) {
	if g.policy != gpu.FGD {
		return g.policy.Score(n, r, g.workload, g.rnd)
	}
	if g.memo == nil {
		g.memo = gpu.NewMemo(g.workload)
	}
	return g.memo.Choose(n, r)
}

// score is the policy's score of n for r (0 to 100); 0 if r does not fit.
func (g *gpuDevices) score(n *gpu.Node, r gpu.Request) int64 {
	if !n.Fits(r) {
		return 0
	}
	score, _ := g.policyScore(n, r)
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
		_, at = g.policyScore(n, r)
	}
	if at == nil {
		at = n.BestFit(r)
	}
	g.mu.Lock()
	g.assigned[uid] = at
	g.mu.Unlock()
	return nil
}

// forget drops the GPUs a pod took, when it leaves the cluster, so that
// the map holds only pods on nodes. O(1).
func (g *gpuDevices) forget(uid types.UID) {
	g.mu.Lock()
	delete(g.assigned, uid)
	g.mu.Unlock()
}

// assignedTo lists the GPUs pod took (fragMeter's source with the device
// model). O(1).
func (g *gpuDevices) assignedTo(p *v1.Pod) []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.assigned[p.UID]
}
