package scheduler

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// unattributedEvictor fails every preemption with an error that names no
// victim (as a closed lease fence does), evicting no one.
type unattributedEvictor struct{}

func (unattributedEvictor) Wait() {}

func (unattributedEvictor) Preempt(_ context.Context, _ Preemption, done func([]error)) {
	done([]error{errors.New("the lease may be lost")})
}

// leavingNames lists, sorted, the victims the scheduler counts as being
// evicted (their UIDs, "uid-" and the name in apiPreemption).
func (a *apiPreemption) leavingNames() []string {
	var names []string
	for uid := range a.f.s.pre.leaving() {
		names = append(names, strings.TrimPrefix(string(uid), "uid-"))
	}
	slices.Sort(names)
	return names
}

// TestFailedPreemptionKeepsItsEvictedVictimsLeaving: high preempts low1
// and low2 on a. The victims the Evictor deleted still count as leaving
// (until the cache shows them terminating), so that the next search does
// not evict more for their room; those it could not delete do not, nor
// does any when the failure names no victim. A preemptor's
// status.nominatedNodeName the API server refuses does not fail the
// preemption: the victims are deleted, so the preemptor keeps its
// nomination in the queue, which protects the room being freed from pods
// of lower priority, as kube-scheduler keeps it in its nominator when the
// status update fails. Before, any failure forgot every victim, and a
// refused nomination cleared the preemptor's.
func TestFailedPreemptionKeepsItsEvictedVictimsLeaving(t *testing.T) {
	refuse := func(verb string, names ...string) func(*apiPreemption) {
		return func(a *apiPreemption) {
			a.cs.PrependReactor(verb, "pods", func(act k8stesting.Action) (bool, runtime.Object, error) {
				var name string
				switch act := act.(type) {
				case k8stesting.DeleteAction:
					name = act.GetName()
				case k8stesting.PatchAction:
					name = act.GetName()
				}
				if slices.Contains(names, name) {
					return true, nil, errors.New("apiserver says no")
				}
				return false, nil, nil
			})
		}
	}
	for _, tc := range []struct {
		name      string
		setup     func(*apiPreemption)
		leaving   []string
		nominated string // high's nomination in the queue
		log       string
	}{
		{name: "every victim deleted", setup: func(*apiPreemption) {},
			leaving: []string{"low1", "low2"}, nominated: "a"},
		{name: "one victim refused", setup: refuse("delete", "low2"),
			leaving: []string{"low1"}, nominated: "", log: "preemption incomplete"},
		{name: "every victim refused", setup: refuse("delete", "low1", "low2"),
			leaving: nil, nominated: "", log: "preemption incomplete"},
		{name: "a failure that names no victim",
			setup:   func(a *apiPreemption) { a.f.s.pre.o.Evictor = unattributedEvictor{} },
			leaving: nil, nominated: ""},
		{name: "the preemptor's nomination refused", setup: refuse("patch", "high"),
			leaving: []string{"low1", "low2"}, nominated: "a", log: "could not write status.nominatedNodeName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAPIPreemption(t)
			a.f.s.o.Logger = a.e.Logger
			tc.setup(a)
			a.preempt(t)
			if got := a.leavingNames(); !slices.Equal(got, tc.leaving) {
				t.Errorf("counted as leaving: %v, want %v", got, tc.leaving)
			}
			if got := a.f.nomination("high"); got != tc.nominated {
				t.Errorf("high is nominated to %q in the queue, want %q", got, tc.nominated)
			}
			if a.f.s.pre.isRunning("uid-high") {
				t.Error("the preemption never ended")
			}
			if tc.log != "" && !strings.Contains(a.log.String(), tc.log) {
				t.Errorf("log %q lacks %q", a.log.String(), tc.log)
			}
		})
	}
}
