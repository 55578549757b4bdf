package sim

import (
	"context"
	"errors"
	"github.com/google/go-cmp/cmp"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// gangReleaseState is TestForecastReleasesAGangBelowMinCount's state
// whose gang is released and created again: gang g (minCount 2) has m0
// bound on n-0, owned by a Job, and m1 pending, which fits on no node
// until m0 is released.
func gangReleaseState() *ForecastState {
	now := epoch.Add(time.Hour)
	m0 := inGroup(testPod("m0", "n-0", "1", "1h"), "g")
	yes := true
	m0.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "job-uid", Controller: &yes}}
	s := &sim{}
	return &ForecastState{Now: now,
		Nodes:     newCluster().makeNodes(NodeGroup{Name: "n", Count: 2, Capacity: map[string]string{"cpu": "2", "memory": "8Gi"}}),
		Running:   []RunningPod{{Pod: m0, Started: now}, {Pod: testPod("u", "n-1", "1", ""), Started: now}},
		PodGroups: []*schedulingPodGroup{s.podGroupObject("default", "g", 2, 0)},
		Pending:   []*v1.Pod{inGroup(testPod("m1", "", "2", "1h"), "g")},
	}
}

// TestForecastBaseRollsBackEveryField: forward runs of every kind from
// one base (binds and ends; preemption, its victims terminating and
// created again; a gang released and created again; DRA's claims
// allocated; a what-if; a run its caller cancels midway) each give the
// base back with its cache exactly as built, every field of it
// (Cache.StateDump, objects by address); and a run repeated on the base
// answers exactly as it did the first time. The queue, the nominator and
// DRA's claims, allocated devices and allocations in flight are each
// run's own (newSim builds them), so the cache is all a run shares.
func TestForecastBaseRollsBackEveryField(t *testing.T) {
	preempt := &Scenario{Name: "base", Seed: 1}
	preempt.Scheduler.Preemption = &PreemptionSpec{GracePeriod: 30 * time.Second, RecreateVictims: true}
	for _, tc := range []struct {
		name  string
		state func(t *testing.T) *ForecastState
		sc    *Scenario
		// whatIf, if set, is asked after the forecast, from it.
		whatIf func() *v1.Pod
		// does reports whether the first run did what the case tests.
		does func(f *Forecast, w *WhatIf) bool
	}{
		{name: "binds and ends, a what-if probed", state: func(*testing.T) *ForecastState { return baseState(60) }, sc: &Scenario{Name: "base", Seed: 1},
			whatIf: func() *v1.Pod { // one plain pod: a cycle of Probe tells whether it fits now
				p := testPod("w-probed", "", "3", "1h")
				p.UID = ""
				return p
			},
			does: func(f *Forecast, w *WhatIf) bool {
				return len(f.Pods) > 0 && f.Pods[len(f.Pods)-1].Starts && w.Pods[0].Forecast.Starts
			}},
		{name: "victims terminate and are created again", state: func(*testing.T) *ForecastState { return baseState(60) }, sc: preempt,
			whatIf: func() *v1.Pod {
				p := testPod("w-preempts", "", "8", "1h")
				prio := int32(1000)
				p.UID, p.Spec.Priority = types.UID(""), &prio
				return p
			},
			does: func(_ *Forecast, w *WhatIf) bool { return len(w.Pods[0].Preempts) > 0 }},
		{name: "a gang released and created again", state: func(*testing.T) *ForecastState { return gangReleaseState() }, sc: &Scenario{Name: "t", Seed: 1},
			does: func(f *Forecast, _ *WhatIf) bool {
				pf, _ := f.Of(types.NamespacedName{Namespace: "default", Name: "m1"})
				return pf.Starts // only once m0 was released
			}},
		{name: "DRA's claims allocated", state: draState, sc: &Scenario{Name: "t", Seed: 1},
			does: func(f *Forecast, _ *WhatIf) bool {
				for _, pf := range f.Pods {
					if strings.HasPrefix(pf.Pod.Name, "infer-") && pf.Starts { // a GPU claim each
						return true
					}
				}
				return false
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.state(t)
			base, err := NewForecastBase(st)
			if err != nil {
				t.Fatal(err)
			}
			built := base.cache
			want := built.StateDump()
			objects := stateObjects(st) // the objects the cache and the runs share
			run := func(ctx context.Context) (*Forecast, *WhatIf, error) {
				o := ForecastOptions{Horizon: 6 * time.Hour, Base: base, Context: ctx}
				f, err := RunForecast(tc.sc, st, o)
				if err != nil || tc.whatIf == nil {
					return f, nil, err
				}
				w, err := RunWhatIfFrom(tc.sc, st, f, &WhatIfInput{Pods: []*v1.Pod{tc.whatIf()}}, o)
				return f, w, err
			}
			check := func(when string) {
				t.Helper()
				if base.cache != built {
					t.Fatalf("%s: the base was given back broken, built again", when)
				}
				if got := built.StateDump(); got != want {
					t.Errorf("%s: the base's cache differs from the cache as built:\n%s", when, dumpLinesDiff(want, got))
				}
			}
			f1, w1, err := run(nil)
			if err != nil {
				t.Fatal(err)
			}
			check("after the first run")
			if !tc.does(f1, w1) {
				t.Fatalf("the first run did not do what the case tests:\n%s", forecastText(f1))
			}
			// Cancelled midway: the step counter of a full run, then half.
			full := &stepCtx{Context: context.Background()}
			full.left.Store(1 << 40)
			if _, err := RunForecast(tc.sc, st, ForecastOptions{Horizon: 6 * time.Hour, Base: base, Context: full}); err != nil {
				t.Fatal(err)
			}
			check("after a counted run")
			cut := &stepCtx{Context: context.Background()}
			cut.left.Store(full.calls.Load() / 2)
			if _, _, err := run(cut); !errors.Is(err, context.Canceled) {
				t.Fatalf("the cancelled run: %v, want context.Canceled", err)
			}
			check("after a run cancelled midway")
			f2, w2, err := run(nil)
			if err != nil {
				t.Fatal(err)
			}
			check("after the second run")
			if got := stateObjects(st); !reflect.DeepEqual(got, objects) {
				t.Error("the runs changed the state's objects, which the base's cache holds")
			}
			if !reflect.DeepEqual(f1, f2) {
				t.Errorf("the second run from the base differs from the first:\n%s\nwant\n%s", forecastText(f2), forecastText(f1))
			}
			if !reflect.DeepEqual(w1, w2) {
				t.Errorf("the second what-if from the base differs from the first:\n%+v\nwant\n%+v", w2, w1)
			}
		})
	}
}

// stateObjects returns deep copies of st's objects: its nodes, running
// and pending pods, PodGroups and other objects.
func stateObjects(st *ForecastState) []any {
	var out []any
	for _, n := range st.Nodes {
		out = append(out, n.DeepCopy())
	}
	for _, rp := range st.Running {
		out = append(out, rp.Pod.DeepCopy(), rp.Started, slices.Clone(rp.GPUs))
	}
	for _, p := range st.Pending {
		out = append(out, p.DeepCopy())
	}
	for _, pg := range st.PodGroups {
		out = append(out, pg.DeepCopy())
	}
	for _, o := range st.Objects {
		out = append(out, o.DeepCopyObject())
	}
	return out
}

// dumpLinesDiff lists the lines of two dumps that differ, as -want/+got.
func dumpLinesDiff(want, got string) string {
	return cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n"))
}
