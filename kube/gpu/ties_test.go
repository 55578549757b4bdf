package gpu

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestChooseTiesByHand: three idle nodes of two GPUs score 31 each under
// GpuPacking for a share of 500 (an idle node: 33 − its 2 GPUs). With a
// rank, the node of the lowest rank among the highest scores is chosen; a
// node of a higher score wins whatever its rank: a GPU with 600 free on
// node 2 makes it a node in use where the share fits on a used GPU,
// 100 − 60/10 = 94.
func TestChooseTiesByHand(t *testing.T) {
	idle := func() []*Node {
		return []*Node{NewNode("a", "T4", 64_000, 1<<20, 2), NewNode("b", "T4", 64_000, 1<<20, 2), NewNode("c", "T4", 64_000, 1<<20, 2)}
	}
	used := idle()
	used[2].Place(Request{Count: 1, Share: 400}, []int{1})
	for _, tc := range []struct {
		name     string
		nodes    []*Node
		rank     []int
		want     int
		wantGPUs []int
	}{
		{"equal scores: the lowest rank", idle(), []int{2, 0, 1}, 1, []int{0}},
		{"equal scores, another order", idle(), []int{0, 1, 2}, 0, []int{0}},
		{"a higher score wins over rank", used, []int{0, 1, 2}, 2, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Policy: GpuPacking}
			cl := newClasses([]Request{share500})
			cache := newScoreCache(len(tc.nodes), len(cl.reqs))
			got, gpus := c.choose(tc.nodes, share500, 0, nil, cache, rand.New(rand.NewPCG(1, 2)), tc.rank)
			if got != tc.want || !reflect.DeepEqual(gpus, tc.wantGPUs) {
				t.Fatalf("chose node %d, GPUs %v; want %d, %v", got, gpus, tc.want, tc.wantGPUs)
			}
		})
	}
}

// TestChooseRandomTiesUniform: without a rank, three nodes of equal score
// are chosen about equally often (3,000 choices: 1,000 each expected, the
// standard deviation about 26).
func TestChooseRandomTiesUniform(t *testing.T) {
	nodes := []*Node{NewNode("a", "T4", 64_000, 1<<20, 2), NewNode("b", "T4", 64_000, 1<<20, 2), NewNode("c", "T4", 64_000, 1<<20, 2)}
	c := Config{Policy: GpuPacking}
	cache := newScoreCache(len(nodes), 1)
	pick := rand.New(rand.NewPCG(7, 8))
	counts := make([]int, len(nodes))
	for range 3000 {
		got, _ := c.choose(nodes, share500, 0, nil, cache, pick, nil)
		counts[got]++
	}
	for i, n := range counts {
		if n < 850 || n > 1150 {
			t.Fatalf("node %d chosen %d times of 3000 (counts %v), want about 1000", i, n, counts)
		}
	}
}

// TestTieOrder: the order is a permutation, the same for a seed, and
// another for other seeds.
func TestTieOrder(t *testing.T) {
	a := tieOrder(5, 10)
	if !reflect.DeepEqual(a, tieOrder(5, 10)) {
		t.Fatal("two orders for one seed")
	}
	sorted := slices.Sorted(slices.Values(a))
	for i, v := range sorted {
		if v != i {
			t.Fatalf("order %v is not a permutation of 0..9", a)
		}
	}
	differ := false
	for s := uint64(6); s < 10; s++ {
		differ = differ || !reflect.DeepEqual(a, tieOrder(s, 10))
	}
	if !differ {
		t.Fatal("seeds 5 to 9 give one order")
	}
}

// TestRunTiesOrderByHand: three nodes of one GPU and shares of 250 with
// no CPU. DotProd scores every node 99 whatever it holds
// (100·(1 − free/8000 · 250/8000 / 2), at most 0.2 below 100), so every
// choice is a tie. With TiesOrder the shares fill the first node in the
// run's order, then the second: at 25% of demand (three shares) one GPU
// has 250 free, which a share of 500 (the workload) cannot use; at 50%
// and 75% the partly used GPU has 500 or 750 free, no fragment. Whichever
// node comes first, every seed gives these figures; with TiesRandom some
// seed spreads the first three shares, leaving no fragment at 25%.
func TestRunTiesOrderByHand(t *testing.T) {
	share250 := Request{Count: 1, Share: 250}
	w := Workload{{Req: Request{Count: 1, Share: 500}, P: 1}}
	config := func(ties Ties, seed uint64) Config {
		return Config{Nodes: []*Node{NewNode("a", "T4", 8000, 1<<20, 1), NewNode("b", "T4", 8000, 1<<20, 1), NewNode("c", "T4", 8000, 1<<20, 1)},
			Pods: []Request{share250}, Workload: w, Policy: DotProd, Demand: 1, Seed: seed, Points: []float64{0.25, 0.5, 0.75}, Ties: ties}
	}
	wantFrag := []float64{250, 0, 0}
	spread := false
	for seed := uint64(1); seed <= 8; seed++ {
		r, err := Run(config(TiesOrder, seed))
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range r.Points {
			if p.Frag != wantFrag[i] {
				t.Fatalf("seed %d, ties order: point %v has fragmentation %v, want %v", seed, p.Demand, p.Frag, wantFrag[i])
			}
		}
		r, err = Run(config(TiesRandom, seed))
		if err != nil {
			t.Fatal(err)
		}
		spread = spread || r.Points[0].Frag != 250
	}
	if !spread {
		t.Fatal("ties random: every seed of 1 to 8 packed the first three shares on one node")
	}
}

// TestRandomPolicyIgnoresTies: Random's choice is uniform in both modes
// (the artifact's Random has no ties), so its runs are the same.
func TestRandomPolicyIgnoresTies(t *testing.T) {
	nodes := []*Node{NewNode("a", "T4", 64_000, 1<<20, 2), NewNode("b", "V100", 32_000, 1<<20, 4), NewNode("c", "", 64_000, 1<<20, 0)}
	pods := []Request{share500, whole1, cpuOnly}
	r1, err := Run(Config{Nodes: nodes, Pods: pods, Policy: Random, Demand: 1.3, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Run(Config{Nodes: nodes, Pods: pods, Policy: Random, Demand: 1.3, Seed: 4, Ties: TiesOrder})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r1, r2) {
		t.Fatalf("Random with ties order %+v, with ties random %+v", r2, r1)
	}
}

// TestParseTies reads both names and refuses others.
func TestParseTies(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Ties
	}{{"random", TiesRandom}, {"order", TiesOrder}} {
		got, err := ParseTies(tc.name)
		if err != nil || got != tc.want || got.String() != tc.name {
			t.Fatalf("ParseTies(%q) = %v, %v", tc.name, got, err)
		}
	}
	if _, err := ParseTies("first"); err == nil || err.Error() != `"first" is not random or order` {
		t.Fatalf("ParseTies(first): %v", err)
	}
}
