package sim

import (
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestForecastsLeaveNoGoroutine: a forecast, a what-if, runs from a base
// and a replay run to its end stop every goroutine they start (kube-scheduler's framework
// starts a metrics recorder per framework), so a live scheduler that
// forecasts every few seconds does not pile them up. synctest fails the
// bubble if a goroutine started in it is still blocked when it ends.
func TestForecastsLeaveNoGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, sc *Scenario, st *ForecastState)
	}{
		{"forecast", func(t *testing.T, sc *Scenario, st *ForecastState) {
			if _, err := RunForecast(sc, st, ForecastOptions{Horizon: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}},
		{"what-if", func(t *testing.T, sc *Scenario, st *ForecastState) {
			in := &WhatIfInput{Pods: []*v1.Pod{testPod("w", "", "2", "1h")}}
			if _, err := RunWhatIf(sc, st, in, ForecastOptions{Horizon: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}},
		{"forecast and what-if from a base", func(t *testing.T, sc *Scenario, st *ForecastState) {
			o := ForecastOptions{Horizon: time.Hour}
			var err error
			if o.Base, err = NewForecastBase(st); err != nil {
				t.Fatal(err)
			}
			before, err := RunForecast(sc, st, o)
			if err != nil {
				t.Fatal(err)
			}
			in := &WhatIfInput{Pods: []*v1.Pod{testPod("w", "", "2", "1h")}}
			if _, err := RunWhatIfFrom(sc, st, before, in, o); err != nil {
				t.Fatal(err)
			}
		}},
		{"a replay run to its end", func(t *testing.T, _ *Scenario, _ *ForecastState) {
			rp, err := NewReplay(traceScenario("testdata/alibaba"))
			if err != nil {
				t.Fatal(err)
			}
			if err := rp.Run(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := benchState(4, 6)
				st.Namespaces = []*v1.Namespace{{}}
				st.Namespaces[0].Name = "default"
				tc.run(t, &Scenario{Name: "leak", Seed: 1}, st)
			})
		})
	}
}
