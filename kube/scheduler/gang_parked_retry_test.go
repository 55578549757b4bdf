package scheduler

import (
	"context"
	"errors"
	"testing"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// TestGangFailedMemberJoinsAParkedGroup: a member whose binding failed is
// given back to its group once the attempt's other bindings have ended.
// If the group's entity is parked by then (its other members were tried
// meanwhile and rejected by plugins whose events have nothing to do with
// the failed member), the member must not wait there with it: the gang is
// below minCount and the member, a binding error, is to be retried after
// its backoff. Parked, it waited for an event of the other members'
// plugins or the leftover flush (5 minutes).
func TestGangFailedMemberJoinsAParkedGroup(t *testing.T) {
	tests := []struct {
		name     string
		parked   bool // the group's entity is parked when the member is given back
		wantLocs []schedq.Location
	}{
		{"no entity: the member forms it, in backoff", false, []schedq.Location{schedq.InBackoff}},
		{"a parked entity: the group backs off", true, []schedq.Location{schedq.InBackoff, schedq.InActive}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, w := newGangFixture(t)
			nb := &namedBinder{done: map[string]func(error){}}
			f.s = mustNew(t, f.q, f.c, nb, warnReporter{f.r, w}, Options{})
			f.h.AddNode(node("a", 8000))
			f.h.AddPodGroup(podGroup("train", 3, 0))
			f.addGang("train", 3, 1000)
			if tc.parked {
				// A fourth member that fits nowhere: NodeAffinity, which no
				// pod event wakes, parks it.
				extra := memberPod("train-3", "train", 1000)
				extra.Spec.NodeSelector = map[string]string{"pool": "none"}
				f.h.AddPod(extra)
			}
			if out := f.once(); out.Result != Scheduled || len(nb.done) != 3 {
				t.Fatalf("outcome %+v, %d bindings", out, len(nb.done))
			}
			if tc.parked {
				if out := f.once(); out.Result != Unschedulable {
					t.Fatalf("the fourth member: %+v", out)
				}
				if loc := f.where("train-3"); loc != schedq.InUnschedulable {
					t.Fatalf("the fourth member is %v, want parked", loc)
				}
			}
			nb.done["train-1"](errors.New("etcd timeout"))
			nb.done["train-0"](nil)
			nb.done["train-2"](nil)
			loc := f.where("train-1")
			ok := false
			for _, l := range tc.wantLocs {
				ok = ok || loc == l
			}
			if !ok {
				t.Fatalf("the failed member is %v, want one of %v: it is retried after its backoff", loc, tc.wantLocs)
			}
			// Retried, it binds and completes the gang.
			f.q.Activate(framework.Key(pod("train-1", 0)))
			info, err := f.q.Pop(ended)
			if err != nil {
				t.Fatal(err)
			}
			if out := f.s.ScheduleOne(context.Background(), info); out.Result != Scheduled {
				t.Fatalf("the retry: %+v", out)
			}
			if _, ok := nb.done["train-1"]; !ok {
				t.Fatal("train-1 not bound again")
			}
		})
	}
}
