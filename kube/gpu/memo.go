package gpu

import (
	"math/rand/v2"
	"slices"
	"strings"
)

// Memo keeps FGD's scores by what they are computed from: the node's GPU
// model, CPU and memory (capacity and free), each GPU's free thousandths,
// the request, and the GPUs the request is put on. FGD's score is a
// function of these and of the workload, which is one per Memo, so an
// answer read from the Memo is the one FGD would compute. A scheduler
// scores the same few contents again and again (a cluster's idle nodes
// of one model all look alike; a node's content changes only when a pod
// comes or goes), and FGD is the costliest policy: O(classes × GPUs²)
// per node. Nodes of more than maxMemoGPUs GPUs, or with a GPU's free
// share outside 0 to Milli, are computed each time.
// The other policies are cheap, and two of them read what the key leaves
// out (Random its source, GpuClustering the kinds of the node's pods):
// they are never kept. Not safe for concurrent use; one per scheduling
// goroutine.
type Memo struct {
	w      Workload
	scores map[memoKey]memoScore
	// cpus is the workload's classes' CPU requests, sorted, without
	// repeats (cpuLevel); shares keeps ShareGPU's choices.
	cpus   []int64
	shares map[shareKey]memoScore
}

// shareKey is what FGD's choice of the GPU of a share reads of the node
// and the request (ShareGPU): the node's model, GPUs and each one's free
// thousandths, the share, and the CPU levels (cpuLevel) of the node's
// free CPU before and after the share's pod is placed. Memory, the
// node's capacities and the request's models do not enter Frag, nor the
// choice among GPUs.
type shareKey struct {
	model         string
	free          [maxMemoGPUs]int16
	gpus          int8
	share         int64
	before, after int
}

// memoScore is a kept score, with the GPUs FGD chose (as bits) for Choose.
type memoScore struct {
	score int64
	at    uint8
	none  bool // Choose: r fits on no GPU of the node
}

// maxMemoGPUs is the most GPUs a node may have for Memo to keep its
// scores; the trace's nodes have at most 8.
const maxMemoGPUs = 8

// maxMemoScores bounds a Memo's size: when full, it starts again empty.
const maxMemoScores = 1 << 16

type memoKey struct {
	model            string
	cpu, mem         int64
	cpuFree, memFree int64
	free             [maxMemoGPUs]int16
	gpus             int8
	at               uint8 // the GPUs the request is put on, as bits
	choose           bool  // FGD chooses the GPUs (Choose), at is 0
	rCPU, rMem       int64
	count            int
	share            int64
	models           string
}

// NewMemo returns an empty Memo for FGD's scores against the workload w.
func NewMemo(w Workload) *Memo {
	var cpus []int64
	for _, c := range w {
		cpus = append(cpus, c.Req.CPU)
	}
	slices.Sort(cpus)
	return &Memo{w: w, scores: map[memoKey]memoScore{}, cpus: slices.Compact(cpus), shares: map[shareKey]memoScore{}}
}

// cpuLevel is how many of the workload's classes' CPU requests (each
// counted once) are at most cpu: fragFor reads a node's free CPU only
// as whether a class's CPU fits in it, so two amounts of free CPU of
// one level give every class the same fragmentation. O(log classes).
func (m *Memo) cpuLevel(cpu int64) int {
	i, _ := slices.BinarySearch(m.cpus, cpu+1)
	return i
}

// memoShareChoiceOn turns on ShareGPU's keep; tests turn it off to
// compare.
var memoShareChoiceOn = true

// ShareGPU is the GPU FGD puts the share r (r.Shared()) on, on n: the
// GPUs of Choose(n, r), its one GPU, or -1 if none holds r. FGD's
// score and choice of a share read of n its model, its GPUs' free
// thousandths and, of its free CPU, only its level (cpuLevel), before
// and after the share (the choice is the GPU whose fragmentation after
// the share is least, by Frag's rounded sigmoid, the first of equals):
// they are kept by those (shareKey) besides Choose's key, so nodes of
// one model whose GPUs are used alike share them whatever their memory
// and the pod's, and whatever their free CPU within a level. An answer
// found by shareKey is kept under Choose's key too, as Choose would
// keep it, so that a later Choose of that node finds it (GPUDevices'
// score asks Choose of the nodes the lister ordered). O(GPUs + log
// classes) for a kept answer.
func (m *Memo) ShareGPU(n *Node, r Request) int {
	sk, ok := m.shareKeyOf(n, r)
	if !ok || !memoShareChoiceOn {
		return oneGPU(m.Choose(n, r))
	}
	ck, ok := memoKeyOf(n, r, nil)
	if !ok {
		return oneGPU(m.Choose(n, r))
	}
	ck.choose = true
	if v, ok := m.scores[ck]; ok {
		return gpuOf(v)
	}
	if v, ok := m.shares[sk]; ok {
		m.keep(ck, v)
		return gpuOf(v)
	}
	s, at := m.Choose(n, r)
	v := memoScore{score: s, none: at == nil}
	for _, g := range at {
		v.at |= 1 << g
	}
	if len(m.shares) >= maxMemoScores {
		clear(m.shares)
	}
	m.shares[sk] = v
	return oneGPU(s, at)
}

// oneGPU is the GPU of a share's GPUs at, -1 if there is not one.
func oneGPU(_ int64, at []int) int {
	if len(at) == 1 {
		return at[0]
	}
	return -1
}

// gpuOf is the GPU of a kept share's answer, -1 if none holds it.
func gpuOf(v memoScore) int {
	if v.none {
		return -1
	}
	for g := range maxMemoGPUs {
		if v.at == 1<<g {
			return g
		}
	}
	return -1
}

// shareKeyOf is the key of FGD's choice of a GPU for the share r on n;
// false if r is not a share, or n has too many GPUs for the key or a
// GPU's free share outside 0 to Milli.
func (m *Memo) shareKeyOf(n *Node, r Request) (shareKey, bool) {
	if !r.Shared() || len(n.Free) > maxMemoGPUs {
		return shareKey{}, false
	}
	k := shareKey{model: n.Model, gpus: int8(len(n.Free)), share: r.Share,
		before: m.cpuLevel(n.CPUFree), after: m.cpuLevel(n.CPUFree - r.CPU)}
	for i, f := range n.Free {
		if f < 0 || f > Milli {
			return shareKey{}, false
		}
		k.free[i] = int16(f)
	}
	return k, true
}

// Choose is FGD.Score(n, r, w, nil): FGD's score of n for r and the GPUs
// it puts r on (nil if none holds it), read from m when m has it. O(GPUs
// + request's models) for a kept answer.
func (m *Memo) Choose(n *Node, r Request) (int64, []int) {
	k, ok := memoKeyOf(n, r, nil)
	if !ok {
		return FGD.Score(n, r, m.w, nil)
	}
	k.choose = true
	if v, ok := m.scores[k]; ok {
		if v.none {
			return v.score, nil
		}
		return v.score, gpusOf(v.at)
	}
	s, at := FGD.Score(n, r, m.w, nil)
	v := memoScore{score: s, none: at == nil}
	for _, g := range at {
		v.at |= 1 << g
	}
	m.keep(k, v)
	return s, at
}

// gpusOf lists the GPUs of the bits at, in increasing order.
func gpusOf(at uint8) []int {
	gpus := []int{}
	for g := range maxMemoGPUs {
		if at&(1<<g) != 0 {
			gpus = append(gpus, g)
		}
	}
	return gpus
}

// keep stores v under k, starting again empty when m is full.
func (m *Memo) keep(k memoKey, v memoScore) {
	if len(m.scores) >= maxMemoScores {
		clear(m.scores)
	}
	m.scores[k] = v
}

// ScoreAt is p.ScoreAt(n, r, gpus, w, rnd), read from m when p is FGD and
// m has it. O(GPUs + request's models) for a kept answer.
func (m *Memo) ScoreAt(p Policy, n *Node, r Request, gpus []int, rnd *rand.Rand) int64 {
	if p != FGD {
		return p.ScoreAt(n, r, gpus, m.w, rnd)
	}
	k, ok := memoKeyOf(n, r, gpus)
	if !ok {
		return p.ScoreAt(n, r, gpus, m.w, rnd)
	}
	if v, ok := m.scores[k]; ok {
		return v.score
	}
	s := p.ScoreAt(n, r, gpus, m.w, rnd)
	m.keep(k, memoScore{score: s})
	return s
}

// memoKeyOf is the key of FGD's score of r on n's GPUs gpus; false if n
// has too many GPUs for the key, or a GPU whose free share is outside 0
// to Milli (the key holds each as an int16, which would wrap some such
// values onto others).
func memoKeyOf(n *Node, r Request, gpus []int) (memoKey, bool) {
	if len(n.Free) > maxMemoGPUs {
		return memoKey{}, false
	}
	k := memoKey{model: n.Model, cpu: n.CPU, mem: n.Mem, cpuFree: n.CPUFree, memFree: n.MemFree,
		gpus: int8(len(n.Free)), rCPU: r.CPU, rMem: r.Mem, count: r.Count, share: r.Share}
	for i, f := range n.Free {
		if f < 0 || f > Milli { // outside the model, and int16 may not hold it
			return memoKey{}, false
		}
		k.free[i] = int16(f)
	}
	for _, g := range gpus {
		k.at |= 1 << g
	}
	switch len(r.Models) {
	case 0:
	case 1:
		k.models = r.Models[0]
	default:
		k.models = strings.Join(r.Models, "|")
	}
	return k, true
}
