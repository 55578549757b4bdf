package gpu

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMemoAnswersAsFGD: on nodes of random content, asked in random order
// and many times over, the memo's Choose and ScoreAt give what FGD
// computes (Choose's GPUs in FGD's order, nil where FGD's are nil and
// empty where they are empty), and ScoreAt gives the other policies'
// scores as they are.
func TestMemoAnswersAsFGD(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	reqs := []Request{
		{CPU: 4000, Mem: 8192, Count: 1, Share: 300},
		{CPU: 8000, Mem: 16384, Count: 1, Share: 500},
		{CPU: 2000, Mem: 4096, Count: 1, Share: Milli},
		{CPU: 16000, Mem: 32768, Count: 2, Share: Milli},
		{CPU: 4000, Mem: 8192, Count: 1, Share: 250, Models: []string{"V100"}},
		{CPU: 4000, Mem: 8192, Count: 1, Share: 250, Models: []string{"T4", "V100"}},
		{CPU: 1000, Mem: 1024},
	}
	w := Typical(reqs, 1)
	m := NewMemo(w)
	shares := []int64{0, 250, 300, 500, 700, Milli}
	var nodes []*Node
	for i := range 40 {
		model := []string{"V100", "T4"}[i%2]
		n := NewNode("n", model, 96000, 393216, []int{1, 2, 4, 8, 16}[i%5]) // 16: computed, not kept
		for g := range n.Free {
			n.Free[g] = shares[rnd.IntN(len(shares))]
		}
		n.CPUFree = int64(rnd.IntN(97)) * 1000
		n.MemFree = int64(rnd.IntN(385)) * 1024
		nodes = append(nodes, n)
	}
	for step := range 4000 {
		n, r := nodes[rnd.IntN(len(nodes))], reqs[rnd.IntN(len(reqs))]
		if !n.Fits(r) {
			continue
		}
		before := n.Clone()
		wantS, wantAt := FGD.Score(n, r, w, nil)
		gotS, gotAt := m.Choose(n, r)
		if gotS != wantS || !slices.Equal(gotAt, wantAt) || (gotAt == nil) != (wantAt == nil) {
			t.Fatalf("step %d: Choose on %v gives %d %v, FGD %d %v", step, n.Free, gotS, gotAt, wantS, wantAt)
		}
		for _, at := range [][]int{n.BestFit(r), anyGPUs(n, r, rnd)} {
			for _, p := range []Policy{FGD, DotProd, GpuPacking, BestFit} {
				if got, want := m.ScoreAt(p, n, r, at, nil), p.ScoreAt(n, r, at, w, nil); got != want {
					t.Fatalf("step %d: ScoreAt %v on %v at %v gives %d, want %d", step, p, n.Free, at, got, want)
				}
			}
		}
		if !slices.Equal(n.Free, before.Free) || n.CPUFree != before.CPUFree || n.MemFree != before.MemFree {
			t.Fatalf("step %d: the memo changed the node", step)
		}
	}
	if len(m.scores) == 0 || len(m.scores) > 2000 {
		t.Fatalf("the memo kept %d scores: want some, and fewer than the questions asked", len(m.scores))
	}
}

// TestMemoKeysTheWholeContent: two nodes that differ in one thing the
// score reads (a GPU's free share, free CPU, the model) are not confused.
func TestMemoKeysTheWholeContent(t *testing.T) {
	r := Request{CPU: 4000, Mem: 8192, Count: 1, Share: 500}
	w := Typical([]Request{r, {CPU: 2000, Mem: 4096, Count: 1, Share: 250, Models: []string{"T4"}}, {CPU: 30000, Mem: 65536, Count: 1, Share: Milli}}, 1)
	base := func() *Node { return NewNode("n", "V100", 32000, 131072, 2) }
	for _, tc := range []struct {
		name   string
		change func(*Node, *Request)
	}{
		{"a GPU's free share", func(n *Node, _ *Request) { n.Free[1] = 600 }},
		{"free CPU", func(n *Node, _ *Request) { n.CPUFree = 6000 }},
		{"the model", func(n *Node, _ *Request) { n.Model = "T4" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemo(w)
			a := base()
			m.Choose(a, r)
			b, rb := base(), r
			tc.change(b, &rb)
			want, _ := FGD.Score(b, rb, w, nil)
			if got, _ := m.Choose(b, rb); got != want {
				t.Fatalf("Choose gives %d, FGD %d: the memo answered for the first node", got, want)
			}
		})
	}
}

// anyGPUs picks r.Count GPUs of n that hold r's share, at random.
func anyGPUs(n *Node, r Request, rnd *rand.Rand) []int {
	var ok []int
	for g, f := range n.Free {
		if f >= r.Share {
			ok = append(ok, g)
		}
	}
	rnd.Shuffle(len(ok), func(i, j int) { ok[i], ok[j] = ok[j], ok[i] })
	at := ok[:r.Count]
	slices.Sort(at)
	return at
}

// TestMemoFreeOutsideTheKey: a node whose Free holds a value the memo's
// key cannot hold as it is (beyond ±32767 thousandths) gets FGD's own
// answer, not the one kept for a node whose values wrap to the same key.
func TestMemoFreeOutsideTheKey(t *testing.T) {
	w := Typical([]Request{{CPU: 4000, Mem: 8192, Count: 1, Share: Milli}, {CPU: 2000, Mem: 4096, Count: 1, Share: 500}}, 1)
	for _, tc := range []struct {
		name  string
		first []int64 // the node asked first, whose answer is kept
		then  []int64 // the node asked next
	}{
		{"a GPU above the key's range", []int64{Milli, Milli}, []int64{1<<16 + Milli, Milli}},
		{"a GPU below the key's range", []int64{Milli, 0}, []int64{Milli - 1<<16, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Request{CPU: 4000, Mem: 8192, Count: 1, Share: Milli}
			m := NewMemo(w)
			a := NewNode("a", "V100", 32000, 131072, len(tc.first))
			copy(a.Free, tc.first)
			m.Choose(a, r)
			b := NewNode("b", "V100", 32000, 131072, len(tc.then))
			copy(b.Free, tc.then)
			wantS, wantAt := FGD.Score(b.Clone(), r, w, nil)
			gotS, gotAt := m.Choose(b, r)
			if gotS != wantS || !slices.Equal(gotAt, wantAt) {
				t.Fatalf("Choose on %v gives %d %v, FGD %d %v", tc.then, gotS, gotAt, wantS, wantAt)
			}
		})
	}
}
