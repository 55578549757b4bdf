package sim

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/gpu"
)

// fragMeter follows the paper's fragmentation (gpu.Frag) of a replay's
// nodes over virtual time, against the trace's typical workload. It keeps
// its own gpu.Node per node with GPUs, updated as pods are bound and
// leave, with the GPUs the device model chose for them or DRA allocated
// them (assigned), and each node's
// fragmentation, so that the cluster's is a running sum: a pod bound or
// leaving costs one node's gpu.Frag, O(classes × GPUs), never a pass over
// the cluster. Nodes without GPUs are not followed (their fragmentation
// is 0). Not safe for concurrent use: the simulator calls it from its one
// event loop.
type fragMeter struct {
	// assigned lists the GPUs (indexes on its node) a bound pod was
	// given; nil if none are known.
	assigned func(*v1.Pod) []int
	workload gpu.Workload
	nodes    map[string]*fragNode
	pods     map[types.UID]fragPod
	// capacity and used are the followed nodes' GPU thousandths; frag the
	// sum of their fragmentation.
	capacity, used int64
	frag           float64
	// arrived is the GPU thousandths every pod arrived so far asked for.
	arrived int64
}

type fragNode struct {
	n    *gpu.Node
	frag float64
}

// fragPod is what a bound pod took on a followed node.
type fragPod struct {
	node string
	r    gpu.Request
	at   []int
}

func newFragMeter(assigned func(*v1.Pod) []int, w gpu.Workload) *fragMeter {
	return &fragMeter{assigned: assigned, workload: w, nodes: map[string]*fragNode{}, pods: map[types.UID]fragPod{}}
}

// nodeAdded follows a node with GPUs. O(classes × GPUs).
func (m *fragMeter) nodeAdded(n *v1.Node) {
	gpus := n.Status.Allocatable[v1.ResourceName(ResourceGPUMilli)]
	count := gpus.Value() / gpu.Milli
	if count <= 0 || m.nodes[n.Name] != nil {
		return
	}
	cpu := n.Status.Allocatable[v1.ResourceCPU]
	mem := n.Status.Allocatable[v1.ResourceMemory]
	fn := &fragNode{n: gpu.NewNode(n.Name, n.Labels[LabelGPUModel], cpu.MilliValue(), mem.Value()>>20, int(count))}
	m.nodes[n.Name] = fn
	m.capacity += count * gpu.Milli
	m.refresh(fn)
}

// nodeRemoved stops following a node; the simulator removes its pods
// first. O(1).
func (m *fragMeter) nodeRemoved(n *v1.Node) {
	fn := m.nodes[n.Name]
	if fn == nil {
		return
	}
	delete(m.nodes, n.Name)
	m.capacity -= int64(len(fn.n.Free)) * gpu.Milli
	m.used -= int64(len(fn.n.Free))*gpu.Milli - fn.n.FreeGPU()
	m.frag -= fn.frag
}

// podAdded places a bound pod on its node's copy: on the GPUs it was
// assigned, or the best fit when none that fit are known.
// O(classes × GPUs).
func (m *fragMeter) podAdded(p *v1.Pod) {
	fn := m.nodes[p.Spec.NodeName]
	if fn == nil {
		return
	}
	if _, dup := m.pods[p.UID]; dup {
		return
	}
	r, ok := usageOfPod(p).request()
	if !ok {
		r.Count, r.Share = 0, 0
	}
	var at []int
	if r.Count > 0 {
		if m.assigned != nil {
			at = m.assigned(p)
		}
		if len(at) != r.Count || !fitsAt(fn.n, r, at) {
			at = fn.n.BestFit(r)
		}
		if at == nil { // does not fit one by one: count its CPU only
			r.Count, r.Share = 0, 0
		}
	}
	fn.n.Place(r, at)
	m.used += r.GPU()
	m.pods[p.UID] = fragPod{node: p.Spec.NodeName, r: r, at: at}
	m.refresh(fn)
}

// podRemoved gives back what podAdded took. O(classes × GPUs).
func (m *fragMeter) podRemoved(p *v1.Pod) {
	fp, ok := m.pods[p.UID]
	if !ok {
		return
	}
	delete(m.pods, p.UID)
	fn := m.nodes[fp.node]
	if fn == nil {
		return
	}
	fn.n.Release(fp.r, fp.at)
	m.used -= fp.r.GPU()
	m.refresh(fn)
}

// refresh measures one node again and updates the cluster's sum.
func (m *fragMeter) refresh(fn *fragNode) {
	f := gpu.Frag(fn.n, m.workload)
	m.frag += f - fn.frag
	fn.frag = f
}

// podArrived adds a new pod's GPU request, in thousandths, to the arrived
// demand. O(1).
func (m *fragMeter) podArrived(p *v1.Pod) {
	if r, ok := usageOfPod(p).request(); ok {
		m.arrived += r.GPU()
	}
}

// demand is the arrived GPU demand over the followed GPU capacity (0
// without GPUs).
func (m *fragMeter) demand() float64 {
	if m.capacity <= 0 {
		return 0
	}
	return float64(m.arrived) / float64(m.capacity)
}

// stats are the followed nodes' figures now.
func (m *fragMeter) stats() gpu.Stats {
	return gpu.Stats{Capacity: m.capacity, Allocated: m.used, Frag: max(m.frag, 0)}
}
