package sim

import (
	"testing"

	"github.com/schedq/schedq/kube/scheduler"
)

// TestSimEnablesTheSharedFeatures: the simulator's scheduler has the
// features the live scheduler's terms have (kube/app
// TestTermsEnableTheSharedFeatures expects the same value), both enabled
// through scheduler.Scheduler.Enable: preemption (hooked into
// DefaultPreemption) when the scenario asks for it, and gang release
// with its default delay.
func TestSimEnablesTheSharedFeatures(t *testing.T) {
	for _, tc := range []struct {
		name       string
		preemption bool
		want       scheduler.EnabledFeatures
	}{
		{name: "with preemption, as live", preemption: true,
			want: scheduler.EnabledFeatures{Preemption: true, PreemptionHooked: true, GangReleaseAfter: scheduler.DefaultGangReleaseAfter}},
		{name: "without", want: scheduler.EnabledFeatures{GangReleaseAfter: scheduler.DefaultGangReleaseAfter}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parseScenario(t, "name: x\nnodes: [{name: n, count: 1, capacity: {cpu: \"2\"}}]\npods: [{name: q, count: 1, arrival: {at: 1m}}]\n")
			if tc.preemption {
				sc.Scheduler.Preemption = &PreemptionSpec{}
			}
			s, err := newSim(sc, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := s.sched.Enabled(); got != tc.want {
				t.Errorf("the simulator's scheduler has %+v on, want %+v", got, tc.want)
			}
		})
	}
}
