package sim

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// terminatingState is one 4-core node running v, which fills it, and b
// pending for 4 cores. v is terminating if deleted is set, since that
// much after the state's instant (negative: before).
func terminatingState(runtime string, deleted *time.Duration, gracePeriodSeconds *int64) *ForecastState {
	now := epoch.Add(10 * time.Hour)
	v := testPod("v", "n-0", "4", runtime)
	if deleted != nil {
		v.DeletionTimestamp = &metav1.Time{Time: now.Add(*deleted)}
		v.DeletionGracePeriodSeconds = gracePeriodSeconds
	}
	return &ForecastState{
		Now:     now,
		Nodes:   newCluster().makeNodes(NodeGroup{Name: "n", Count: 1, Capacity: map[string]string{"cpu": "4", "memory": "8Gi"}}),
		Running: []RunningPod{{Pod: v, Started: now}},
		Pending: []*v1.Pod{testPod("b", "", "4", "1h")},
	}
}

// TestForecastTerminatingPodLeavesAtItsGraceEnd: a running pod that is
// terminating at the state's instant (a victim in its grace period)
// leaves when its grace period ends, or when its run ends if sooner, not
// at its run's end only: b, which waits for its room, starts then.
func TestForecastTerminatingPodLeavesAtItsGraceEnd(t *testing.T) {
	d := func(x time.Duration) *time.Duration { return &x }
	secs := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name    string
		st      *ForecastState
		want    time.Duration
		unknown int
	}{
		// The simulator's victims: deleted at the eviction, gone after
		// the scenario's grace period (30 s).
		{name: "a victim of the simulator, end unknown", st: terminatingState("", d(-10*time.Second), nil), want: 20 * time.Second},
		// Kubernetes': the deletion timestamp is when the grace ends.
		{name: "a pod of the API server, end unknown", st: terminatingState("", d(5*time.Second), secs(30)), want: 5 * time.Second},
		{name: "its run ends during its grace", st: terminatingState("3s", d(0), nil), want: 3 * time.Second},
		{name: "its run ends after its grace", st: terminatingState("2h", d(0), nil), want: 30 * time.Second},
		{name: "not terminating", st: terminatingState("", nil, nil), unknown: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &Scenario{Name: "t", Seed: 1}
			sc.Scheduler.Preemption = &PreemptionSpec{GracePeriod: 30 * time.Second}
			f, err := RunForecast(sc, tc.st, ForecastOptions{Horizon: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := f.Of(types.NamespacedName{Namespace: "default", Name: "b"})
			if tc.want == 0 {
				if b.Starts || b.Unknown != tc.unknown {
					t.Errorf("b: got %+v, want no start, behind %d unknown end", b, tc.unknown)
				}
				return
			}
			if !b.Starts || b.Wait < tc.want || b.Wait > tc.want+time.Second || b.Unknown != tc.unknown {
				t.Errorf("b: got start %v (starts %v) unknown %d, want about %v, %d unknown", b.Wait, b.Starts, b.Unknown, tc.want, tc.unknown)
			}
		})
	}
}

// TestForecastVictimWhoseRunEndsInItsGraceLeavesPreempted: a running pod
// that the forecast's own preemption evicts, and whose planned end comes
// during its grace period, leaves as the victim it is, recreated as the
// scenario says, not as a pod that finished its work.
func TestForecastVictimWhoseRunEndsInItsGraceLeavesPreempted(t *testing.T) {
	st := terminatingState("10s", nil, nil)
	high := int32(100)
	st.Pending[0].Spec.Priority = &high
	sc := &Scenario{Name: "t", Seed: 1}
	sc.Scheduler.Preemption = &PreemptionSpec{GracePeriod: 30 * time.Second, RecreateVictims: true}
	o := ForecastOptions{Horizon: time.Hour}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	r, err := newForecastRun(sc, st, &o, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	if err := r.s.loop(); err != nil {
		t.Fatal(err)
	}
	if r.s.pre.victims != 1 || r.s.pre.recreated != 1 {
		t.Errorf("victims %d, recreated %d; want v evicted and recreated once", r.s.pre.victims, r.s.pre.recreated)
	}
	b, _ := r.result().Of(types.NamespacedName{Namespace: "default", Name: "b"})
	if !b.Starts || b.Wait < 10*time.Second || b.Wait > 11*time.Second {
		t.Errorf("b: got %+v, want a start when v's run ends, about 10s", b)
	}
}

// TestForecastVictimTerminatesForItsOwnGracePeriod: with
// podGracePeriods, as the live scheduler's forecasts run, a victim of the
// forecast's own preemption stays on its node, terminating, for its
// spec.terminationGracePeriodSeconds (the API server's 30 s where unset),
// so the preemptor b starts that much later, not at once.
func TestForecastVictimTerminatesForItsOwnGracePeriod(t *testing.T) {
	secs := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name  string
		grace *int64
		want  time.Duration
	}{
		{name: "unset: the API server's 30 s", want: 30 * time.Second},
		{name: "45 s", grace: secs(45), want: 45 * time.Second},
		{name: "0 s: gone with the eviction", grace: secs(0), want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := terminatingState("", nil, nil)
			st.Running[0].Pod.Spec.TerminationGracePeriodSeconds = tc.grace
			high := int32(100)
			st.Pending[0].Spec.Priority = &high
			sc := &Scenario{Name: "t", Seed: 1}
			sc.Scheduler.Preemption = &PreemptionSpec{PodGracePeriods: true}
			f, err := RunForecast(sc, st, ForecastOptions{Horizon: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := f.Of(types.NamespacedName{Namespace: "default", Name: "b"})
			if !b.Starts || b.Wait < tc.want || b.Wait > tc.want+time.Second {
				t.Errorf("b: got start %v (starts %v), want about %v after the state's instant", b.Wait, b.Starts, tc.want)
			}
		})
	}
}
