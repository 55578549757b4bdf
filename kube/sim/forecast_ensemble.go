package sim

import (
	"fmt"
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// maxEnsembleRuns is the most runs an ensemble makes: each is a whole
// forecast, so an ensemble costs its runs times one.
const maxEnsembleRuns = 100

// neverStarts stands for the wait of a run in which the pod does not
// start within the horizon: it sorts after every real wait.
const neverStarts = time.Duration(math.MaxInt64)

// ensemble is the forecast of one state under several draws of the
// runtimes its history estimates (runEnsemble). It is a method of the
// evaluation (Eval) alone: measured, it did not bring the device-model
// replay near the goals (docs/forecast.md, "An ensemble of draws").
type ensemble struct {
	At      time.Time     `json:"at"`
	Horizon time.Duration `json:"horizon"`
	// Runs is how many forecasts the ensemble ran.
	Runs int `json:"runs"`
	// Pods are the pending pods, in the state's order.
	Pods []ensembleStart `json:"pods"`
	// waits are each pending pod's waits, by run (neverStarts where the
	// run does not start it), for the evaluation's percentiles.
	waits [][]time.Duration
}

// ensembleStart is one pending pod's start over an ensemble's runs: the
// median wait and the 10th to 90th percentile of the waits, each by
// nearest rank (the ⌈p·K/100⌉-th smallest of the K runs' waits, a run
// that does not start the pod counting as the longest wait). A
// percentile whose run does not start the pod within the horizon has no
// wait: its Starts field is false.
type ensembleStart struct {
	Pod types.NamespacedName `json:"pod"`
	// Starts and Wait are the median's: Starts is false when at most
	// half of the runs start the pod within the horizon.
	Starts bool          `json:"starts"`
	Wait   time.Duration `json:"wait"`
	// LowStarts and Low are the 10th percentile's; HighStarts and High
	// the 90th's.
	LowStarts  bool          `json:"lowStarts"`
	Low        time.Duration `json:"low"`
	HighStarts bool          `json:"highStarts"`
	High       time.Duration `json:"high"`
	// Started is how many runs start the pod within the horizon.
	Started int `json:"started"`
}

// validateEnsembleRuns refuses an ensemble of fewer than one run or of
// more than maxEnsembleRuns.
func validateEnsembleRuns(runs int) error {
	if runs < 1 || runs > maxEnsembleRuns {
		return fmt.Errorf("forecast ensemble: %d runs; want 1 to %d (each run is a whole forecast)", runs, maxEnsembleRuns)
	}
	return nil
}

// runEnsemble forecasts st runs times. Run k (from 0) draws every
// runtime that o.History estimates, of the running and the pending pods,
// from its conditional distribution: each pod gets a quantile drawn
// uniformly with seed o.History.Seed+k (History.Sampled), independently
// of the other pods. Each pending pod gets the median of its runs' waits
// and their 10th to 90th percentile (ensembleStart). The same state,
// options, runs and seed give the same ensemble. Without a history
// every run would be the same, and one run is made. The cluster is
// built once for all the runs (o.Base, or NewForecastBase). O(runs)
// forecasts.
func runEnsemble(sc *Scenario, st *ForecastState, o ForecastOptions, runs int) (*ensemble, error) {
	if err := validateEnsembleRuns(runs); err != nil {
		return nil, err
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Base == nil && len(st.Nodes) > 0 {
		b, err := NewForecastBase(st)
		if err != nil {
			return nil, err
		}
		o.Base = b
	}
	draws := runs
	if o.History == nil {
		draws = 1
	}
	waits := make([][]time.Duration, len(st.Pending)) // by pod, by run
	pods := forecastPods(st)
	var keys []types.NamespacedName
	for k := range draws {
		ko := o
		if o.History != nil {
			ko.History = o.History.Sampled(pods, o.History.Seed+uint64(k))
		}
		fc, err := RunForecast(sc, st, ko)
		if err != nil {
			return nil, fmt.Errorf("forecast ensemble, run %d of %d: %w", k+1, runs, err)
		}
		keys = keys[:0]
		for i, pf := range fc.Pods {
			keys = append(keys, pf.Pod)
			w := neverStarts
			if pf.Starts {
				w = pf.Wait
			}
			waits[i] = append(waits[i], w)
		}
	}
	e := &ensemble{At: st.Now, Horizon: o.Horizon, Runs: draws, Pods: make([]ensembleStart, len(waits)), waits: waits}
	for i, ws := range waits {
		e.Pods[i] = summarise(keys[i], ws)
	}
	return e, nil
}

// summarise gives one pod's start over the runs from its waits in
// each. O(K log K).
func summarise(key types.NamespacedName, waits []time.Duration) ensembleStart {
	ws := slices.Clone(waits)
	slices.Sort(ws)
	ep := ensembleStart{Pod: key}
	ep.Wait, ep.Starts = nearestRank(ws, 50)
	ep.Low, ep.LowStarts = nearestRank(ws, 10)
	ep.High, ep.HighStarts = nearestRank(ws, 90)
	for _, w := range ws {
		if w != neverStarts {
			ep.Started++
		}
	}
	return ep
}

// nearestRank is the p-th percentile (0 < p ≤ 100) of sorted by nearest
// rank, the ⌈p·n/100⌉-th smallest, in integers so that no rounding
// moves the rank; ok is false when that wait is neverStarts (and the
// wait is then 0).
func nearestRank(sorted []time.Duration, p int) (time.Duration, bool) {
	r := max((p*len(sorted)+99)/100, 1)
	w := sorted[r-1]
	if w == neverStarts {
		return 0, false
	}
	return w, true
}
