package scheduler

import (
	"slices"
	"testing"

	"github.com/schedq/schedq"
)

// TestFailedPreemptionFreesTheNominationsRoom: a pod whose nomination is
// cleared because preemption cannot help it gives back the room the
// nomination kept from pods of its priority or lower; kube-scheduler
// v1.37.2 wakes them (the pod's nominatedNodeName changing moves them
// with an AssignedPodDelete event of it), and so must schedq.
func TestFailedPreemptionFreesTheNominationsRoom(t *testing.T) {
	f, _ := newPreemptFixture(t)
	f.h.AddNode(node("a", 4000))
	f.h.AddPod(runningPod("top", "a", 2000, 1000, t0))
	f.h.AddPod(prioPod("low", 1500, 1))
	info, ok := tryPop(f.q)
	if !ok || info.Item.Name != "low" {
		t.Fatalf("popped %v, want low", info.Item)
	}
	high := prioPod("high", 3000, 100)
	high.Status.NominatedNodeName = "a" // a previous leader's nomination
	f.h.AddPod(high)
	if out := f.s.ScheduleOne(t.Context(), info); out.Result != Unschedulable || !slices.Contains(out.Plugins, "NodeResourcesFit") {
		t.Fatalf("low: %v by %v (%s), want Unschedulable by NodeResourcesFit: high's room", out.Result, out.Plugins, out.Message)
	}
	if loc := f.where("low"); loc != schedq.InUnschedulable {
		t.Fatalf("low %v, want parked", loc)
	}
	if out := f.once(); out.Result != Unschedulable || f.nomination("high") != "" {
		t.Fatalf("high: %v, nominated %q (%s), want Unschedulable and its nomination cleared", out.Result, f.nomination("high"), out.Message)
	}
	if loc := f.where("low"); loc == schedq.InUnschedulable {
		t.Fatal("low still parked after high's nomination was cleared")
	}
}
