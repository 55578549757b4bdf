package sim

import (
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
)

// evalMonteCarlo is the index of the Monte Carlo method in evalMethods.
const evalMonteCarlo = 9

// forecastPods lists the running pods, then the pending ones: those whose
// runtimes a forecast estimates.
func forecastPods(st *ForecastState) []*v1.Pod {
	pods := make([]*v1.Pod, 0, len(st.Running)+len(st.Pending))
	for _, rp := range st.Running {
		pods = append(pods, rp.Pod)
	}
	return append(pods, st.Pending...)
}

// monteCarloWaits is the Monte Carlo method: an ensemble of
// o.MonteCarlo runs (runEnsemble) under h with seeds o.Seed to
// o.Seed+o.MonteCarlo−1, giving each pending pod's median predicted
// wait over the runs and its range (ensembleWaits; of up to 9 runs,
// the lowest to the highest). O(K) forecasts.
func monteCarloWaits(sc *Scenario, st *ForecastState, h *History, o EvalOptions) ([]float64, [][2]float64, error) {
	h.Seed = o.Seed
	return ensembleWaits(sc, st, ForecastOptions{Horizon: o.Horizon, History: h}, o.MonteCarlo)
}

// Coverage returns, for a method that gives a range, the share of the
// pods that waited at least a minute whose actual wait lies in it, and
// the median width of the range as a fraction of the actual wait; ok is
// false for a method without ranges.
func (m *EvalMethod) Coverage() (inside, width float64, ok bool) {
	if len(m.ranges) == 0 {
		return 0, 0, false
	}
	n, in := 0, 0
	var widths []float64
	for i, pa := range m.pairs {
		actual := pa[1]
		if actual < 60 {
			continue
		}
		n++
		lo, hi := m.ranges[i][0], m.ranges[i][1]
		if lo <= actual && actual <= hi {
			in++
		}
		widths = append(widths, (hi-lo)/actual)
	}
	if n == 0 {
		return math.NaN(), math.NaN(), true
	}
	return float64(in) / float64(n), median(widths), true
}

// evalEnsemble is the index in evalMethods of the first ensemble method
// (the three labels; the next is the same with the exponential tail).
const evalEnsemble = 12

// ensembleWaits runs runEnsemble and returns each pending pod's median
// wait and its 10th to 90th percentile, in seconds (+Inf where the
// percentile's run does not start it).
func ensembleWaits(sc *Scenario, st *ForecastState, fo ForecastOptions, runs int) ([]float64, [][2]float64, error) {
	e, err := runEnsemble(sc, st, fo, runs)
	if err != nil {
		return nil, nil, err
	}
	secs := func(starts bool, d time.Duration) float64 {
		if !starts {
			return math.Inf(1)
		}
		return d.Seconds()
	}
	med := make([]float64, len(e.Pods))
	ranges := make([][2]float64, len(e.Pods))
	for i, ep := range e.Pods {
		med[i] = secs(ep.Starts, ep.Wait)
		ranges[i] = [2]float64{secs(ep.LowStarts, ep.Low), secs(ep.HighStarts, ep.High)}
	}
	return med, ranges, nil
}

// ensembleNominal is the probability that a further run's wait falls
// in an ensemble's range of k runs, from its ⌈k/10⌉-th to its
// ⌈9k/10⌉-th smallest wait (nearestRank's 10th and 90th percentiles):
// (high rank − low rank) ÷ (k + 1). 80% for 9 runs.
func ensembleNominal(k int) float64 {
	lo, hi := max((10*k+99)/100, 1), max((90*k+99)/100, 1)
	return float64(hi-lo) / float64(k+1)
}
