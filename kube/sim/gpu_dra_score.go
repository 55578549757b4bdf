package sim

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq/kube/gpu"
	"github.com/schedq/schedq/kube/profile"
)

// gpuDRAModel is what GPUDevices keeps when DRA allocates the trace's GPUs
// (scheduler.gpuModel: dra): the policy of its args, the trace's typical
// workload (for FGD) and the Random policy's source.
type gpuDRAModel struct {
	policy    gpu.Policy
	hasPolicy bool
	workload  gpu.Workload
	rnd       *rand.Rand
	// h is GPUDevices' handle, once the framework built the plugin.
	h fwk.Handle
	// pod is the pod DynamicResources' PreFilter ran for last in the
	// attempt now running (a lone pod, or the member of a group being
	// placed; nil between attempts): with FGD or Random its share goes
	// to the GPU the policy chooses (draFullestFirst).
	pod *v1.Pod
	// seed is the run's, from which Random draws a share's GPU.
	seed uint64
	// memo keeps FGD's scores by node content (made at the first score,
	// once the trace has set the workload).
	memo *gpu.Memo
	// claims is the keeper of the DRA manager built with the framework
	// (newDRAFullestFirst), whose counts of the claims' events let
	// GPUDevices' node memo skip its claim lookups; nil: none.
	claims *allocKeeper
}

// fgdMemo returns m's memo of FGD's scores.
func (m *gpuDRAModel) fgdMemo() *gpu.Memo {
	if m.memo == nil {
		m.memo = gpu.NewMemo(m.workload)
	}
	return m.memo
}

func newGPUDRAModel(sc *Scenario) *gpuDRAModel {
	return &gpuDRAModel{rnd: rand.New(rand.NewPCG(sc.Seed, 0x6770)), seed: sc.Seed}
}

// gpuDRAScore is GPUDevices when DRA allocates: a score plugin only, since
// DynamicResources fits the claims and chooses the devices. It rates a
// node by the policy for the placement DRA makes there: the node's GPUs
// are rebuilt from the allocations of the claims of its pods (the DRA
// manager's view: the claims as the simulator stored them, with the
// allocations in flight), and the pod is put on the GPUs DRA's allocator
// takes, which, with the devices listed fullest first (draFullestFirst),
// are the best fit (gpu.Node.BestFit), or FGD's choice under FGD (Random's
// score does not depend on the GPUs).
//
// Not safe for concurrent cycles (the framework's parallelism is 1, and
// the Random policy's source has no lock).
type gpuDRAScore struct {
	m *gpuDRAModel
	h fwk.Handle

	// The request of the last pod scored: Score is called once per
	// feasible node with the same pod object, and summing its requests
	// each time was 3-4% of a replay's CPU. A pod object is never
	// changed in place, so its pointer identifies its request.
	last   *v1.Pod
	lastR  gpu.Request
	lastOK bool
	// lastNum is the last pod's request by number (requests), whose
	// epoch moves once maxFGDRequests are numbered, for the scores kept
	// by the node memo (scoreKey).
	lastNum  int32
	requests map[fgdRequest]int32
	epoch    uint32

	// claims is the DRA manager's claim tracker, asked of the handle
	// once per cycle (lastCS): each ask wraps the manager's tracker in
	// the simulator's and the profile's (two values boxed per node
	// scored, 1% of a loaded replay's CPU and its garbage).
	lastCS fwk.CycleState
	claims fwk.ResourceClaimTracker

	// nodes keeps the nodes rebuilt (nil: rebuild every time).
	nodes *draNodeMemo
}

var (
	_ fwk.ScorePlugin = (*gpuDRAScore)(nil)
	_ fwk.SignPlugin  = (*gpuDRAScore)(nil)
)

// gpuDRAPlugins is the implementation of profile.GPUDevices with gpuModel
// dra, given to the framework; its args set m's policy.
func gpuDRAPlugins(m *gpuDRAModel) frameworkruntime.Registry {
	return frameworkruntime.Registry{gpuDevicesName: func(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, ok, err := policyOfArgs(obj)
		if err != nil {
			return nil, err
		}
		m.policy, m.hasPolicy, m.h = p, ok, h
		pl := &gpuDRAScore{m: m, h: h}
		if draNodeMemoOn {
			pl.nodes = newDRANodeMemo()
		}
		return pl, nil
	}}
}

// policyOfArgs reads the policy of GPUDevices' args; ok is false if they
// name none.
func policyOfArgs(obj runtime.Object) (p gpu.Policy, ok bool, err error) {
	args, err := profile.DecodeGPUDevicesArgs(obj)
	if err != nil || args.Policy == "" {
		return 0, false, err
	}
	p, err = gpu.ParsePolicy(args.Policy)
	return p, err == nil, err
}

// Name is the plugin's name.
func (*gpuDRAScore) Name() string { return gpuDevicesName }

// Score is the policy's score (0 to 100) of the node with the pod on the
// GPUs DRA would allocate it (the best fit, or FGD's choice); 0 if they
// do not hold it.
// O(pods on the node + the policy's cost), a claim looked up per GPU pod;
// the pod's request is summed once per pod object.
func (p *gpuDRAScore) Score(_ context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	if pod != p.last {
		p.last = pod
		p.lastR, p.lastOK = usageOfPod(pod).request()
		if p.lastOK {
			p.lastNum = p.requestNumber(p.lastR)
		}
	}
	r, ok := p.lastR, p.lastOK
	if !ok || !p.m.hasPolicy {
		return 0, nil
	}
	// The node's GPUs are rebuilt from the devices its pods' claims were
	// allocated, leaving out the pod (or read from p's memo of rebuilt
	// nodes, by ni's generation outside a PodGroup's cycle); a pod whose
	// claim has no allocation on the node's pool (not expected once
	// bound) takes the best fit, as DRA would. The node is the memo's,
	// lent: score changes it only to score a placement, which it takes
	// off again.
	fgd := p.m.fgdChooses(pod, r)
	score := func(n *gpu.Node) int64 {
		if !n.Fits(r) {
			return 0
		}
		memo := p.m.fgdMemo()
		if !fgd {
			return memo.ScoreAt(p.m.policy, n, r, n.BestFit(r), p.m.rnd)
		}
		// FGD's score of the GPU it chooses is its score of the choice
		// (gpu.FGD.Score computes it as ScoreAt does), kept in its memo
		// with the choice: not looked up a second time.
		s, at := memo.Choose(n, r)
		if at == nil {
			return memo.ScoreAt(p.m.policy, n, r, nil, p.m.rnd)
		}
		return s
	}
	if cs != p.lastCS || p.claims == nil {
		p.lastCS, p.claims = cs, p.h.SharedDRAManager().ResourceClaims()
	}
	get, byGen := p.claims.Get, cs.GetPodGroupSchedulingCycle() == nil
	if p.m.policy == gpu.Random {
		// Random's score draws from the run's source: every score
		// draws.
		return p.nodes.lend(ni, pod.UID, get, p.m.claims, byGen, score), nil
	}
	key := scoreKey{policy: p.m.policy, fgd: fgd, epoch: p.epoch, num: p.lastNum}
	return p.nodes.lendScore(ni, pod.UID, get, p.m.claims, byGen, key, score), nil
}

// requestNumber is r's number among the requests p scored, given at its
// first score; once maxFGDRequests are numbered, the numbering starts
// again in a new epoch. O(r's models).
func (p *gpuDRAScore) requestNumber(r gpu.Request) int32 {
	key := requestKey(r)
	if n, ok := p.requests[key]; ok {
		return n
	}
	if p.requests == nil || len(p.requests) >= maxFGDRequests {
		p.requests = map[fgdRequest]int32{}
		p.epoch++
	}
	n := int32(len(p.requests))
	p.requests[key] = n
	return n
}

// fgdChooses reports whether DRA is shown pod's GPUs in FGD's order:
// under FGD, for the share of the pod being scheduled (m.pod).
func (m *gpuDRAModel) fgdChooses(pod *v1.Pod, r gpu.Request) bool {
	return m.hasPolicy && m.policy == gpu.FGD && m.pod != nil && pod.UID == m.pod.UID && r.Shared()
}

// attemptEnded forgets the pod of the attempt that ended, so that no
// slice list outside an attempt is ordered for it.
func (m *gpuDRAModel) attemptEnded() { m.pod = nil }

// ScoreExtensions: none; the policies score from 0 to 100 already.
func (*gpuDRAScore) ScoreExtensions() fwk.ScoreExtensions { return nil }

// draNodeFrom is gpuDRAScore.node on in (ni's figures), with get's claims.
func draNodeFrom(in nodeIn, ni fwk.NodeInfo, skip types.UID, get claimGetter) *gpu.Node {
	n := emptyNode(in)
	for _, pi := range ni.GetPods() {
		pod := pi.GetPod()
		res := pi.CalculateResource().Resource
		u := podUsage{gpuMilli: res.GetScalarResources()[gpuName], cpu: res.GetMilliCPU(), mem: res.GetMemory()}
		placeHeld(n, u, pod.UID == skip, func() []int {
			return allocatedGPUs(pod, in.name, get)
		})
	}
	return n
}

// allocatedGPUs lists the GPUs (device indexes of the node's pool) that
// the pod's claims, as get gives them, were allocated. O(claims of the
// pod × their devices).
func allocatedGPUs(pod *v1.Pod, node string, get func(namespace, name string) (*resourceapi.ResourceClaim, error)) []int {
	var at []int
	for _, st := range pod.Status.ResourceClaimStatuses {
		if st.ResourceClaimName == nil {
			continue
		}
		c, err := get(pod.Namespace, *st.ResourceClaimName)
		if err != nil || c.Status.Allocation == nil {
			continue
		}
		for _, d := range c.Status.Allocation.Devices.Results {
			if d.Driver != traceGPUDriver || d.Pool != node {
				continue
			}
			if i, err := strconv.Atoi(strings.TrimPrefix(d.Device, "gpu-")); err == nil {
				at = append(at, i)
			}
		}
	}
	return at
}

// SignPod signs pod by what the policy reads of it, as on the device
// model (gpuFramework.SignPod).
func (p *gpuDRAScore) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return signGPU(pod, p.m.hasPolicy && p.m.policy == gpu.Random)
}
