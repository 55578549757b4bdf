package app

import (
	"context"
	"testing"

	"github.com/schedq/schedq/kube/scheduler"
)

// TestTermsEnableTheSharedFeatures: a term's scheduler has preemption
// (hooked into DefaultPreemption) and gang release on, with the default
// delay, exactly as the simulator's has for a scenario that asks for
// preemption (kube/sim TestSimEnablesTheSharedFeatures expects the same
// value): both drivers enable them through scheduler.Scheduler.Enable.
// A driver that set one up on its own, or with other options, would
// fail one of the two.
func TestTermsEnableTheSharedFeatures(t *testing.T) {
	tm := testTerms(t, fakeCluster(), fakeCluster(), quietReporter{})
	tm.preempt = &scheduler.PreemptionOptions{Evictor: nopEvictor{}}
	tm.releaser = &scheduler.APIReleaser{}
	s, err := tm.newScheduler(tm.queues.get(), scheduler.NewAPIBinder(tm.client, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	want := scheduler.EnabledFeatures{Preemption: true, PreemptionHooked: true, GangReleaseAfter: scheduler.DefaultGangReleaseAfter}
	if got := s.Enabled(); got != want {
		t.Errorf("a term's scheduler has %+v on, want %+v (as the simulator's)", got, want)
	}
}

// nopEvictor evicts nobody.
type nopEvictor struct{}

func (nopEvictor) Preempt(_ context.Context, _ scheduler.Preemption, done func([]error)) { done(nil) }
func (nopEvictor) Wait()                                                                 {}
