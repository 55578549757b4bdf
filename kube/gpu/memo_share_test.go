package gpu

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMemoShareGPUAsFGD: ShareGPU, which keeps FGD's choice of a
// share's GPU by the node's model, its GPUs' use and the levels of its
// free CPU before and after the share (leaving out memory and the
// node's and pod's other figures), gives the GPU FGD chooses on every
// node, asked in random order many times over: nodes whose free CPU is
// just under, at and just over the classes' CPU requests (where a level
// changes), of every memory, against shares whose pods' CPU crosses
// them. It fails if the key leaves out the level after the share, or
// the model.
func TestMemoShareGPUAsFGD(t *testing.T) {
	reqs := []Request{
		{CPU: 4000, Mem: 8192, Count: 1, Share: 300},
		{CPU: 8000, Mem: 16384, Count: 1, Share: 500},
		{CPU: 2000, Mem: 4096, Count: 1, Share: Milli},
		{CPU: 16000, Mem: 32768, Count: 2, Share: Milli},
		{CPU: 12000, Mem: 8192, Count: 1, Share: 250, Models: []string{"V100"}},
		{CPU: 6000, Mem: 8192, Count: 1, Share: 700, Models: []string{"T4", "V100"}},
		{CPU: 1000, Mem: 1024},
	}
	cases := []struct {
		name  string
		share []int64 // the shares asked
		cpu   []int64 // the pods' CPU
	}{
		{name: "shares of the workload", share: []int64{250, 300, 500, 700}, cpu: []int64{0, 2000, 4000, 8000}},
		{name: "pods whose CPU crosses a level", share: []int64{100, 300, 600}, cpu: []int64{1, 1999, 2001, 3999, 4001, 12000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(3, 4))
			m := NewMemo(Typical(reqs, 1))
			frees := []int64{0, 100, 250, 300, 500, 700, 750, Milli}
			var cpus []int64
			for _, c := range []int64{1000, 2000, 4000, 6000, 8000, 12000, 16000} {
				cpus = append(cpus, c-1, c, c+1)
			}
			var nodes []*Node
			for i := range 400 {
				model := []string{"V100", "T4"}[i%2]
				n := NewNode("n", model, 96000, 393216, []int{1, 2, 4, 8, 16}[i%5]) // 16: not kept
				for g := range n.Free {
					n.Free[g] = frees[rnd.IntN(len(frees))]
				}
				n.CPUFree = cpus[rnd.IntN(len(cpus))] + int64(rnd.IntN(3))*16000
				n.MemFree = int64(rnd.IntN(385)) * 1024
				nodes = append(nodes, n)
			}
			for step := range 20000 {
				n := nodes[rnd.IntN(len(nodes))]
				r := Request{CPU: tc.cpu[rnd.IntN(len(tc.cpu))], Mem: int64(rnd.IntN(64)) * 1024, Count: 1,
					Share: tc.share[rnd.IntN(len(tc.share))]}
				if rnd.IntN(4) == 0 {
					r.Models = []string{"V100"}
				}
				want := -1
				score, at := FGD.Score(n.Clone(), r, m.w, nil)
				if len(at) == 1 {
					want = at[0]
				}
				if got := m.ShareGPU(n, r); got != want {
					t.Fatalf("step %d: ShareGPU on %s %v (CPU free %d) for %+v = %d, FGD chooses %d", step, n.Model, n.Free, n.CPUFree, r, got, want)
				}
				// What ShareGPU kept for Choose is FGD's score too.
				if got, gotAt := m.Choose(n, r); got != score || !slices.Equal(gotAt, at) {
					t.Fatalf("step %d: Choose after ShareGPU on %s %v (CPU free %d) for %+v = %d %v, FGD gives %d %v", step, n.Model, n.Free, n.CPUFree, r, got, gotAt, score, at)
				}
			}
		})
	}
}
