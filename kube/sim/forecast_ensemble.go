package sim

import (
	"fmt"
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// MaxEnsembleRuns is the most runs an ensemble makes: each is a whole
// forecast, so an ensemble costs its runs times one.
const MaxEnsembleRuns = 100

// neverStarts stands for the wait of a run in which the pod does not
// start within the horizon: it sorts after every real wait.
const neverStarts = time.Duration(math.MaxInt64)

// Ensemble is the forecast of one state under several draws of the
// runtimes its history estimates (RunEnsemble).
type Ensemble struct {
	At      time.Time     `json:"at"`
	Horizon time.Duration `json:"horizon"`
	// Runs is how many forecasts the ensemble ran.
	Runs int `json:"runs"`
	// Pods are the pending pods, in the state's order.
	Pods []EnsemblePod `json:"pods"`
}

// EnsemblePod is one pending pod's start over an ensemble's runs: the
// median wait and the 10th to 90th percentile of the waits, each by
// nearest rank (the ⌈p·K/100⌉-th smallest of the K runs' waits, a run
// that does not start the pod counting as the longest wait). A
// percentile whose run does not start the pod within the horizon has no
// wait: its Starts field is false.
type EnsemblePod struct {
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

// ValidateEnsembleRuns refuses an ensemble of fewer than one run or of
// more than MaxEnsembleRuns.
func ValidateEnsembleRuns(runs int) error {
	if runs < 1 || runs > MaxEnsembleRuns {
		return fmt.Errorf("forecast ensemble: %d runs; want 1 to %d (each run is a whole forecast)", runs, MaxEnsembleRuns)
	}
	return nil
}

// RunEnsemble forecasts st runs times. Run k (from 0) draws every
// runtime that o.History estimates, of the running and the pending pods,
// from its conditional distribution: each pod gets a quantile drawn
// uniformly with seed o.History.Seed+k (History.Sampled), independently
// of the other pods. Each pending pod gets the median of its runs' waits
// and their 10th to 90th percentile (EnsemblePod). The same state,
// options, runs and seed give the same ensemble. Without a history
// every run would be the same, and one run is made. The cluster is
// built once for all the runs (o.Base, or NewForecastBase). O(runs)
// forecasts.
func RunEnsemble(sc *Scenario, st *ForecastState, o ForecastOptions, runs int) (*Ensemble, error) {
	if err := ValidateEnsembleRuns(runs); err != nil {
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
	e := &Ensemble{At: st.Now, Horizon: o.Horizon, Runs: draws, Pods: make([]EnsemblePod, len(waits))}
	for i, ws := range waits {
		e.Pods[i] = ensemblePod(keys[i], ws)
	}
	return e, nil
}

// ensemblePod summarises one pod's waits over the runs. O(K log K).
func ensemblePod(key types.NamespacedName, waits []time.Duration) EnsemblePod {
	ws := slices.Clone(waits)
	slices.Sort(ws)
	ep := EnsemblePod{Pod: key}
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
