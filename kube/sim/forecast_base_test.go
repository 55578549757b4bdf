package sim

import (
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// baseState is goldenState with fewer pods pending, for tests that run
// it many times.
func baseState(pending int) *ForecastState {
	st := goldenState()
	st.Pending = st.Pending[:pending]
	return st
}

// baseCase is a what-if to ask of baseState: a pod of priority prio
// and cpu cores, under a scenario with or without preemption.
type baseCase struct {
	name    string
	preempt bool
	prio    int32
	cpu     string
}

var baseCases = []baseCase{
	{"plain", false, 0, "3"},
	{"preempts", true, 1000, "8"},
	{"waits", false, 100, "6"},
}

func (c baseCase) run(st *ForecastState, base *ForecastBase) (*Forecast, *WhatIf, error) {
	sc := &Scenario{Name: "base", Seed: 1}
	if c.preempt {
		sc.Scheduler.Preemption = &PreemptionSpec{}
	}
	o := ForecastOptions{Horizon: 12 * time.Hour, Base: base}
	f, err := RunForecast(sc, st, o)
	if err != nil {
		return nil, nil, err
	}
	p := testPod("w-"+c.name, "", c.cpu, "1h")
	p.UID, p.Spec.Priority = types.UID(""), &c.prio
	w, err := RunWhatIfFrom(sc, st, f, &WhatIfInput{Pods: []*v1.Pod{p}}, o)
	return f, w, err
}

func (c baseCase) mustRun(t *testing.T, st *ForecastState, base *ForecastBase) (*Forecast, *WhatIf) {
	t.Helper()
	f, w, err := c.run(st, base)
	if err != nil {
		t.Fatal(err)
	}
	return f, w
}

// TestForecastBaseRunsLeaveNoTrace: forecasts and what-ifs run from one
// base, one after another and in every order, answer exactly as runs
// that build the cluster themselves. A run's bindings, preemptions and
// ends would otherwise reach the next run.
func TestForecastBaseRunsLeaveNoTrace(t *testing.T) {
	st := baseState(120)
	type answer struct {
		f *Forecast
		w *WhatIf
	}
	want := map[string]answer{}
	for _, c := range baseCases {
		f, w := c.mustRun(t, st, nil)
		want[c.name] = answer{f, w}
	}
	base, err := NewForecastBase(st)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for i := range baseCases {
			c := baseCases[(i+round)%len(baseCases)]
			f, w := c.mustRun(t, st, base)
			if !reflect.DeepEqual(f, want[c.name].f) {
				t.Errorf("round %d, %s: the forecast from the base differs:\n%s\nwant\n%s", round, c.name, forecastText(f), forecastText(want[c.name].f))
			}
			if !reflect.DeepEqual(w, want[c.name].w) {
				t.Errorf("round %d, %s: the what-if from the base differs:\n%+v\nwant\n%+v", round, c.name, w, want[c.name].w)
			}
		}
	}
	if w := want["preempts"].w; len(w.Pods[0].Preempts) == 0 || len(w.Changed) == 0 {
		t.Errorf("the preempting what-if preempts %v and changes %d forecasts: it no longer tests a run that evicts", w.Pods[0].Preempts, len(w.Changed))
	}
}

// TestForecastBaseConcurrentRuns: runs on one base from several
// goroutines take turns and answer as runs of their own.
func TestForecastBaseConcurrentRuns(t *testing.T) {
	st := baseState(40)
	want := make([]*WhatIf, len(baseCases))
	for i, c := range baseCases {
		_, want[i] = c.mustRun(t, st, nil)
	}
	base, err := NewForecastBase(st)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]*WhatIf, len(baseCases))
	errs := make([]error, len(baseCases))
	for i, c := range baseCases {
		wg.Go(func() { _, got[i], errs[i] = c.run(st, base) })
	}
	wg.Wait()
	for i, c := range baseCases {
		if errs[i] != nil {
			t.Errorf("%s: %v", c.name, errs[i])
		} else if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s: got %+v, want %+v", c.name, got[i], want[i])
		}
	}
}

// TestForecastBaseBadInput: a base fails as a forecast of its state
// would, and serves no other state.
func TestForecastBaseBadInput(t *testing.T) {
	st := goldenState()
	st.Running[1].Pod.Spec.NodeName = "nowhere"
	if _, err := NewForecastBase(st); err == nil {
		t.Error("a pod on a node not in the state: no error")
	}
	if _, err := NewForecastBase(&ForecastState{}); err != ErrNoNodes {
		t.Errorf("no nodes: got %v, want ErrNoNodes", err)
	}
	base, err := NewForecastBase(goldenState())
	if err != nil {
		t.Fatal(err)
	}
	_, err = RunForecast(&Scenario{Name: "t"}, goldenState(), ForecastOptions{Horizon: time.Hour, Base: base})
	if want := "not of this state"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a base of another state: got %v, want an error saying %q", err, want)
	}
	taken := testPod("r-3", "", "1", "1h") // the name of a running pod
	taken.UID = ""
	_, err = RunWhatIf(&Scenario{Name: "t"}, base.st, &WhatIfInput{Pods: []*v1.Pod{taken}}, ForecastOptions{Horizon: time.Hour, Base: base})
	if want := "exists already"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a what-if pod named as a running pod, from a base: got %v, want an error saying %q", err, want)
	}
}
