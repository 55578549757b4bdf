package gpu

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestChooseIsTheBestScore: the experiment's choice (choose, with its
// cache of scores across placements) is a node of the highest
// Policy.Score among those that fit, with the GPUs Score names there, and
// none when no node fits. kube/sim's TestDeviceModelChoosesAsDRA compares
// that argmax with DRA's allocation; this ties it to the experiment.
// Random clusters of 1-4 nodes of 1-8 GPUs of two models, filled by 40
// random requests each, under the five deterministic policies.
func TestChooseIsTheBestScore(t *testing.T) {
	for _, p := range Policies()[1:] {
		t.Run(p.String(), func(t *testing.T) {
			for seed := range uint64(60) {
				checkChoose(t, p, seed)
			}
		})
	}
}

func checkChoose(t *testing.T, p Policy, seed uint64) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, 0xc0))
	models := []string{"T4", "V100"}
	var nodes []*Node
	for i := range 1 + rnd.IntN(4) {
		nodes = append(nodes, NewNode(string(rune('a'+i)), models[rnd.IntN(2)], 32_000, 1<<18, 1+rnd.IntN(8)))
	}
	var reqs []Request
	for range 40 {
		r := Request{CPU: 1000 * rnd.Int64N(8), Mem: 1024, Count: 1, Share: 1 + rnd.Int64N(Milli-1)}
		if rnd.IntN(3) == 0 {
			r.Count, r.Share = 1+rnd.IntN(3), Milli
		}
		if rnd.IntN(2) == 0 {
			r.Models = []string{models[rnd.IntN(2)]}
		}
		reqs = append(reqs, r)
	}
	w := Typical(reqs, TypicalShare)
	c := Config{Policy: p}
	cl := newClasses(reqs)
	cache := newScoreCache(len(nodes), len(cl.reqs))
	pick := rand.New(rand.NewPCG(seed, 1))
	for i, r := range reqs {
		best, top, gpus := int64(-1), []int(nil), map[int][]int{}
		for j, n := range nodes {
			if !n.Fits(r) {
				continue
			}
			s, g := p.Score(n, r, w, nil)
			gpus[j] = g
			switch {
			case s > best:
				best, top = s, []int{j}
			case s == best:
				top = append(top, j)
			}
		}
		got, at := c.choose(nodes, r, cl.ids[i], w, cache, pick, nil)
		switch {
		case got < 0 && top != nil:
			t.Fatalf("seed %d, request %d %+v: chose no node; nodes %v score best", seed, i, r, top)
		case got < 0:
			continue
		case !slices.Contains(top, got) || !slices.Equal(at, gpus[got]):
			t.Fatalf("seed %d, request %d %+v: chose node %d GPUs %v; best nodes %v, GPUs there %v", seed, i, r, got, at, top, gpus)
		}
		nodes[got].Place(r, at)
		cache.changed(got)
	}
}
