package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Policy is a way of scoring nodes for a pod, from the paper's
// comparison. Every policy scores a node that fits the pod from 0 to
// MaxScore (higher is better, integers as in the artifact, where they are
// kube-scheduler score plugins) and names the GPUs the pod would take
// there; the scheduler takes a node of the highest score, chosen among
// equals as Config.Ties says.
type Policy int

// The six policies.
const (
	// Random scores each node with a random integer, so that the node
	// taken is uniform among those that fit; the GPUs are random among
	// those that hold the pod.
	Random Policy = iota
	// DotProd (Tetris) scores 100·(1 − (c·C + g·G)/2), with c and g the
	// pod's CPU and GPU requests and C and G the node's free CPU and free
	// GPU capacity (summed over its GPUs), each over the largest node's
	// (MaxCPU, MaxGPU): the smaller the dot product of request and free
	// room, the better. GPUs by BestFit.
	DotProd
	// GpuClustering keeps pods of one kind of GPU request (a share, or k
	// whole GPUs) together: a node whose GPU pods are all of the pod's
	// kind scores 75 to 100, one with that kind among others 50 to 75, a
	// node without GPU pods 25 to 50, any other 0 to 25; within a band,
	// the less free GPU the higher (25·(MaxGPU − free)/MaxGPU). A pod
	// without GPUs scores 0 everywhere. GPUs by BestFit.
	GpuClustering
	// GpuPacking prefers, in order: a node where the pod fits on partly
	// used GPUs (100 − Σ free%/10 of the GPUs taken, at least 50), a node
	// in use where it needs fully free GPUs (50 − their number, at least
	// 33), an idle node (33 − its GPUs, at least its GPUs). A pod without
	// GPUs scores 0 everywhere. GPUs by BestFit.
	GpuPacking
	// BestFit scores 100·(1 − ((C − c)/MaxCPU + (G − g)/MaxGPU)/2): the
	// node with the least CPU and GPU left after the pod. GPUs by
	// BestFit.
	BestFit
	// FGD (fragmentation gradient descent) places the pod where the
	// node's fragmentation against the workload (Frag) grows least: the
	// score is 100·sigmoid((Frag before − Frag after)/1000). For a share,
	// each GPU that holds it is tried and the best kept (the first among
	// equals); whole GPUs are the first fully free ones.
	FGD
)

// MaxScore is the highest score.
const MaxScore = 100

// MaxCPU and MaxGPU scale the CPU and GPU terms of DotProd, BestFit and
// GpuClustering: the largest node of the trace (128 CPUs, 8 GPUs), as in
// the artifact.
const (
	MaxCPU = 128_000
	MaxGPU = 8 * Milli
)

var policyNames = []string{"random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd"}

// Policies lists the policies in the paper's order.
func Policies() []Policy { return []Policy{Random, DotProd, GpuClustering, GpuPacking, BestFit, FGD} }

// String is the policy's name in lower case.
func (p Policy) String() string {
	if p < 0 || int(p) >= len(policyNames) {
		return fmt.Sprintf("Policy(%d)", int(p))
	}
	return policyNames[p]
}

// ParsePolicy reads a policy's name, in any case.
func ParsePolicy(s string) (Policy, error) {
	for i, n := range policyNames {
		if strings.EqualFold(s, n) {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("%q is not a GPU policy (known: %s)", s, strings.Join(policyNames, ", "))
}

// Score rates the node for r, which must fit it (Node.Fits), and returns
// the GPUs r would take there (nil if r asks for none). w is the workload
// (FGD only); rnd is used by Random only. O(GPUs) but for FGD,
// O(GPUs × classes × GPUs) for a share and O(classes × GPUs) otherwise.
func (p Policy) Score(n *Node, r Request, w Workload, rnd *rand.Rand) (int64, []int) {
	switch p {
	case Random:
		return rnd.Int64N(MaxScore + 1), randomGPUs(n, r, rnd)
	case DotProd:
		return dotProd(n, r), n.BestFit(r)
	case GpuClustering:
		return clustering(n, r), n.BestFit(r)
	case GpuPacking:
		return packing(n, r), n.BestFit(r)
	case BestFit:
		return bestFit(n, r), n.BestFit(r)
	case FGD:
		return fgd(n, r, w)
	}
	panic(fmt.Sprintf("gpu: unknown policy %d", int(p)))
}

// randomGPUs chooses r.Count GPUs uniformly among those that hold r.
func randomGPUs(n *Node, r Request, rnd *rand.Rand) []int {
	if r.Count == 0 {
		return nil
	}
	var ok []int
	for i, f := range n.Free {
		if f >= r.Share {
			ok = append(ok, i)
		}
	}
	if len(ok) < r.Count {
		return nil
	}
	rnd.Shuffle(len(ok), func(i, j int) { ok[i], ok[j] = ok[j], ok[i] })
	out := ok[:r.Count]
	insertionSort(out)
	return out
}

func insertionSort(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func dotProd(n *Node, r Request) int64 {
	c := float64(n.CPUFree) / MaxCPU * float64(r.CPU) / MaxCPU
	g := float64(n.FreeGPU()) / MaxGPU * float64(r.GPU()) / MaxGPU
	return int64(MaxScore * (1 - (c+g)/2))
}

func clustering(n *Node, r Request) int64 {
	if r.Count == 0 {
		return 0
	}
	base := int64(0)
	switch k := kind(r); {
	case n.kinds[k] > 0 && len(n.kinds) == 1:
		base = 3 * MaxScore / 4
	case n.kinds[k] > 0:
		base = MaxScore / 2
	case len(n.kinds) == 0:
		base = MaxScore / 4
	}
	return MaxScore/4*(MaxGPU-n.FreeGPU())/MaxGPU + base
}

// packing scores the GPUs taken least free first: partly used ones if
// they can.
func packing(n *Node, r Request) int64 {
	if r.Count == 0 {
		return 0
	}
	return packingAt(n, r, n.BestFitAll(r))
}

// packingAt is GpuPacking's score of a node in use with r on taken.
func packingAt(n *Node, r Request, taken []int) int64 {
	if r.Count == 0 {
		return 0
	}
	gpus := len(n.Free)
	if full := n.FullyFree(); full == gpus {
		return max(MaxScore/3-int64(full), int64(full))
	}
	fullTaken := 0
	var freePct int64
	for _, g := range taken {
		if n.Free[g] == Milli {
			fullTaken++
		}
		freePct += n.Free[g] * 100 / Milli
	}
	if fullTaken > 0 {
		return max(MaxScore/2-int64(fullTaken), MaxScore/3)
	}
	return max(MaxScore-freePct/10, MaxScore/2)
}

// BestFitAll returns the r.Count GPUs, least free first (lowest index
// among equals), that each hold r.Share; nil if there are fewer.
// O(GPUs²) at most, for at most 64 GPUs.
func (n *Node) BestFitAll(r Request) []int {
	idx := make([]int, len(n.Free))
	for i := range idx {
		idx[i] = i
	}
	for i := 1; i < len(idx); i++ { // stable insertion sort by free
		for j := i; j > 0 && n.Free[idx[j]] < n.Free[idx[j-1]]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	var out []int
	for _, g := range idx {
		if len(out) == r.Count {
			break
		}
		if n.Free[g] >= r.Share {
			out = append(out, g)
		}
	}
	if len(out) < r.Count {
		return nil
	}
	return out
}

func bestFit(n *Node, r Request) int64 {
	c := float64(n.CPUFree-r.CPU) / MaxCPU
	g := float64(n.FreeGPU()-r.GPU()) / MaxGPU
	return int64((1 - (c*0.5 + g*0.5)) * MaxScore)
}

func sigmoidScore(delta float64) int64 {
	return int64(MaxScore / (1 + math.Exp(-delta/Milli)))
}

func fgd(n *Node, r Request, w Workload) (int64, []int) {
	before := Frag(n, w)
	if r.Shared() {
		best, score := -1, int64(0)
		for i, f := range n.Free {
			if f < r.Share {
				continue
			}
			gpus := []int{i}
			n.Place(r, gpus)
			s := sigmoidScore(before - Frag(n, w))
			n.Release(r, gpus)
			if best < 0 || s > score {
				best, score = i, s
			}
		}
		if best < 0 {
			return 0, nil
		}
		return score, []int{best}
	}
	gpus := n.firstFree(r.Count)
	if r.Count > 0 && gpus == nil {
		return 0, nil
	}
	n.Place(r, gpus)
	s := sigmoidScore(before - Frag(n, w))
	n.Release(r, gpus)
	return s, gpus
}

// ScoreAt rates the node for r placed on gpus, GPUs chosen by someone
// else (an allocator), which must hold r: FGD and GpuPacking score those
// GPUs, the other policies do not depend on which GPUs are taken and
// score as Score does. O(Score).
func (p Policy) ScoreAt(n *Node, r Request, gpus []int, w Workload, rnd *rand.Rand) int64 {
	switch p {
	case FGD:
		before := Frag(n, w)
		n.Place(r, gpus)
		s := sigmoidScore(before - Frag(n, w))
		n.Release(r, gpus)
		return s
	case GpuPacking:
		return packingAt(n, r, gpus)
	}
	s, _ := p.Score(n, r, w, rnd)
	return s
}
