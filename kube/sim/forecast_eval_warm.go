package sim

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
)

// warmRun is one run of a pod created before a trace's split, as a
// scheduler running at the split would have recorded it.
type warmRun struct {
	pod *v1.Pod
	d   time.Duration // the runtime, or, if going, how long it had run
	// going: the run had not ended by the split (right-censored).
	going bool
}

// warmRuns returns the runs a scheduler would have learnt by second t0 of
// the trace, at the trace's own speed, from the pods created before t0
// that production had started by then: a run that ended by t0 lasted
// deletion − creation (the runtime the replay gives a pod once bound);
// one still going at t0 has run t0 − creation and is censored there, so
// nothing after t0 is used. Pods never scheduled in production, or not
// before t0, had no run to learn from. O(pods).
func warmRuns(pods []tracePod, t0 int64) []warmRun {
	var out []warmRun
	for _, tp := range pods {
		if tp.created >= t0 || tp.scheduled < 0 || tp.scheduled > t0 {
			continue
		}
		r := warmRun{pod: tp.pod, d: time.Duration(tp.deleted-tp.created) * time.Second}
		if tp.deleted > t0 {
			r.d, r.going = time.Duration(t0-tp.created)*time.Second, true
		}
		out = append(out, r)
	}
	return out
}

// seed adds the runs to h: the finished as observed, the going as
// running (History.Observe, History.ObserveRunning).
func seed(h *History, runs []warmRun) {
	for _, r := range runs {
		if r.going {
			h.ObserveRunning(r.pod, r.d)
		} else {
			h.Observe(r.pod, r.d)
		}
	}
}

// MedianCreation returns the median creation time of the pods of the
// Alibaba GPU trace in dir, counted from the trace's start: the instant
// that splits its pods in halves (the upper median of an even count).
func MedianCreation(dir string) (time.Duration, error) {
	t, err := readAlibabaTrace(&TraceSpec{Format: TraceAlibabaGPU, Dir: dir})
	if err != nil {
		return 0, fmt.Errorf("trace %s: %w", TraceAlibabaGPU, err)
	}
	if t.untimed {
		return 0, fmt.Errorf("trace %s in %s: the pod list has no creation times", TraceAlibabaGPU, dir)
	}
	cs := make([]int64, len(t.pods))
	for i, tp := range t.pods {
		cs[i] = tp.created
	}
	slices.Sort(cs)
	return time.Duration(cs[len(cs)/2]) * time.Second, nil
}

// evalWarm reads the trace's runs before o.From for Eval, if o.Warm.
func evalWarm(o EvalOptions) ([]warmRun, error) {
	if !o.Warm {
		return nil, nil
	}
	t, err := readAlibabaTrace(&TraceSpec{Format: TraceAlibabaGPU, Dir: o.Dir})
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", TraceAlibabaGPU, err)
	}
	return warmRuns(t.pods, int64(o.From/time.Second)), nil
}

// calibration counts, over the running pods of st whose true runtime
// known gives, in which tenth of h's estimate of its remaining runtime
// the true remaining runtime falls: deciles[k] counts those above the
// k/10-quantile and at most the (k+1)/10-quantile (the first and last
// open-ended). An estimate that knows the distribution of the runs
// gives each tenth about a tenth of the pods; none counts the pods h
// gave no estimate. h is taken as ForecastOptions.History: the running
// pods are added to a copy as censored, as a forecast does.
func calibration(h *History, st *ForecastState, known func(*v1.Pod) (time.Duration, bool)) (deciles [10]int, none int) {
	c := (&ForecastOptions{History: h}).historyFor(st, nil)
	for _, r := range st.Running {
		life, ok := known(r.Pod)
		if !ok {
			continue
		}
		e := st.Now.Sub(r.Started)
		k := 0
		for q := 1; q < 10; q++ {
			d, ok := c.Quantile(r.Pod, e, float64(q)/10)
			if !ok {
				none++
				k = -1
				break
			}
			if life-e > d {
				k++
			}
		}
		if k >= 0 {
			deciles[k]++
		}
	}
	return deciles, none
}
