package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// TestWakeBudgetCountsNominatedRoom: the room a pod's deletion frees on
// a node may be held by a preemptor nominated there. kube-scheduler's
// filters count the pods nominated to a node of the judged pod's
// priority or higher as if they were on it, so a pod of lower priority
// woken for that room would be rejected again: the wake budget must
// count that room as taken, and count it once only. A nominee of the
// pod's own hint class is not counted (the budget judges a class as one
// pod, and must not keep the nominee itself out with its own room).
func TestWakeBudgetCountsNominatedRoom(t *testing.T) {
	tests := []struct {
		name      string
		nominee   *v1.Pod // nominated to n1, queued in activeQ
		to        string  // the nominee's node, n1 unless set
		park      bool    // the nominee is parked too
		first     bool    // and woken first, by an event of its own on n1
		elsewhere bool    // and woken first, by an event of its own on n2 (a promise there, not on n1)
		woken     bool    // whether low (2000m, priority 1) is woken
	}{
		{name: "a higher-priority nominee holds the room", nominee: prioPod("high", 2500, 100)},
		{name: "an equal-priority nominee holds the room", nominee: prioPod("peer", 2500, 1)},
		{name: "a lower-priority nominee does not", nominee: prioPod("lower", 2500, 0), woken: true},
		{name: "a nominee to another node does not", nominee: prioPod("high", 2500, 100), to: "n2", woken: true},
		{name: "a nominee woken first holds a promise, not twice the room", nominee: prioPod("high", 1500, 100), park: true, first: true, woken: true},
		{name: "a nominee of low's class does not keep the class out", nominee: prioPod("twin", 2000, 1), park: true, woken: true},
		{name: "a nominee holding a promise on another node still holds its room", nominee: prioPod("high", 2500, 100), park: true, elsewhere: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fw := defaultFramework(t)
			c := NewCache()
			c.AddNode(node("n1", 4500))
			c.AddNode(node("n2", 4000))
			top := runningPod("top", "n1", 3500, 1000, t0) // its deletion frees 3500m
			for _, p := range []*v1.Pod{top, runningPod("rest", "n1", 1000, 1000, t0)} {
				if err := c.AddPod(p); err != nil {
					t.Fatal(err)
				}
			}
			full := runningPod("full", "n2", 4000, 1000, t0)
			if err := c.AddPod(full); err != nil {
				t.Fatal(err)
			}
			q := budgetQueue(t, fw, c)
			low := prioPod("low", 2000, 1)
			parkAfterFit(t, q, low)
			nominee := tc.nominee
			if tc.park {
				parkAfterFit(t, q, nominee)
			} else if err := q.Add(nominee); err != nil {
				t.Fatal(err)
			}
			to := tc.to
			if to == "" {
				to = "n1"
			}
			if err := q.Nominate(framework.Key(nominee), to); err != nil {
				t.Fatal(err)
			}
			if tc.elsewhere {
				c.RemovePod(framework.Key(full))
				only := func(info *schedq.Info[*v1.Pod]) bool { return info.Item == nominee }
				if err := q.Move(clusterevent.AssignedPodDelete, full, nil, only); err != nil {
					t.Fatal(err)
				}
				if _, loc, _ := q.Get(framework.Key(nominee)); loc == schedq.InUnschedulable {
					t.Fatal("the nominee was not woken by n2's event")
				}
			}
			c.RemovePod(framework.Key(top))
			if tc.first {
				only := func(info *schedq.Info[*v1.Pod]) bool { return info.Item == nominee }
				if err := q.Move(clusterevent.AssignedPodDelete, top, nil, only); err != nil {
					t.Fatal(err)
				}
				if _, loc, _ := q.Get(framework.Key(nominee)); loc == schedq.InUnschedulable {
					t.Fatal("the nominee was not woken by its own event")
				}
			}
			if err := q.Move(clusterevent.AssignedPodDelete, top, nil, nil); err != nil {
				t.Fatal(err)
			}
			_, loc, ok := q.Get(framework.Key(low))
			if !ok {
				t.Fatal("low is gone")
			}
			if woken := loc != schedq.InUnschedulable; woken != tc.woken {
				t.Fatalf("low woken %v (%v), want %v", woken, loc, tc.woken)
			}
		})
	}
}
