package scheduler

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedq/schedq"
)

// errFilter is an out-of-tree Filter plugin that fails with an error (not
// Unschedulable) for the pods labelled err=yes: a plugin that could not
// decide.
type errFilter struct{}

func (errFilter) Name() string { return "ErrFilter" }

func (errFilter) Filter(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ fwk.NodeInfo) *fwk.Status {
	if p.Labels["err"] == "yes" {
		return fwk.AsStatus(errors.New("device registry unreachable"))
	}
	return nil
}

// TestGangMemberErrorFailsTheGroup: a member's plugin error (an Error
// status, not Unschedulable) fails the whole group attempt with an error,
// as kube-scheduler v1.37.2's pod group cycle does (it stops at the
// member and fails the group: "failed to schedule other pod from a pod
// group"): nothing is bound, and the group goes to the error backoff.
// Before, the trial went on, and the other members were bound when they
// reached minCount without it.
func TestGangMemberErrorFailsTheGroup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		erring int // the member whose filter errs
	}{
		{name: "first member", erring: 0},
		{name: "middle member", erring: 1},
		{name: "last member", erring: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFilterFixture(t, errFilter{})
			f.h.AddNode(zonedNode("n1", "a"))
			f.addFWGang("g", 2, 3, func(i int, p *v1.Pod) {
				if i == tc.erring {
					p.Labels = map[string]string{"err": "yes"}
				}
			})
			out := f.once()
			if out.Result != Error || !strings.Contains(out.Message, "device registry unreachable") {
				t.Fatalf("outcome %+v, want an error naming the plugin's", out)
			}
			if len(f.b.binds) != 0 {
				t.Fatalf("binds %v, want none", f.b.binds)
			}
			for _, name := range []string{"g-0", "g-1", "g-2"} {
				if loc := f.where(name); loc != schedq.InBackoff {
					t.Errorf("%s is %v, want backing off with its group", name, loc)
				}
			}
			if n := len(f.c.assumed); n != 0 {
				t.Fatalf("%d pods left assumed", n)
			}
			if len(f.r.failures) != 3 {
				t.Fatalf("reported %q, want each member once", f.r.failures)
			}
			erring := "member default/g-" + string(rune('0'+tc.erring)) + " failed"
			for _, r := range f.r.failures {
				if !strings.Contains(r, ": SchedulerError: group default/g: scheduling "+erring) || !strings.Contains(r, "device registry unreachable") {
					t.Errorf("reported %q, want SchedulerError with the group's error, naming %s", r, erring)
				}
			}
		})
	}
}
