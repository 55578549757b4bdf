package scheduler

import (
	"context"
	"errors"
	"testing"

	"github.com/schedq/schedq/kube/framework"
)

// scriptedEvictor deletes the victims if evict is set, then reports the
// errors errs makes of the preemption.
type scriptedEvictor struct {
	f     *fixture
	evict bool
	errs  func(Preemption) []error
}

func (e *scriptedEvictor) Wait() {}

func (e *scriptedEvictor) Preempt(_ context.Context, p Preemption, done func([]error)) {
	if e.evict {
		for _, v := range p.Victims {
			e.f.h.DeletePod(v)
		}
	}
	done(e.errs(p))
}

// TestUnclearedNominationsStayInTheQueue: the pods of lower priority
// whose nomination a preemption takes keep it in the queue when the
// Evictor could not clear it in their status (the lease fence closed:
// nothing was written, an error that names nothing; or that one write
// failed, a NominationError), so that the queue and the status agree,
// as kube-scheduler keeps such a pod in its nominator when the clearing
// fails. Before, the queue dropped them while their status kept them.
func TestUnclearedNominationsStayInTheQueue(t *testing.T) {
	errFence := errors.New("not known to hold the leader lease")
	for _, tc := range []struct {
		name     string
		evict    bool
		errs     func(Preemption) []error
		low      string // low's nomination after the preemption
		high     string // the preemptor's
		nominees int    // pods nominated to a
	}{
		{name: "written", evict: true, errs: func(Preemption) []error { return nil }, high: "a", nominees: 1},
		{name: "fence closed", errs: func(Preemption) []error { return []error{errFence} }, low: "a", nominees: 1},
		{name: "clear failed", evict: true, errs: func(p Preemption) []error {
			return []error{&NominationError{Pod: p.Unnominated[0], Err: errFence}}
		}, low: "a", high: "a", nominees: 2},
		{name: "victim not evicted", errs: func(p Preemption) []error {
			return []error{&VictimError{Victim: p.Victims[0], Err: errFence}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFWFixture(t, nil, nil)
			e := &scriptedEvictor{f: f, evict: tc.evict, errs: tc.errs}
			if err := f.s.EnablePreemption(PreemptionOptions{Evictor: e}); err != nil {
				t.Fatal(err)
			}
			f.h.AddNode(node("a", 4000))
			f.h.AddPod(runningPod("victim", "a", 3000, 1, t0))
			low := prioPod("low", 2000, 5)
			low.Status.NominatedNodeName = "a" // restored in the queue as it is added
			f.h.AddPod(low)
			f.h.AddPod(prioPod("high", 2000, 100))
			out := f.once()
			if out.Result != Unschedulable || out.Nominated != "a" || victimNames(out) != "victim" {
				t.Fatalf("high: %v nominated %q victims %q (%s), want a preemption of victim on a", out.Result, out.Nominated, victimNames(out), out.Message)
			}
			if got := f.nomination("low"); got != tc.low {
				t.Errorf("low nominated to %q, want %q", got, tc.low)
			}
			if got := f.nomination("high"); got != tc.high {
				t.Errorf("high nominated to %q, want %q", got, tc.high)
			}
			if got := len(f.q.Nominated("a")); got != tc.nominees {
				t.Errorf("%d pods nominated to a, want %d", got, tc.nominees)
			}
		})
	}
}

// TestRenominateFollowsTheQueuedStatus: renominate gives a pod back the
// nomination a preemption took only if the queue's version of the pod
// names the node in its status. That version may be stale: low's own
// nomination was written to its status but the echo is not seen yet.
// Restoring from the queue's version is still right, since the queue
// follows the status: nominated to a in the queue alone, low is not
// renominated when the clearing fails (nothing the scheduler knows of
// names a), and is nominated again when the echo of the first write
// arrives (an update from "" to a); had that write failed too, the
// status and the queue agree on no nomination.
func TestRenominateFollowsTheQueuedStatus(t *testing.T) {
	errFence := errors.New("not known to hold the leader lease")
	f := newFWFixture(t, nil, nil)
	e := &scriptedEvictor{f: f, evict: true, errs: func(p Preemption) []error {
		return []error{&NominationError{Pod: p.Unnominated[0], Err: errFence}}
	}}
	if err := f.s.EnablePreemption(PreemptionOptions{Evictor: e}); err != nil {
		t.Fatal(err)
	}
	f.h.AddNode(node("a", 4000))
	f.h.AddPod(runningPod("victim", "a", 3000, 1, t0))
	low := prioPod("low", 2000, 5)
	f.h.AddPod(low)
	if err := f.q.Nominate(framework.Key(low), "a"); err != nil { // its status write not seen yet
		t.Fatal(err)
	}
	f.h.AddPod(prioPod("high", 2000, 100))
	if out := f.once(); out.Result != Unschedulable || out.Nominated != "a" {
		t.Fatalf("high: %v nominated %q (%s), want a preemption on a", out.Result, out.Nominated, out.Message)
	}
	if got := f.nomination("low"); got != "" {
		t.Fatalf("low nominated to %q before its status says so, want none", got)
	}
	echo := low.DeepCopy()
	echo.Status.NominatedNodeName = "a"
	f.h.UpdatePod(low, echo)
	if got := f.nomination("low"); got != "a" {
		t.Fatalf("low nominated to %q after the echo of its nomination, want a", got)
	}
}
