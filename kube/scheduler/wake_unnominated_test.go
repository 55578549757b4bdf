package scheduler

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

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
	high := prioPod("high", 3000, 100)
	high.Status.NominatedNodeName = "a" // a previous leader's nomination
	f.parkLowBehind(t, high)
	if out := f.once(); out.Result != Unschedulable || f.nomination("high") != "" {
		t.Fatalf("high: %v, nominated %q (%s), want Unschedulable and its nomination cleared", out.Result, f.nomination("high"), out.Message)
	}
	if loc := f.where("low"); loc == schedq.InUnschedulable {
		t.Fatal("low still parked after high's nomination was cleared")
	}
}

// TestAssumedElsewhereFreesTheNominationsRoom: high, nominated to a (a
// previous leader's nomination), no longer fits there and is assumed on
// b, which only it tolerates. Its nomination to a kept low out of a; the
// assumption clears it, and low, parked behind that room, is woken for
// it, as when preemption gives a nomination up.
func TestAssumedElsewhereFreesTheNominationsRoom(t *testing.T) {
	f, _ := newPreemptFixture(t)
	taint := v1.Taint{Key: "dedicated", Effect: v1.TaintEffectNoSchedule}
	f.h.AddNode(node("a", 4000))
	f.h.AddNode(node("b", 4000, taint))
	f.h.AddPod(runningPod("top", "a", 2000, 1000, t0))
	f.h.AddPod(prioPod("low", 1500, 1))
	high := prioPod("high", 3000, 100)
	high.Status.NominatedNodeName = "a"
	high.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
	f.parkLowBehind(t, high)
	if out := f.once(); out.Result != Scheduled || out.Node != "b" || f.nomination("high") != "" {
		t.Fatalf("high: %v on %q, nominated %q (%s), want assumed on b, its nomination cleared", out.Result, out.Node, f.nomination("high"), out.Message)
	}
	if loc := f.where("low"); loc == schedq.InUnschedulable {
		t.Fatal("low still parked after high, assumed on b, gave up its nomination to a")
	}
}

// TestRenominatedPreemptorFreesTheOldNominationsRoom: high, nominated to
// a (a previous leader's nomination), no longer fits there and no pod of
// lower priority on a can make room for it, so it preempts on b: its
// nomination moves from a to b. The room it held on a kept low out; it is
// free now, and low, parked behind it, is woken for it, as kube-scheduler
// v1.37.2 moves the pods of lower or equal priority when a pod's
// nominatedNodeName changes. The victim's eviction is held, so that its
// deletion does not wake low instead (with a wake budget it would not
// either: b's room goes to high first).
func TestRenominatedPreemptorFreesTheOldNominationsRoom(t *testing.T) {
	f, e := newPreemptFixture(t)
	e.hold = true
	f.h.AddNode(node("a", 4000))
	f.h.AddNode(node("b", 4000))
	f.h.AddPod(runningPod("top", "a", 2000, 1000, t0))
	f.h.AddPod(runningPod("victim", "b", 4000, 0, t0))
	f.h.AddPod(prioPod("low", 1500, 1))
	high := prioPod("high", 3000, 100)
	high.Status.NominatedNodeName = "a"
	f.parkLowBehind(t, high)
	if out := f.once(); out.Result != Unschedulable || out.Nominated != "b" || f.nomination("high") != "b" {
		t.Fatalf("high: %v, nominated %q in the outcome and %q in the queue (%s), want b, preempting victim",
			out.Result, out.Nominated, f.nomination("high"), out.Message)
	}
	if loc := f.where("low"); loc == schedq.InUnschedulable {
		t.Fatal("low still parked after high's nomination moved from a to b")
	}
}

// parkLowBehind pops low, the pod next in line, then adds high (its
// nomination set) and runs low's attempt, which must leave low parked,
// rejected by NodeResourcesFit: the room high's nomination holds.
func (f *fixture) parkLowBehind(t *testing.T, high *v1.Pod) {
	t.Helper()
	info, ok := tryPop(f.q)
	if !ok || info.Item.Name != "low" {
		t.Fatalf("popped %v, want low", info.Item)
	}
	f.h.AddPod(high)
	if out := f.s.ScheduleOne(t.Context(), info); out.Result != Unschedulable || !slices.Contains(out.Plugins, "NodeResourcesFit") {
		t.Fatalf("low: %v by %v (%s), want Unschedulable by NodeResourcesFit: high's room", out.Result, out.Plugins, out.Message)
	}
	if loc := f.where("low"); loc != schedq.InUnschedulable {
		t.Fatalf("low %v, want parked", loc)
	}
}
