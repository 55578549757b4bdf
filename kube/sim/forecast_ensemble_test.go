package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ensembleState is three 4-core nodes, each running a 4-core pod of
// team x that started 5 minutes ago, and three such pods pending; the
// history of team x has finished runs of 10 to 100 minutes, so each
// draw ends the running pods at other times.
func ensembleState() (*ForecastState, *History) {
	h := NewHistory("team")
	for m := 10; m <= 100; m += 10 {
		h.Observe(teamPod(fmt.Sprint("done", m)), time.Duration(m)*time.Minute)
	}
	now := epoch.Add(10 * time.Hour)
	st := &ForecastState{Now: now, Nodes: newCluster().makeNodes(NodeGroup{Name: "n", Count: 3, Capacity: map[string]string{"cpu": "4", "memory": "8Gi"}})}
	for i := range 3 {
		p := teamPod(fmt.Sprint("r", i))
		p.Spec.NodeName = fmt.Sprint("n-", i)
		p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = *resourceQuantity("4")
		st.Running = append(st.Running, RunningPod{Pod: p, Started: now.Add(-5 * time.Minute)})
		q := teamPod(fmt.Sprint("p", i))
		q.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = *resourceQuantity("4")
		st.Pending = append(st.Pending, q)
	}
	h.Seed = 3
	return st, h
}

// TestEnsembleIsTheMedianOfItsRuns: each pod's ensemble wait is the 5th
// of the 9 waits of forecasts run one by one, run k with every runtime
// drawn with seed Seed+k, and its range the lowest and highest of them;
// the draws do differ (some pod's range is not one point), and the
// same state, options and seed give the same bytes.
func TestEnsembleIsTheMedianOfItsRuns(t *testing.T) {
	sc := &Scenario{Name: "t", Seed: 1}
	st, h := ensembleState()
	o := ForecastOptions{Horizon: 24 * time.Hour, History: h}
	e, err := runEnsemble(sc, st, o, 9)
	if err != nil {
		t.Fatal(err)
	}
	if e.Runs != 9 || len(e.Pods) != len(st.Pending) {
		t.Fatalf("got %d runs and %d pods, want 9 and %d", e.Runs, len(e.Pods), len(st.Pending))
	}
	waits := make([][]time.Duration, len(st.Pending))
	for k := range 9 {
		f, err := RunForecast(sc, st, ForecastOptions{Horizon: o.Horizon, History: h.Sampled(forecastPods(st), h.Seed+uint64(k))})
		if err != nil {
			t.Fatal(err)
		}
		for i, pf := range f.Pods {
			if !pf.Starts {
				t.Fatalf("run %d: %s does not start", k, pf.Pod)
			}
			waits[i] = append(waits[i], pf.Wait)
		}
	}
	spread := false
	for i, ep := range e.Pods {
		ws := slices.Sorted(slices.Values(waits[i]))
		want := ensembleStart{Pod: types.NamespacedName{Namespace: "default", Name: st.Pending[i].Name},
			Starts: true, Wait: ws[4], LowStarts: true, Low: ws[0], HighStarts: true, High: ws[8], Started: 9}
		if ep != want {
			t.Errorf("pod %d: got %+v, want %+v (runs %v)", i, ep, want, ws)
		}
		spread = spread || ws[0] != ws[8]
	}
	if !spread {
		t.Errorf("every pod waits the same in every run: the draws did not differ")
	}
	again, err := runEnsemble(sc, st, o, 9)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(e)
	b2, _ := json.Marshal(again)
	if string(b1) != string(b2) {
		t.Errorf("two ensembles of the same state and seed differ:\n%s\n%s", b1, b2)
	}
}

// TestEnsemblePercentiles: the median and the 10th and 90th
// percentiles by nearest rank, the ⌈p·K/100⌉-th smallest wait, a run
// that does not start the pod counting as the longest.
func TestEnsemblePercentiles(t *testing.T) {
	m := func(xs ...int) []time.Duration {
		var ds []time.Duration
		for _, x := range xs {
			ds = append(ds, time.Duration(x)*time.Minute)
		}
		return ds
	}
	never := func(n int) []time.Duration { return slices.Repeat([]time.Duration{neverStarts}, n) }
	for _, tc := range []struct {
		name  string
		waits []time.Duration
		want  ensembleStart
	}{
		{"one run", m(7), ensembleStart{Starts: true, Wait: 7 * time.Minute, LowStarts: true, Low: 7 * time.Minute, HighStarts: true, High: 7 * time.Minute, Started: 1}},
		{"nine runs, unsorted", m(9, 3, 1, 7, 5, 2, 8, 4, 6), ensembleStart{Starts: true, Wait: 5 * time.Minute, LowStarts: true, Low: time.Minute, HighStarts: true, High: 9 * time.Minute, Started: 9}},
		{"four runs: the lower median", m(4, 3, 2, 1), ensembleStart{Starts: true, Wait: 2 * time.Minute, LowStarts: true, Low: time.Minute, HighStarts: true, High: 4 * time.Minute, Started: 4}},
		{"ten runs", m(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), ensembleStart{Starts: true, Wait: 5 * time.Minute, LowStarts: true, Low: time.Minute, HighStarts: true, High: 9 * time.Minute, Started: 10}},
		{"thirty runs: ranks 3, 15 and 27", m(30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1),
			ensembleStart{Starts: true, Wait: 15 * time.Minute, LowStarts: true, Low: 3 * time.Minute, HighStarts: true, High: 27 * time.Minute, Started: 30}},
		{"five of nine do not start: no median", append(m(4, 1, 3, 2), never(5)...), ensembleStart{LowStarts: true, Low: time.Minute, Started: 4}},
		{"one of nine does not start: the range is open", append(m(8, 1, 3, 2, 5, 6, 7, 4), never(1)...), ensembleStart{Starts: true, Wait: 5 * time.Minute, LowStarts: true, Low: time.Minute, Started: 8}},
		{"none starts", never(3), ensembleStart{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := types.NamespacedName{Namespace: "default", Name: "p"}
			tc.want.Pod = key
			in := slices.Clone(tc.waits)
			if got := summarise(key, tc.waits); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if !slices.Equal(in, tc.waits) {
				t.Errorf("the runs' waits were reordered: %v, given %v", tc.waits, in)
			}
		})
	}
}

// TestEnsembleRefusesBadRuns: fewer than one run, or more than
// maxEnsembleRuns, is an error naming the runs, and no forecast runs.
func TestEnsembleRefusesBadRuns(t *testing.T) {
	sc := &Scenario{Name: "t", Seed: 1}
	for _, tc := range []struct {
		name string
		runs int
		ok   bool
	}{
		{"zero", 0, false},
		{"negative", -1, false},
		{"over the limit", maxEnsembleRuns + 1, false},
		{"absurd", 1 << 30, false},
		{"one", 1, true},
		{"the limit", maxEnsembleRuns, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateEnsembleRuns(tc.runs)
			if tc.ok {
				if err != nil {
					t.Errorf("%d runs: got %v, want none", tc.runs, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d runs", tc.runs)) {
				t.Errorf("%d runs: got %v, want an error naming the runs", tc.runs, err)
			}
			st, h := ensembleState()
			paced := 0
			if _, err := runEnsemble(sc, st, ForecastOptions{Horizon: time.Hour, History: h, Pace: func() { paced++ }}, tc.runs); err == nil || paced != 0 {
				t.Errorf("runEnsemble of %d runs: got %v after %d operations, want an error before any", tc.runs, err, paced)
			}
		})
	}
}

// TestEnsembleWithoutHistoryRunsOnce: without a history every run would
// be the same, so one is made, and the range is the one start.
func TestEnsembleWithoutHistoryRunsOnce(t *testing.T) {
	e, err := runEnsemble(&Scenario{Name: "t", Seed: 1}, testState(), ForecastOptions{Horizon: 3 * time.Hour}, 9)
	if err != nil {
		t.Fatal(err)
	}
	b := e.Pods[0]
	if e.Runs != 1 || !b.Starts || b.Wait != b.Low || b.Wait != b.High || b.Wait < 50*time.Minute || b.Wait > 50*time.Minute+time.Second {
		t.Errorf("got %d runs, b %+v; want 1 run, b at about 50m with no range", e.Runs, b)
	}
}

// TestEnsembleNominal: the share of further runs that fall in the range
// of k runs, from the ⌈k/10⌉-th to the ⌈9k/10⌉-th smallest.
func TestEnsembleNominal(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    int
		want float64
	}{
		{"one run: a point", 1, 0},
		{"five runs: lowest to highest", 5, 4.0 / 6},
		{"nine runs: lowest to highest", 9, 0.8},
		{"twenty runs: 2nd to 18th", 20, 16.0 / 21},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ensembleNominal(tc.k); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestEvalRefusesBadRuns: the evaluation refuses an ensemble or a Monte
// Carlo method of a bad number of runs, naming the option, before it
// reads the trace.
func TestEvalRefusesBadRuns(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    EvalOptions
		want string
	}{
		{"ensemble negative", EvalOptions{Ensemble: -1}, "EvalOptions.Ensemble: forecast ensemble: -1 runs"},
		{"ensemble too large", EvalOptions{Ensemble: 101}, "EvalOptions.Ensemble: forecast ensemble: 101 runs"},
		{"Monte Carlo too large", EvalOptions{MonteCarlo: 1000}, "EvalOptions.MonteCarlo: forecast ensemble: 1000 runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Dir = filepath.Join(t.TempDir(), "no-trace")
			if _, err := Eval(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
