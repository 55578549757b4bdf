package gpu

import (
	"slices"
	"testing"
)

// TestFragForByHand checks F_n(m), the paper's fragmentation of a node for
// a task of one kind, case by case, on a T4 node whose GPUs have 1000,
// 1000, 500 and 300 free (2800 in all) and 8 free CPUs.
func TestFragForByHand(t *testing.T) {
	for _, c := range []struct {
		name string
		free []int64
		m    Request
		want int64
	}{
		{"share of 500: only the GPU with 300 is too small", []int64{1000, 1000, 500, 300}, share500, 300},
		{"share of 600: the GPUs with 500 and 300 are too small", []int64{1000, 1000, 500, 300}, Request{CPU: 1000, Count: 1, Share: 600}, 800},
		{"share of 200: every GPU holds it", []int64{1000, 1000, 500, 300}, Request{CPU: 1000, Count: 1, Share: 200}, 0},
		{"one whole GPU: every partly used GPU", []int64{1000, 1000, 500, 300}, whole1, 800},
		{"two whole GPUs: two are free, the partly used ones are fragment", []int64{1000, 1000, 500, 300}, whole2, 800},
		{"four whole GPUs: too few free, all is fragment", []int64{1000, 1000, 500, 300}, Request{CPU: 1000, Count: 4, Share: Milli}, 2800},
		{"no GPU asked: all is fragment", []int64{1000, 1000, 500, 300}, cpuOnly, 2800},
		{"no GPU asked and CPU lacking: all is fragment", []int64{1000, 1000, 500, 300}, Request{CPU: 9000}, 2800},
		{"share with CPU lacking: all is fragment", []int64{1000, 1000, 500, 300}, Request{CPU: 8001, Count: 1, Share: 100}, 2800},
		{"share with exactly the free CPU: as with enough", []int64{1000, 1000, 500, 300}, Request{CPU: 8000, Count: 1, Share: 500}, 300},
		{"memory does not enter, as in the artifact", []int64{1000, 1000, 500, 300}, Request{CPU: 1000, Mem: 1 << 40, Count: 1, Share: 500}, 300},
		{"a model the node lacks: all is fragment", []int64{1000, 1000, 500, 300}, Request{CPU: 1000, Count: 1, Share: 500, Models: []string{"V100M16", "A100"}}, 2800},
		{"the node's model among others: as without", []int64{1000, 1000, 500, 300}, Request{CPU: 1000, Count: 1, Share: 500, Models: []string{"V100M16", "T4"}}, 300},
		{"a full node: nothing to fragment", []int64{0, 0, 0, 0}, cpuOnly, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := FragFor(node(8000, c.free...), c.m); got != c.want {
				t.Fatalf("FragFor = %d, want %d", got, c.want)
			}
		})
	}
}

// TestMeasureByHand checks the cluster's fragmentation (the sum of the
// nodes'), its ratio to the unallocated GPU capacity and the allocation
// rate on two T4 nodes, one of them short of CPU, and a node without
// GPUs, against half shares of 500 and half whole GPUs.
//
//	node a: GPUs 1000, 300, 8 CPUs free: 0.5·300 + 0.5·300 = 300
//	node b: GPUs 1000, 1000, 0.5 CPU free (both kinds ask 1): 2000
//	cluster: capacity 4000, allocated 700, fragmentation 2300
func TestMeasureByHand(t *testing.T) {
	w := Workload{{share500, 0.5}, {whole1, 0.5}}
	nodes := []*Node{node(8000, 1000, 300), node(500, 1000, 1000), NewNode("cpu", "", 32_000, 1<<20, 0)}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"node a", Frag(nodes[0], w), 300},
		{"node b, short of CPU", Frag(nodes[1], w), 2000},
		{"node without GPUs", Frag(nodes[2], w), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Fatalf("Frag = %v, want %v", c.got, c.want)
			}
		})
	}
	s := Measure(nodes, w)
	if s.Capacity != 4000 || s.Allocated != 700 || s.Frag != 2300 {
		t.Fatalf("stats %+v, want capacity 4000, allocated 700, fragmentation 2300", s)
	}
	if s.AllocationRate() != 700.0/4000 || s.FragRatio() != 2300.0/3300 {
		t.Fatalf("allocation rate %v, ratio %v; want 0.175 and 2300/3300", s.AllocationRate(), s.FragRatio())
	}
}

// TestFGDByHand checks FGD's score, 100·sigmoid((F before − F after)/1000)
// truncated, and its choice of GPU for a share (the GPU of the highest
// score), against half shares of 500 (1 CPU) and half whole GPUs (1 CPU).
// On GPUs 1000, 1000, 700, F before is 0.5·0 + 0.5·700 = 350.
func TestFGDByHand(t *testing.T) {
	w := Workload{{share500, 0.5}, {whole1, 0.5}}
	share200 := Request{CPU: 1000, Count: 1, Share: 200}
	for _, c := range []struct {
		name    string
		cpuFree int64
		free    []int64
		r       Request
		gpus    []int
		score   int64
	}{
		// on GPU 2 (700 -> 500): F after 0.5·0 + 0.5·500 = 250;
		// sigmoid(0.1) = 0.525. On GPU 0 (1000 -> 800): 0.5·1500 = 750,
		// sigmoid(-0.4) = 0.401: GPU 2 is kept.
		{"a share goes where fragmentation grows least", 8000, []int64{1000, 1000, 700}, share200, []int{2}, 52},
		// the CPU taken leaves 500, less than either kind asks: all 2500
		// free is fragment after, on any GPU; sigmoid(-2.15) = 0.104, and
		// among equal scores the first GPU.
		{"the CPU a share takes counts", 1500, []int64{1000, 1000, 700}, share200, []int{0}, 10},
		// one whole GPU on GPU 0: F after 0.5·700 = 350 again, sigmoid(0).
		{"a whole GPU on a fully free one", 8000, []int64{1000, 1000, 700}, whole1, []int{0}, 50},
		// a pod without GPUs that leaves 500 CPUs: 2700 after.
		{"a pod without GPUs that takes the CPU", 1500, []int64{1000, 1000, 700}, cpuOnly, []int{}, 8},
		// equal scores: the first GPU.
		{"among equal GPUs the first", 8000, []int64{700, 1000, 700}, share200, []int{0}, 52},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := node(c.cpuFree, c.free...)
			s, g := FGD.Score(n, c.r, w, nil)
			if s != c.score || !slices.Equal(g, c.gpus) {
				t.Fatalf("FGD %d on GPUs %v, want %d on %v", s, g, c.score, c.gpus)
			}
			if !slices.Equal(n.Free, c.free) || n.CPUFree != c.cpuFree {
				t.Fatalf("scoring changed the node: %v, cpu %d", n.Free, n.CPUFree)
			}
		})
	}
}

// TestOtherPoliciesByHand checks the bands of GpuPacking and GpuClustering
// that TestPolicyScores leaves out, and Random's range.
func TestOtherPoliciesByHand(t *testing.T) {
	used := func() *Node { // GPUs 1000, 1000, 1000, 600: a share of 400 held
		n := NewNode("n", "T4", 64_000, 1<<20, 4)
		n.Place(Request{Count: 1, Share: 400}, []int{3})
		return n
	}
	mixed := func() *Node { // a share and a whole GPU held: GPUs 1000, 1000, 0, 600
		n := used()
		n.Place(whole1, []int{2})
		return n
	}
	for _, c := range []struct {
		name  string
		p     Policy
		n     *Node
		r     Request
		score int64
		gpus  []int
	}{
		// partly used GPU 3 (60% free) holds it: 100 − 60/10.
		{"gpupacking share on a partly used GPU", GpuPacking, used(), share500, 94, []int{3}},
		// two fully free GPUs on a node in use: 50 − 2.
		{"gpupacking two whole GPUs on a node in use", GpuPacking, used(), whole2, 48, []int{0, 1}},
		// idle node of 4 GPUs: 33 − 4.
		{"gpupacking idle node", GpuPacking, NewNode("i", "T4", 64_000, 1<<20, 4), whole2, 29, []int{0, 1}},
		// the share's kind among others: 50 + 25·(8000 − 2600)/8000.
		{"gpuclustering kind among others", GpuClustering, mixed(), share500, 66, []int{3}},
		// the node holds only shares: 75 + 25·(8000 − 3600)/8000.
		{"gpuclustering only the pod's kind", GpuClustering, used(), Request{Count: 1, Share: 300}, 88, []int{3}},
		// whole GPUs of another count than those held: 0 + 16.
		{"gpuclustering other kinds only", GpuClustering, mixed(), whole2, 16, []int{0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, g := c.p.Score(c.n, c.r, nil, nil)
			if s != c.score || !slices.Equal(g, c.gpus) {
				t.Fatalf("%s: %d on GPUs %v, want %d on %v", c.p, s, g, c.score, c.gpus)
			}
		})
	}
}
