package sim

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestWhatIfProbeAnswersAsTheRunAlone: one cycle on the what-if run's
// starting state answers "fits now, where" as the run of the pod alone
// does (ties among empty nodes, no room, preemption that cannot help),
// declines where preemption could help, and leaves the what-if run's
// forecast as it is without the probe.
func TestWhatIfProbeAnswersAsTheRunAlone(t *testing.T) {
	roomy := func() *ForecastState {
		st := whatIfState()
		st.Nodes = append(st.Nodes, newCluster().makeNodes(NodeGroup{Name: "m", Count: 6, Capacity: map[string]string{"cpu": "4", "memory": "8Gi"}})...)
		return st
	}
	full := func() *ForecastState {
		st := benchState(30, 20)
		st.Namespaces = whatIfState().Namespaces
		return st
	}
	pre := SchedulerSpec{Preemption: &PreemptionSpec{}}
	cases := []struct {
		name  string
		st    *ForecastState
		sched SchedulerSpec
		cpu   string
		prio  int32
		probe bool // the probe answers
	}{
		{"ties among empty nodes", roomy(), SchedulerSpec{}, "1", 0, true},
		{"ties, seed 7", roomy(), SchedulerSpec{}, "2", 0, true},
		{"no room", full(), SchedulerSpec{}, "2", 0, true},
		{"no room, too large", roomy(), SchedulerSpec{}, "5", 0, true},
		{"preemption finds no victim", full(), pre, "2", 0, true},
		{"preemption could help", whatIfState(), pre, "4", 100, false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := &Scenario{Name: "t", Seed: uint64(1 + 6*i), Scheduler: c.sched}
			o := ForecastOptions{Horizon: 3 * time.Hour}
			in := &WhatIfInput{Pods: []*v1.Pod{testPod("w", "", c.cpu, "30m")}}
			in.Pods[0].UID, in.Pods[0].Spec.Priority = types.UID(""), &c.prio
			if err := in.check(c.st, nil); err != nil {
				t.Fatal(err)
			}
			with := *c.st
			r, err := newForecastRun(sc, &with, &o, in.Pods)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := r.probeNow(sc, c.st, in)
			if ok != c.probe {
				t.Fatalf("probe answered: %v, want %v", ok, c.probe)
			}
			if !ok {
				return
			}
			want, err := whatIfNow(sc, c.st, in, o)
			if err != nil {
				t.Fatal(err)
			}
			// The run's reason goes on with what preemption found, which
			// one cycle does not run; the rest is the same answer.
			if len(got) == 1 && len(want) == 1 && strings.HasPrefix(want[0].Reason, got[0].Reason) {
				want[0].Reason = got[0].Reason
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("probe: %+v\nrun alone: %+v", got, want)
			}
			if err := r.s.loop(); err != nil {
				t.Fatal(err)
			}
			plain, err := newForecastRun(sc, &with, &o, in.Pods)
			if err != nil {
				t.Fatal(err)
			}
			if err := plain.s.loop(); err != nil {
				t.Fatal(err)
			}
			a, b := r.result(), plain.result()
			if !slices.EqualFunc(a.Pods, b.Pods, func(x, y PodForecast) bool { return fmt.Sprint(x) == fmt.Sprint(y) }) {
				t.Fatalf("the probe changed the run's forecast:\n%+v\n%+v", a.Pods, b.Pods)
			}
		})
	}
}
