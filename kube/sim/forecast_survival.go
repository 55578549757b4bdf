package sim

import (
	"math/rand/v2"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// kmQuantile is the q-quantile of the remaining runtime of a run that has
// lasted elapsed, from the Kaplan–Meier product-limit estimate of the
// runtime distribution given finished runtimes d and censored ones c
// (both sorted): S(t) = Π over finished times u ≤ t of (1 − deaths(u) ÷
// at risk(u)), where at risk(u) counts the observations of at least u
// (a censored run tied with a finish counts as at risk), taken over the
// observations longer than elapsed only, which conditions on the run
// having lasted elapsed. The quantile is the first finished time t with
// S(t) ≤ 1 − q, less elapsed. When S never falls that low (the last
// observation is censored), it is the longest observation less elapsed:
// a lower bound. ok is false with fewer than minHistory observations
// longer than elapsed, or none of them finished. O(n).
func kmQuantile(d, c []time.Duration, elapsed time.Duration, q float64) (time.Duration, bool) {
	i, _ := slices.BinarySearch(d, elapsed+1)
	j, _ := slices.BinarySearch(c, elapsed+1)
	d, c = d[i:], c[j:]
	if len(d) == 0 || len(d)+len(c) < minHistory {
		return 0, false
	}
	atRisk, s, k := len(d)+len(c), 1.0, 0
	for i := 0; i < len(d); {
		t := d[i]
		for ; k < len(c) && c[k] < t; k++ {
			atRisk--
		}
		deaths := 0
		for ; i < len(d) && d[i] == t; i++ {
			deaths++
		}
		s *= 1 - float64(deaths)/float64(atRisk)
		atRisk -= deaths
		if s <= 1-q+1e-9 {
			return t - elapsed, true
		}
	}
	return c[len(c)-1] - elapsed, true
}

// Stratified returns a copy of h (sharing its observations) that gives
// the pods of one kind distinct quantiles of their conditional runtime
// distributions, (i+0.5)/n for i < n in an order drawn from seed, so
// that their ends together spread over the distribution instead of all
// falling at its median. Pods not listed keep the median. O(n log n).
func (h *History) Stratified(pods []*v1.Pod, seed uint64) *History {
	byKind := map[string][]*v1.Pod{}
	for _, p := range pods {
		k := h.Kind(p)
		byKind[k] = append(byKind[k], p)
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	q := make(map[types.UID]float64, len(pods))
	for _, k := range sortedKeys(byKind) {
		ps := byKind[k]
		for i, r := range rng.Perm(len(ps)) {
			q[ps[i].UID] = (float64(r) + 0.5) / float64(len(ps))
		}
	}
	return h.withQuantiles(q)
}

// Sampled returns a copy of h (sharing its observations) that gives each
// listed pod a quantile drawn uniformly from seed: one Monte Carlo draw
// of every runtime from its conditional distribution. O(n).
func (h *History) Sampled(pods []*v1.Pod, seed uint64) *History {
	rng := rand.New(rand.NewPCG(seed, 1))
	q := make(map[types.UID]float64, len(pods))
	for _, p := range pods {
		q[p.UID] = rng.Float64()
	}
	return h.withQuantiles(q)
}

func (h *History) withQuantiles(q map[types.UID]float64) *History {
	c := *h
	c.quantile = q
	return &c
}
