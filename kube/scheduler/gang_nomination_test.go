package scheduler

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
)

// TestGangTrialCountsAPlacedMembersRoomOnce: a member placed in a group
// attempt's trial takes its room in the snapshot; its nomination (its
// status.nominatedNodeName, taken over when it was added: written by a
// previous leader or another scheduler) must no longer
// count as taken for the members tried after it, or its room counts twice
// and a gang that fits exactly fails, attempt after attempt, as long as
// the nominations stand.
func TestGangTrialCountsAPlacedMembersRoomOnce(t *testing.T) {
	tests := []struct {
		name string
		noms []string // each member's nominated node, in member order
	}{
		{"no nominations", []string{"", "", "", ""}},
		{"each member nominated where it fits", []string{"a", "a", "b", "b"}},
		{"half nominated", []string{"a", "a", "", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := newGangFixture(t)
			f.h.AddNode(node("a", 2000))
			f.h.AddNode(node("b", 2000))
			f.h.AddPodGroup(podGroup("train", 4, 0))
			for i, nom := range tc.noms {
				p := memberPod(fmt.Sprintf("train-%d", i), "train", 1000)
				p.Status.NominatedNodeName = nom
				f.h.AddPod(p)
			}
			if out := f.once(); out.Result != Scheduled || len(f.b.binds) != 4 {
				t.Fatalf("outcome %+v, binds %v", out, f.b.binds)
			}
		})
	}
}

// TestGangMemberPlacedElsewhereFreesTheNominationsRoom: a member
// nominated to a (its status.nominatedNodeName, taken over when it was
// added) kept low out of a; placed on another node by its group's
// attempt, its nomination ends with the attempt, and low, parked behind
// that room, is woken for it, as for a lone pod assumed elsewhere
// (TestAssumedElsewhereFreesTheNominationsRoom). Placed on a, it takes
// the room and wakes nobody. Before, the queue dropped the nomination as
// the attempt ended and nobody was told: low waited for another event
// or the flush.
func TestGangMemberPlacedElsewhereFreesTheNominationsRoom(t *testing.T) {
	tests := []struct {
		name  string
		cpu   int64  // the member's request; a has 2000 free
		on    string // where it is placed
		woken bool
	}{
		{name: "placed on another node", cpu: 3000, on: "b", woken: true},
		{name: "placed on its nominated node", cpu: 1500, on: "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := newGangFixture(t)
			taint := v1.Taint{Key: "dedicated", Effect: v1.TaintEffectNoSchedule}
			f.h.AddNode(node("a", 4000))
			f.h.AddNode(node("b", 4000, taint)) // the member's only
			f.h.AddPod(runningPod("top", "a", 2000, 1000, t0))
			f.h.AddPod(prioPod("low", 1500, 1))
			info, ok := tryPop(f.q)
			if !ok || info.Item.Name != "low" {
				t.Fatalf("popped %v, want low", info.Item)
			}
			f.h.AddPodGroup(podGroup("g", 1, 100))
			m := memberPod("m", "g", tc.cpu)
			prio := int32(100)
			m.Spec.Priority = &prio
			m.Status.NominatedNodeName = "a" // restored in the queue as it is added
			m.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
			f.h.AddPod(m)
			if out := f.s.ScheduleOne(t.Context(), info); out.Result != Unschedulable || !slices.Contains(out.Plugins, "NodeResourcesFit") {
				t.Fatalf("low: %v by %v (%s), want Unschedulable by NodeResourcesFit: m's room on a", out.Result, out.Plugins, out.Message)
			}
			if loc := f.where("low"); loc != schedq.InUnschedulable {
				t.Fatalf("low %v, want parked", loc)
			}
			if out := f.once(); out.Result != Scheduled || f.b.binds["m"] != tc.on || f.nomination("m") != "" {
				t.Fatalf("group: %v (%s), binds %v, m nominated %q; want m bound to %s, its nomination ended",
					out.Result, out.Message, f.b.binds, f.nomination("m"), tc.on)
			}
			if woken := f.where("low") != schedq.InUnschedulable; woken != tc.woken {
				t.Fatalf("low woken %v after m was placed on %s, want %v", woken, tc.on, tc.woken)
			}
		})
	}
}
