package scheduler

import (
	"fmt"
	"testing"
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
