package sim

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// evalSplit is the index in evalMethods of the first row that splits
// the history's error into parts (EvalOptions.SplitRows): forecasts that
// take some of the runtimes from the trace and the rest from the
// history by the three labels, warm or cold as the others.
const evalSplit = 14

// splitMethods are the rows measured beside the split rows: the true
// runtimes, the history by the three labels, and rank ÷ rate.
var splitMethods = []int{0, 5, 11}

// splitWaits forecasts st with each split row, in evalMethods' order
// from evalSplit, and returns each row's waits and nodes. h is the
// history by the three labels (its Seed set); known is the trace's true
// runtime of a pod. The rows:
//
//   - running known: the running pods end at their true ends, the
//     pending pods run for the history's estimates;
//   - pending known: the other way round;
//   - shuffled by class: every pod gets the true remaining runtime of
//     another of its class (the finest of h's classes; the running
//     pods among themselves, the pending among themselves), in an
//     order drawn from h.Seed: each class's remaining runtimes exactly
//     right, which pod has which not;
//   - shuffled by class and node: the same among the running pods of a
//     class on one node, so that each node's ends are right and only
//     which of its pods (which GPUs) frees is not;
//   - true order: the history's stratified quantiles, (i+0.5)/n within
//     a class, given in the order of the pods' true remaining runtimes
//     rather than a random one: the history's times, the true order;
//   - shuffled ensemble: the median wait of o.Ensemble forecasts, each
//     shuffled by class with its own seed (from h.Seed): the ensemble
//     method with each class's remaining runtimes exactly right;
//   - the percentiles of splitPercentiles of the waits of the history's
//     ensemble (runEnsemble), one row each;
//   - shuffled by class and age, one forecast and the median of an
//     ensemble (shuffledBy): each class's remaining runtimes right for
//     the running pods of about the same age.
//
// With o.PercentileRows only the percentiles are measured, with
// o.AgeRows only the rows by class and age (the others are nil).
// O(rows) forecasts.
func splitWaits(sc *Scenario, st *ForecastState, o EvalOptions, h *History, known func(*v1.Pod) (time.Duration, bool)) (preds [][]float64, nodes [][]string, err error) {
	x := newTruth(st, h, known)
	base, err := NewForecastBase(st)
	if err != nil {
		return nil, nil, err
	}
	if o.ApartRows {
		for range evalSplitApart - evalSplit {
			preds, nodes = append(preds, nil), append(nodes, nil)
		}
		w, n, err := forecastWaitsNodes(sc, st, ForecastOptions{Horizon: o.Horizon, Base: base, History: stratifiedApart(h)})
		if err != nil {
			return nil, nil, err
		}
		return append(preds, w), append(nodes, n), nil
	}
	if o.AgeRows {
		for range evalSplitAge - evalSplit {
			preds, nodes = append(preds, nil), append(nodes, nil)
		}
		w, n, err := forecastWaitsNodes(sc, st, ForecastOptions{Horizon: o.Horizon, Base: base, Known: x.shuffledBy(false, true, h.Seed)})
		if err != nil {
			return nil, nil, err
		}
		med, err := shuffledEnsemble(sc, st, o, base, func(seed uint64) func(*v1.Pod) (time.Duration, bool) { return x.shuffledBy(false, true, seed) }, h.Seed)
		if err != nil {
			return nil, nil, err
		}
		return append(preds, w, med), append(nodes, n, nil), nil
	}
	if o.PercentileRows {
		for range evalSplitPercentiles - evalSplit {
			preds, nodes = append(preds, nil), append(nodes, nil)
		}
	} else if preds, nodes, err = x.waits(sc, st, o, h, base); err != nil {
		return nil, nil, err
	}
	// The ensemble of the history (runEnsemble, o.Ensemble runs), each
	// percentile of splitPercentiles of its waits a row.
	e, err := runEnsemble(sc, st, ForecastOptions{Horizon: o.Horizon, Base: base, History: h}, o.Ensemble)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range splitPercentiles {
		preds, nodes = append(preds, percentileWaits(e.waits, p)), append(nodes, nil)
	}
	return preds, nodes, nil
}

// percentileWaits is each pod's p-th percentile of its waits by nearest
// rank (nearestRank), in seconds, +Inf where that run does not start it.
func percentileWaits(waits [][]time.Duration, p int) []float64 {
	out := make([]float64, len(waits))
	for i, ws := range waits {
		s := slices.Clone(ws)
		slices.Sort(s)
		out[i] = math.Inf(1)
		if w, ok := nearestRank(s, p); ok {
			out[i] = w.Seconds()
		}
	}
	return out
}

// evalSplitPercentiles is the index in evalMethods of the first row of
// splitPercentiles.
const evalSplitPercentiles = evalSplit + 6

// evalSplitApart is the index in evalMethods of the row whose history
// stratifies the running and the pending pods apart
// (EvalOptions.ApartRows), after the rows by class and age.
const evalSplitApart = evalSplitAge + 2

// evalSplitAge is the index in evalMethods of the rows shuffled by
// class and age (EvalOptions.AgeRows), after splitPercentiles'.
const evalSplitAge = evalSplitPercentiles + 7

// splitPercentiles are the percentiles of the history's ensemble that
// the split rows measure, each a row: which to take as the forecast is
// chosen on one split of the trace and reported on the other.
var splitPercentiles = []int{20, 30, 40, 50, 60, 70, 80}

// truth is what the split rows know of a state's pods that a forecast
// does not: their true runtimes (known), with the classes of h.
type truth struct {
	st      *ForecastState
	h       *History
	known   func(*v1.Pod) (time.Duration, bool)
	running map[types.UID]bool
	elapsed map[types.UID]time.Duration // of the running pods at st.Now
}

func newTruth(st *ForecastState, h *History, known func(*v1.Pod) (time.Duration, bool)) *truth {
	x := &truth{st: st, h: h, known: known, running: map[types.UID]bool{}, elapsed: map[types.UID]time.Duration{}}
	for _, r := range st.Running {
		x.running[r.Pod.UID] = true
		x.elapsed[r.Pod.UID] = st.Now.Sub(r.Started)
	}
	return x
}

// only gives the true runtimes of the running pods (running) or of the
// pending ones, and none of the others.
func (x *truth) only(running bool) func(*v1.Pod) (time.Duration, bool) {
	return func(p *v1.Pod) (time.Duration, bool) {
		if x.running[p.UID] != running {
			return 0, false
		}
		return x.known(p)
	}
}

// remaining is a pod's true remaining runtime at the state's instant
// (its whole runtime if pending).
func (x *truth) remaining(p *v1.Pod) (time.Duration, bool) {
	d, ok := x.known(p)
	return max(d-x.elapsed[p.UID], 0), ok
}

// shuffled gives every pod with a true runtime the true remaining
// runtime of a pod of its group, the groups' pods permuted from seed:
// a group is the running pods of one of h's finest classes (on one
// node, if byNode), or the pending pods of one class. A running pod's
// whole runtime is then its elapsed time plus the remaining runtime it
// got. O(pods log pods).
func (x *truth) shuffled(byNode bool, seed uint64) func(*v1.Pod) (time.Duration, bool) {
	return x.shuffledBy(byNode, false, seed)
}

// shuffledBy is shuffled, with byAge grouping the running pods of a
// class also by their elapsed time's power of two in seconds (those
// that have run 1 to 2 minutes, 2 to 4 minutes, …): each class's
// remaining runtimes right for the pods of about the same age.
func (x *truth) shuffledBy(byNode, byAge bool, seed uint64) func(*v1.Pod) (time.Duration, bool) {
	groups := map[string][]*v1.Pod{}
	node := map[types.UID]string{}
	for _, r := range x.st.Running {
		node[r.Pod.UID] = r.Pod.Spec.NodeName
	}
	for _, p := range forecastPods(x.st) {
		if _, ok := x.known(p); !ok {
			continue
		}
		k := "pending " + x.h.Kind(p)
		if x.running[p.UID] {
			k = "running " + x.h.Kind(p)
			if byNode {
				k += " on " + node[p.UID]
			}
			if byAge {
				k += fmt.Sprintf(" aged 2^%d s", bits.Len64(uint64(x.elapsed[p.UID]/time.Second)))
			}
		}
		groups[k] = append(groups[k], p)
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	whole := map[types.UID]time.Duration{}
	for _, k := range sortedKeys(groups) {
		ps := groups[k]
		for i, j := range rng.Perm(len(ps)) {
			left, _ := x.remaining(ps[j])
			whole[ps[i].UID] = x.elapsed[ps[i].UID] + left
		}
	}
	return func(p *v1.Pod) (time.Duration, bool) {
		d, ok := whole[p.UID]
		return d, ok
	}
}

// trueOrder gives the pods of each of h's finest classes (running and
// pending together, as History.Stratified groups them) the quantiles
// (i+0.5)/n in the order of their true remaining runtimes, shortest
// first. O(pods log pods).
func (x *truth) trueOrder() map[types.UID]float64 {
	groups := map[string][]*v1.Pod{}
	for _, p := range forecastPods(x.st) {
		if _, ok := x.known(p); ok {
			groups[x.h.Kind(p)] = append(groups[x.h.Kind(p)], p)
		}
	}
	q := map[types.UID]float64{}
	for _, k := range sortedKeys(groups) {
		ps := groups[k]
		slices.SortStableFunc(ps, func(a, b *v1.Pod) int {
			da, _ := x.remaining(a)
			db, _ := x.remaining(b)
			return cmp.Compare(da, db)
		})
		for i, p := range ps {
			q[p.UID] = (float64(i) + 0.5) / float64(len(ps))
		}
	}
	return q
}

// waits forecasts st with each split row that takes true runtimes, in
// evalMethods' order from evalSplit (splitWaits).
func (x *truth) waits(sc *Scenario, st *ForecastState, o EvalOptions, h *History, base *ForecastBase) (preds [][]float64, nodes [][]string, err error) {
	for _, fo := range []ForecastOptions{
		{Known: x.only(true), History: h},
		{Known: x.only(false), History: h},
		{Known: x.shuffled(false, h.Seed)},
		{Known: x.shuffled(true, h.Seed)},
		{History: h.withQuantiles(x.trueOrder())},
	} {
		fo.Horizon = o.Horizon
		w, n, err := forecastWaitsNodes(sc, st, fo)
		if err != nil {
			return nil, nil, err
		}
		preds, nodes = append(preds, w), append(nodes, n)
	}
	// The median of o.Ensemble forecasts, each shuffled by class with
	// its own seed: what an ensemble could give with each class's
	// remaining runtimes exactly right.
	med, err := shuffledEnsemble(sc, st, o, base, func(seed uint64) func(*v1.Pod) (time.Duration, bool) { return x.shuffled(false, seed) }, h.Seed)
	if err != nil {
		return nil, nil, err
	}
	return append(preds, med), append(nodes, nil), nil
}

// shuffledEnsemble is each pending pod's median wait, in seconds, over
// o.Ensemble forecasts, run k taking its runtimes from known(seed+k).
func shuffledEnsemble(sc *Scenario, st *ForecastState, o EvalOptions, base *ForecastBase, known func(seed uint64) func(*v1.Pod) (time.Duration, bool), seed uint64) ([]float64, error) {
	waits := make([][]time.Duration, len(st.Pending))
	for k := range o.Ensemble {
		fc, err := RunForecast(sc, st, ForecastOptions{Horizon: o.Horizon, Base: base, Known: known(seed + uint64(k))})
		if err != nil {
			return nil, err
		}
		for i, pf := range fc.Pods {
			w := neverStarts
			if pf.Starts {
				w = pf.Wait
			}
			waits[i] = append(waits[i], w)
		}
	}
	return percentileWaits(waits, 50), nil
}

// stratifiedApart is a copy of h whose forecasts stratify the running
// and the pending pods apart (SpreadApart).
func stratifiedApart(h *History) *History {
	c := *h
	c.Spread = SpreadApart
	return &c
}
