package gpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var (
	share500 = Request{CPU: 1000, Count: 1, Share: 500}
	whole1   = Request{CPU: 1000, Count: 1, Share: Milli}
	whole2   = Request{CPU: 1000, Count: 2, Share: Milli}
	cpuOnly  = Request{CPU: 1000}
)

// node returns a T4 node with the GPUs' free thousandths given.
func node(cpuFree int64, free ...int64) *Node {
	n := NewNode("n", "T4", 64_000, 1<<20, len(free))
	copy(n.Free, free)
	n.CPUFree = cpuFree
	return n
}

func TestFragFor(t *testing.T) {
	n := node(8000, 1000, 300)
	for _, c := range []struct {
		name string
		m    Request
		want int64
	}{
		{"share fits: the GPU with less than the share is fragment", share500, 300},
		{"whole GPU fits: the partly used GPU is fragment", whole1, 300},
		{"two whole GPUs do not fit: all free", whole2, 1300},
		{"no GPU asked: all free", cpuOnly, 1300},
		{"CPU lacking: all free", Request{CPU: 9000, Count: 1, Share: 500}, 1300},
		{"other model: all free", Request{CPU: 1000, Count: 1, Share: 500, Models: []string{"V100"}}, 1300},
		{"model named: as without", Request{CPU: 1000, Count: 1, Share: 500, Models: []string{"P100", "T4"}}, 300},
		{"small share: no fragment", Request{CPU: 1000, Count: 1, Share: 200}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := FragFor(n, c.m); got != c.want {
				t.Fatalf("FragFor = %d, want %d", got, c.want)
			}
		})
	}
	if got := FragFor(node(8000, 0, 0), share500); got != 0 {
		t.Fatalf("a full node's fragmentation is %d, want 0", got)
	}
	if got := FragFor(NewNode("cpu", "", 1000, 1000, 0), share500); got != 0 {
		t.Fatalf("a node without GPUs has fragmentation %d, want 0", got)
	}
}

func TestFragAgainstWorkload(t *testing.T) {
	w := Workload{{share500, 0.5}, {whole1, 0.25}, {cpuOnly, 0.25}}
	// 0.5·300 + 0.25·300 + 0.25·1300
	if got := Frag(node(8000, 1000, 300), w); got != 550 {
		t.Fatalf("Frag = %v, want 550", got)
	}
}

func TestTypical(t *testing.T) {
	a, b, c := share500, whole1, whole2
	var list []Request
	for range 6 {
		list = append(list, a)
	}
	list = append(list, b, c, b, b) // b three times, c once
	for _, tc := range []struct {
		name  string
		share float64
		want  []float64
	}{
		{"90%: the two most popular cover 9 of 10", 0.9, []float64{6.0 / 9, 3.0 / 9}},
		{"95%: all three", 0.95, []float64{0.6, 0.3, 0.1}},
		{"0: the most popular alone", 0, []float64{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Typical(list, tc.share)
			var got []float64
			for _, cl := range w {
				got = append(got, cl.P)
			}
			if !slices.EqualFunc(got, tc.want, func(x, y float64) bool { return math.Abs(x-y) < 1e-12 }) {
				t.Fatalf("popularities %v, want %v", got, tc.want)
			}
			if w[0].Req.Share != 500 {
				t.Fatalf("most popular %+v, want the share", w[0].Req)
			}
		})
	}
	// Memory does not make a kind; the order of the list does not matter.
	m := share500
	m.Mem = 7
	if w := Typical([]Request{share500, m, whole1}, 1); len(w) != 2 || w[0].P != 2.0/3 {
		t.Fatalf("memory split a kind: %+v", w)
	}
}

func TestMeasure(t *testing.T) {
	nodes := []*Node{node(8000, 1000, 300), node(8000, 1000), NewNode("cpu", "", 1000, 1000, 0)}
	s := Measure(nodes, Workload{{share500, 1}})
	if s.Capacity != 3000 || s.Allocated != 700 || s.Frag != 300 {
		t.Fatalf("stats %+v, want capacity 3000, allocated 700, fragmentation 300", s)
	}
	if s.AllocationRate() != 700.0/3000 || s.FragRatio() != 300.0/2300 {
		t.Fatalf("allocation rate %v, fragmentation ratio %v", s.AllocationRate(), s.FragRatio())
	}
	if (Stats{}).AllocationRate() != 0 || (Stats{Capacity: 5, Allocated: 5, Frag: 0}).FragRatio() != 0 {
		t.Fatal("empty or full cluster: want 0")
	}
}

func TestNodeFitsPlaceAndBestFit(t *testing.T) {
	n := node(8000, 1000, 300)
	for _, c := range []struct {
		name string
		r    Request
		want []int
	}{
		{"share: the least free GPU that holds it", Request{Count: 1, Share: 300}, []int{1}},
		{"share too big for the used GPU", Request{Count: 1, Share: 400}, []int{0}},
		{"whole GPU: a fully free one", whole1, []int{0}},
		{"two whole GPUs: only one is free", whole2, nil},
		{"no GPU", cpuOnly, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := n.BestFit(c.r); !slices.Equal(got, c.want) {
				t.Fatalf("BestFit = %v, want %v", got, c.want)
			}
		})
	}
	if n.Fits(whole2) || !n.Fits(whole1) || n.Fits(Request{CPU: 9000}) || n.Fits(Request{Mem: 2 << 20}) {
		t.Fatal("Fits wrong")
	}
	n.Place(share500, []int{0})
	if !slices.Equal(n.Free, []int64{500, 300}) || n.CPUFree != 7000 {
		t.Fatalf("after Place: %v, cpu %d", n.Free, n.CPUFree)
	}
	n.Release(share500, []int{0})
	if !slices.Equal(n.Free, []int64{1000, 300}) || n.CPUFree != 8000 || len(n.kinds) != 0 {
		t.Fatalf("after Release: %v, cpu %d, kinds %v", n.Free, n.CPUFree, n.kinds)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("an over-full GPU did not panic")
		}
	}()
	n.Place(share500, []int{1})
}

func TestRequestValidate(t *testing.T) {
	for _, c := range []struct {
		r    Request
		want string
	}{
		{Request{Count: 2, Share: 500}, "takes them whole"},
		{Request{Count: 1, Share: 1001}, "share from 0 to 1000"},
		{Request{Count: 1}, "both zero, or both set"},
		{Request{CPU: -1}, "negative"},
	} {
		if err := c.r.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.r, err, c.want)
		}
	}
	if err := whole2.Validate(); err != nil {
		t.Error(err)
	}
}

// Each policy's score, computed by hand from its definition, on a node of
// 32 free CPUs and GPUs with 1000, 1000, 500 and 0 free.
func TestPolicyScores(t *testing.T) {
	mk := func() *Node {
		n := NewNode("n", "T4", 64_000, 1<<20, 4)
		n.Place(Request{Count: 1, Share: 500}, []int{2})
		n.Place(Request{CPU: 32_000, Count: 1, Share: 500}, []int{3})
		n.Place(Request{Count: 1, Share: 500}, []int{3})
		return n
	}
	pod := Request{CPU: 8000, Count: 1, Share: 500}
	for _, c := range []struct {
		name  string
		p     Policy
		r     Request
		score int64
		gpus  []int
	}{
		// 100·(1 − ((32000−8000)/128000 + (2500−500)/8000)/2) = 78.125
		{"bestfit", BestFit, pod, 78, []int{2}},
		// 100·(1 − (32000/128000·8000/128000 + 2500/8000·500/8000)/2) = 98.24
		{"dotprod", DotProd, pod, 98, []int{2}},
		// partly used GPU 2 holds it: 100 − 50/10
		{"gpupacking share", GpuPacking, pod, 95, []int{2}},
		// a fully free GPU on a used node: 50 − 1
		{"gpupacking whole", GpuPacking, whole1, 49, []int{0}},
		// only shares on the node: 75 + 25·(8000−2500)/8000 (integer)
		{"gpuclustering same kind", GpuClustering, pod, 92, []int{2}},
		// other kinds only: 0 + 17
		{"gpuclustering other kind", GpuClustering, whole1, 17, []int{0}},
		{"gpuclustering no gpu", GpuClustering, cpuOnly, 0, nil},
		{"gpupacking no gpu", GpuPacking, cpuOnly, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, g := c.p.Score(mk(), c.r, nil, nil)
			if s != c.score || !slices.Equal(g, c.gpus) {
				t.Fatalf("score %d on GPUs %v, want %d on %v", s, g, c.score, c.gpus)
			}
		})
	}
	// An idle node of 8 GPUs: GpuPacking 33 − 8; GpuClustering 25 + 25·(8000 − 8000)/8000.
	idle := NewNode("i", "T4", 64_000, 1<<20, 8)
	if s, _ := GpuPacking.Score(idle, pod, nil, nil); s != 25 {
		t.Errorf("gpupacking on an idle node: %d, want 25", s)
	}
	if s, _ := GpuClustering.Score(idle, pod, nil, nil); s != 25 {
		t.Errorf("gpuclustering on an idle node: %d, want 25", s)
	}
}

// FGD: against a workload of whole GPUs only, a share on an idle GPU
// makes 500 of fragmentation (sigmoid(−0.5) = 0.3775), and a share that
// fills a half-used GPU removes 500 (sigmoid(0.5) = 0.6225).
func TestFGDScore(t *testing.T) {
	w := Workload{{whole1, 1}}
	s, g := FGD.Score(node(8000, 1000, 1000), share500, w, nil)
	if s != 37 || !slices.Equal(g, []int{0}) {
		t.Fatalf("idle node: %d on %v, want 37 on the first GPU", s, g)
	}
	n := node(8000, 1000, 500)
	s, g = FGD.Score(n, share500, w, nil)
	if s != 62 || !slices.Equal(g, []int{1}) {
		t.Fatalf("half-used node: %d on %v, want 62 on the half-used GPU", s, g)
	}
	if !slices.Equal(n.Free, []int64{1000, 500}) {
		t.Fatalf("scoring changed the node: %v", n.Free)
	}
	s, g = FGD.Score(node(8000, 1000, 500), whole1, w, nil)
	if s != 50 || !slices.Equal(g, []int{0}) { // frag 500 before and after
		t.Fatalf("whole GPU: %d on %v, want 50 on GPU 0", s, g)
	}
}

func TestRandomPolicy(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	seen := map[int]bool{}
	for range 200 {
		s, g := Random.Score(node(8000, 1000, 300, 1000), share500, nil, rnd)
		if s < 0 || s > MaxScore || len(g) != 1 || g[0] == 1 {
			t.Fatalf("score %d on %v", s, g)
		}
		seen[g[0]] = true
	}
	if !seen[0] || !seen[2] {
		t.Fatalf("GPUs chosen %v, want both GPUs that hold the share", seen)
	}
	for _, p := range Policies() {
		q, err := ParsePolicy(strings.ToUpper(p.String()))
		if err != nil || q != p {
			t.Fatalf("ParsePolicy(%s) = %v, %v", p, q, err)
		}
	}
	if _, err := ParsePolicy("tetris"); err == nil || !strings.Contains(err.Error(), "known: random, dotprod") {
		t.Fatalf("unknown policy: %v", err)
	}
}

// TestScoreAt: scored on GPUs an allocator chose, FGD and GpuPacking
// rate those GPUs, and equal Score on the GPUs Score would choose. Node:
// GPUs free 1000, 1000, 500, 0.
func TestScoreAt(t *testing.T) {
	n := NewNode("n", "T4", 64_000, 1<<20, 4)
	n.Place(Request{Count: 1, Share: 500}, []int{2})
	n.Place(Request{Count: 1, Share: 1000}, []int{3})
	share := Request{CPU: 1000, Count: 1, Share: 500}
	w := Workload{{Req: Request{Count: 1, Share: 500}, P: 0.5}, {Req: Request{Count: 1, Share: 1000}, P: 0.5}}
	for _, p := range []Policy{FGD, GpuPacking} {
		best, at := p.Score(n, share, w, nil)
		if at[0] != 2 {
			t.Fatalf("%s chooses %v, want GPU 2 (the half-used one)", p, at)
		}
		if got := p.ScoreAt(n, share, at, w, nil); got != best {
			t.Errorf("%s at its own choice: %d, want Score's %d", p, got, best)
		}
		if got := p.ScoreAt(n, share, []int{0}, w, nil); got >= best {
			t.Errorf("%s on a fresh GPU: %d, want below %d", p, got, best)
		}
	}
	if free := n.Free; free[0] != 1000 || free[2] != 500 {
		t.Fatalf("ScoreAt changed the node: %v", free)
	}
}

// TestFragForOnePass: FragFor, which counts the GPUs that hold the share
// in the pass that sums the others, and Frag, which sums the node's free
// capacity once, give what their definitions give (FitsGPUs, then the
// sum of the GPUs with less than the share free; Σ P·FragFor in the
// workload's order), bit for bit, on random nodes and requests.
func TestFragForOnePass(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 27))
	byDefinition := func(n *Node, m Request) int64 {
		free := n.FreeGPU()
		if free == 0 || m.Count == 0 || !n.Accepts(m) || n.CPUFree < m.CPU || !n.FitsGPUs(m) {
			return free
		}
		var frag int64
		for _, f := range n.Free {
			if f < m.Share {
				frag += f
			}
		}
		return frag
	}
	models := []string{"T4", "V100"}
	request := func() Request {
		r := Request{CPU: rnd.Int64N(8) * 1000}
		switch rnd.IntN(3) {
		case 0:
		case 1:
			r.Count, r.Share = 1, 50*(1+rnd.Int64N(19))
		default:
			r.Count, r.Share = 1+rnd.IntN(4), Milli
		}
		if rnd.IntN(4) == 0 {
			r.Models = []string{models[rnd.IntN(2)]}
		}
		return r
	}
	for i := range 2000 {
		n := NewNode("n", models[rnd.IntN(2)], 64_000, 1<<20, rnd.IntN(9))
		for g := range n.Free {
			n.Free[g] = []int64{0, Milli, 50 * rnd.Int64N(21)}[rnd.IntN(3)]
		}
		n.CPUFree = rnd.Int64N(8) * 1000
		var w Workload
		for range 1 + rnd.IntN(6) {
			w = append(w, Class{Req: request(), P: rnd.Float64()})
		}
		var want float64
		if n.FreeGPU() > 0 {
			for _, c := range w {
				want += c.P * float64(byDefinition(n, c.Req))
			}
		}
		if got := Frag(n, w); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("case %d: Frag(%v) = %v, by its definition %v", i, n.Free, got, want)
		}
		for _, c := range w {
			if got, want := FragFor(n, c.Req), byDefinition(n, c.Req); got != want {
				t.Fatalf("case %d: FragFor(%v, %+v) = %d, by its definition %d", i, n.Free, c.Req, got, want)
			}
		}
	}
}

// TestFGDScoreIsItsChoiceScoreAt: FGD's score of a share (Score, and
// Memo.Choose) is its score of the share on the GPU it chooses
// (ScoreAt, and Memo.ScoreAt), bit for bit, on random nodes and
// workloads: GPUDevices under DRA reads the score of FGD's choice from
// Choose alone.
func TestFGDScoreIsItsChoiceScoreAt(t *testing.T) {
	rnd := rand.New(rand.NewPCG(27, 7))
	shares := []int64{100, 250, 300, 500, 700, 900}
	for i := range 2000 {
		n := NewNode("n", "T4", 64_000, 1<<20, 1+rnd.IntN(8))
		for g := range n.Free {
			n.Free[g] = 50 * rnd.Int64N(21)
		}
		n.CPUFree = rnd.Int64N(64) * 1000
		var w Workload
		for range 1 + rnd.IntN(5) {
			c := Class{Req: Request{CPU: rnd.Int64N(8) * 1000, Count: 1, Share: shares[rnd.IntN(len(shares))]}, P: rnd.Float64()}
			if rnd.IntN(3) == 0 {
				c.Req.Share, c.Req.Count = Milli, 1+rnd.IntN(2)
			}
			w = append(w, c)
		}
		r := Request{CPU: rnd.Int64N(4) * 1000, Count: 1, Share: shares[rnd.IntN(len(shares))]}
		s, at := FGD.Score(n, r, w, nil)
		if at == nil {
			continue
		}
		if got := FGD.ScoreAt(n, r, at, w, nil); got != s {
			t.Fatalf("case %d: FGD's score of %+v on %v is %d, its score at its choice %v %d", i, r, n.Free, s, at, got)
		}
		m := NewMemo(w)
		ms, mat := m.Choose(n, r)
		if got := m.ScoreAt(FGD, n, r, mat, nil); got != ms || ms != s {
			t.Fatalf("case %d: the memo's choice scores %d, its score at the choice %d, FGD's %d", i, ms, got, s)
		}
	}
}
