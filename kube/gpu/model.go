// Package gpu models a node's GPUs one by one, as the GPU-sharing
// scheduler of Weng et al. ("Beware of Fragmentation: Scheduling
// GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC
// 2023) does: a node has N GPUs of Milli thousandths each, of one model; a
// pod asks for k whole GPUs or a share below Milli of one GPU; a placement
// names the GPUs it takes. On that model it defines the paper's
// fragmentation measure (Frag, Workload), the GPU allocation rate, the six
// placement policies the paper compares (Policy) and the paper's
// experiment (Experiment).
//
// The package is pure and deterministic: no Kubernetes import, no clock,
// randomness only from the *rand.Rand a caller passes. Its values are not
// safe for concurrent mutation; a Node or a Workload only read may be
// shared.
package gpu

import (
	"fmt"
	"slices"
)

// Milli is the capacity of one GPU, in thousandths.
const Milli = 1000

// Request is what a pod asks of the node it runs on.
type Request struct {
	CPU int64 // milli-CPU
	Mem int64 // MiB
	// Count is the number of GPUs: 0, 1 with Share < Milli (a share of
	// one GPU), or k ≥ 1 with Share == Milli (k whole GPUs).
	Count int
	// Share is the thousandths taken on each of the Count GPUs.
	Share int64
	// Models are the GPU models the pod accepts; empty: any.
	Models []string
}

// GPU is the request's total GPU capacity in thousandths.
func (r Request) GPU() int64 { return int64(r.Count) * r.Share }

// Shared reports whether the request is a share of one GPU.
func (r Request) Shared() bool { return r.Count == 1 && r.Share < Milli }

// Validate refuses a request outside the model: a negative amount, a
// share of several GPUs, a share above Milli, or a count without share.
func (r Request) Validate() error {
	switch {
	case r.CPU < 0 || r.Mem < 0:
		return fmt.Errorf("negative cpu %d or memory %d", r.CPU, r.Mem)
	case r.Count < 0 || r.Share < 0 || r.Share > Milli:
		return fmt.Errorf("gpu count %d and share %d: want a count ≥ 0 and a share from 0 to %d", r.Count, r.Share, Milli)
	case (r.Count == 0) != (r.Share == 0):
		return fmt.Errorf("gpu count %d and share %d: both zero, or both set", r.Count, r.Share)
	case r.Count > 1 && r.Share != Milli:
		return fmt.Errorf("a pod of %d GPUs takes them whole (share %d, want %d)", r.Count, r.Share, Milli)
	}
	return nil
}

// Node is a node's capacity and what is free on it, GPU by GPU.
type Node struct {
	Name  string
	Model string // the GPUs' model; "" on a node without GPUs
	// CPU and Mem are the capacity (milli-CPU, MiB); CPUFree and MemFree
	// what pods have not taken.
	CPU, Mem         int64
	CPUFree, MemFree int64
	// Free holds each GPU's free thousandths, from 0 to Milli.
	Free []int64
	// kinds counts the GPU pods on the node by kind (see kind), for
	// GpuClustering.
	kinds map[int]int
}

// NewNode returns an empty node of gpus GPUs of the model.
func NewNode(name, model string, cpu, mem int64, gpus int) *Node {
	n := &Node{Name: name, Model: model, CPU: cpu, Mem: mem, CPUFree: cpu, MemFree: mem, Free: make([]int64, gpus)}
	for i := range n.Free {
		n.Free[i] = Milli
	}
	return n
}

// Clone returns a deep copy.
func (n *Node) Clone() *Node {
	c := *n
	c.Free = slices.Clone(n.Free)
	if n.kinds != nil {
		c.kinds = make(map[int]int, len(n.kinds))
		for k, v := range n.kinds {
			c.kinds[k] = v
		}
	}
	return &c
}

// FreeGPU is the node's unallocated GPU capacity in thousandths. O(GPUs).
func (n *Node) FreeGPU() int64 {
	var s int64
	for _, f := range n.Free {
		s += f
	}
	return s
}

// FullyFree counts the GPUs nothing uses. O(GPUs).
func (n *Node) FullyFree() int {
	c := 0
	for _, f := range n.Free {
		if f == Milli {
			c++
		}
	}
	return c
}

// Accepts reports whether the node's GPU model suits r: a request without
// GPUs suits any node, one with GPUs needs a node with GPUs of one of its
// models (any model if it names none).
func (n *Node) Accepts(r Request) bool {
	if r.Count == 0 {
		return true
	}
	if len(n.Free) == 0 {
		return false
	}
	return len(r.Models) == 0 || slices.Contains(r.Models, n.Model)
}

// FitsGPUs reports whether r.Count GPUs each have r.Share free, looking
// only at the GPUs (not at the node's model, CPU or memory). O(GPUs).
func (n *Node) FitsGPUs(r Request) bool {
	need := r.Count
	for _, f := range n.Free {
		if need == 0 {
			break
		}
		if f >= r.Share {
			need--
		}
	}
	return need == 0
}

// Fits reports whether r fits on the node now: model, CPU, memory and GPU
// by GPU. O(GPUs).
func (n *Node) Fits(r Request) bool {
	return n.Accepts(r) && n.CPUFree >= r.CPU && n.MemFree >= r.Mem && n.FitsGPUs(r)
}

// Place takes r on the node, on the GPUs named (len(gpus) == r.Count, each
// with r.Share free). It panics on a placement that does not fit: callers
// choose the GPUs with Choose or a Policy. O(GPUs).
func (n *Node) Place(r Request, gpus []int) {
	n.apply(r, gpus, -1)
}

// Release gives back what Place took.
func (n *Node) Release(r Request, gpus []int) {
	n.apply(r, gpus, 1)
}

func (n *Node) apply(r Request, gpus []int, sign int64) {
	if len(gpus) != r.Count {
		panic(fmt.Sprintf("gpu: %d GPUs named for a request of %d", len(gpus), r.Count))
	}
	for _, g := range gpus {
		f := n.Free[g] + sign*r.Share
		if f < 0 || f > Milli {
			panic(fmt.Sprintf("gpu: GPU %d of %s would have %d free", g, n.Name, f))
		}
		n.Free[g] = f
	}
	n.CPUFree += sign * r.CPU
	n.MemFree += sign * r.Mem
	if r.Count > 0 {
		if n.kinds == nil {
			n.kinds = map[int]int{}
		}
		k := kind(r)
		n.kinds[k] -= int(sign)
		if n.kinds[k] == 0 {
			delete(n.kinds, k)
		}
	}
}

// kind is a GPU request's kind for GpuClustering: 0 for a share of one
// GPU, k for k whole GPUs.
func kind(r Request) int {
	if r.Shared() {
		return 0
	}
	return r.Count
}

// BestFit chooses the GPUs for r on the node: for a share, the GPU with
// the least free capacity that still holds it (the lowest index among
// equals); for whole GPUs, the first r.Count fully free ones. Nil if r
// does not fit the GPUs, or asks for none. O(GPUs).
func (n *Node) BestFit(r Request) []int {
	if r.Count == 0 || !n.FitsGPUs(r) {
		return nil
	}
	if r.Shared() {
		best := -1
		for i, f := range n.Free {
			if f >= r.Share && (best < 0 || f < n.Free[best]) {
				best = i
			}
		}
		return []int{best}
	}
	return n.firstFree(r.Count)
}

// firstFree returns the first k fully free GPUs, nil if there are fewer.
func (n *Node) firstFree(k int) []int {
	out := make([]int, 0, k)
	for i, f := range n.Free {
		if len(out) == k {
			break
		}
		if f == Milli {
			out = append(out, i)
		}
	}
	if len(out) < k {
		return nil
	}
	return out
}
