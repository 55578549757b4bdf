package sim

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// prepare sorts r's runs and builds the Kaplan–Meier (product-limit)
// estimate of the survival function from them: S(t) = Π over finished
// times u ≤ t of (1 − finished at u ÷ at risk at u), where at risk counts
// the runs of at least u (a censored run tied with a finish is at risk).
// O(n log n) once after an Observe, O(1) after.
func (r *runtimes) prepare() {
	if r.sorted {
		return
	}
	slices.Sort(r.d)
	slices.Sort(r.c)
	r.ts, r.s = r.ts[:0], r.s[:0]
	atRisk, s, k := len(r.d)+len(r.c), 1.0, 0
	for i := 0; i < len(r.d); {
		t := r.d[i]
		for ; k < len(r.c) && r.c[k] < t; k++ {
			atRisk--
		}
		deaths := 0
		for ; i < len(r.d) && r.d[i] == t; i++ {
			deaths++
		}
		s *= 1 - float64(deaths)/float64(atRisk)
		atRisk -= deaths
		r.ts, r.s = append(r.ts, t), append(r.s, s)
	}
	r.sorted = true
}

// longer counts the finished runs longer than elapsed and, with
// censored, the censored ones too. r must be prepared. O(log n).
func (r *runtimes) longer(elapsed time.Duration, censored bool) int {
	i, _ := slices.BinarySearch(r.d, elapsed+1)
	n := len(r.d) - i
	if censored {
		j, _ := slices.BinarySearch(r.c, elapsed+1)
		n += len(r.c) - j
	}
	return n
}

// kmQuantile is the q-quantile of the remaining runtime of a run that has
// lasted elapsed, from the Kaplan–Meier estimate conditioned on T >
// elapsed: S(t) ÷ S(elapsed), which is the product over the finished
// times after elapsed alone (the runs at risk then are all longer than
// elapsed). The quantile is the first finished time t with S(t) ÷
// S(elapsed) ≤ 1 − q, less elapsed. When S never falls that low (the
// runs still going are many), tail says what it is: the longest
// observation less elapsed, a lower bound (TailLongest), or the
// estimate continued at its constant hazard (TailExponential). ok is
// false with fewer than minHistory observations longer than elapsed, or
// none of them finished. r must be prepared. O(log n).
func (r *runtimes) kmQuantile(elapsed time.Duration, q float64, tail HistoryTail) (time.Duration, bool) {
	i, _ := slices.BinarySearch(r.d, elapsed+1)
	if i == len(r.d) || r.longer(elapsed, true) < minHistory {
		return 0, false
	}
	a, _ := slices.BinarySearch(r.ts, elapsed+1) // the first finished time after elapsed
	se := 1.0
	if a > 0 {
		se = r.s[a-1]
	}
	target := (1 - q + 1e-9) * se
	b := a + sort.Search(len(r.ts)-a, func(x int) bool { return r.s[a+x] <= target })
	if b < len(r.ts) {
		return r.ts[b] - elapsed, true
	}
	if tail == TailExponential {
		return exponentialTail(r.ts[len(r.ts)-1]-elapsed, r.s[len(r.s)-1]/se, q), true
	}
	return r.c[len(r.c)-1] - elapsed, true
}

// exponentialTail is the q-quantile of a remaining runtime whose
// conditional survival is s at last (0 < s < 1) and falls at a constant
// hazard, −ln(s) ÷ last, from 0 on: last·ln(1 − q) ÷ ln(s). It is past
// last when s > 1 − q, the case it is asked for; at most ten horizons.
// O(1).
func exponentialTail(last time.Duration, s, q float64) time.Duration {
	if s >= 1 || s <= 0 || last <= 0 {
		return last
	}
	x := float64(last) * math.Log(1-q) / math.Log(s)
	return time.Duration(min(x, float64(10*MaxHorizon)))
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
// o.History (its own, so that forecasts sharing o.History do not share
// its lazy sort) with, under KaplanMeier, st's running pods added as censored
// at the time they have run, and, under SpreadStratified and unless
// quantiles are already assigned, the stratified quantiles of the pods
// whose runtimes it estimates (running, then pending, then extra; those
// with a known, declared or deadline runtime are left out; a what-if's
// extra pods form strata of their own, so that the pods of the state
// keep the quantiles they get without them; under SpreadApart so do
// the pending pods). The caller's
// History is not changed. O(n log n) in observations and pods.
func (o *ForecastOptions) historyFor(st *ForecastState, extra []*v1.Pod) *History {
	h := o.History
	if h == nil {
		return nil
	}
	c := *h
	c.samples = make(map[string]*runtimes, len(h.samples))
	for k, r := range h.samples {
		c.samples[k] = &runtimes{d: slices.Clone(r.d), c: slices.Clone(r.c)}
	}
	if h.Method == KaplanMeier {
		for _, rp := range st.Running {
			c.ObserveRunning(rp.Pod, st.Now.Sub(rp.Started))
		}
	}
	if (h.Spread == SpreadStratified || h.Spread == SpreadApart) && h.quantile == nil {
		declared := *o
		declared.History = nil
		var pods, pending, added []*v1.Pod
		add := func(to *[]*v1.Pod, p *v1.Pod, elapsed time.Duration) {
			if _, src := declared.remaining(p, elapsed); src == SourceUnknown {
				*to = append(*to, p)
			}
		}
		for _, rp := range st.Running {
			add(&pods, rp.Pod, st.Now.Sub(rp.Started))
		}
		if h.Spread == SpreadApart {
			for _, p := range st.Pending {
				add(&pending, p, 0)
			}
		} else {
			for _, p := range st.Pending {
				add(&pods, p, 0)
			}
		}
		for _, p := range extra {
			add(&added, p, 0)
		}
		// The seeds: the state's pods (running, or running and pending)
		// Seed, then the what-if's extra pods Seed+1, or, apart, the
		// pending pods Seed+1 and the extra pods Seed+2.
		extraSeed := h.Seed + 1
		c.quantile = c.Stratified(pods, h.Seed).quantile
		if h.Spread == SpreadApart {
			maps.Copy(c.quantile, c.Stratified(pending, h.Seed+1).quantile)
			extraSeed++
		}
		maps.Copy(c.quantile, c.Stratified(added, extraSeed).quantile)
	}
	return &c
}
