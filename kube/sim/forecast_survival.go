package sim

import (
	"maps"
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

// historyFor returns the History a forecast of st uses: a copy of
// o.History with, under KaplanMeier, st's running pods added as censored
// at the time they have run, and, under SpreadStratified and unless
// quantiles are already assigned, the stratified quantiles of the pods
// whose runtimes it estimates (running, then pending, then extra; those
// with a known, declared or deadline runtime are left out; a what-if's
// extra pods form strata of their own, so that the pods of the state
// keep the quantiles they get without them). The caller's
// History is not changed. O(n log n) in observations and pods.
func (o *ForecastOptions) historyFor(st *ForecastState, extra []*v1.Pod) *History {
	h := o.History
	if h == nil {
		return nil
	}
	c := *h
	if h.Method == KaplanMeier && len(st.Running) > 0 {
		c.samples = make(map[string]*runtimes, len(h.samples))
		for k, r := range h.samples {
			c.samples[k] = &runtimes{d: slices.Clone(r.d), c: slices.Clone(r.c)}
		}
		for _, rp := range st.Running {
			c.ObserveRunning(rp.Pod, st.Now.Sub(rp.Started))
		}
	}
	if h.Spread == SpreadStratified && h.quantile == nil {
		declared := *o
		declared.History = nil
		var pods, added []*v1.Pod
		add := func(to *[]*v1.Pod, p *v1.Pod, elapsed time.Duration) {
			if _, src := declared.remaining(p, elapsed); src == SourceUnknown {
				*to = append(*to, p)
			}
		}
		for _, rp := range st.Running {
			add(&pods, rp.Pod, st.Now.Sub(rp.Started))
		}
		for _, p := range st.Pending {
			add(&pods, p, 0)
		}
		for _, p := range extra {
			add(&added, p, 0)
		}
		c.quantile = c.Stratified(pods, h.Seed).quantile
		maps.Copy(c.quantile, c.Stratified(added, h.Seed+1).quantile)
	}
	return &c
}
