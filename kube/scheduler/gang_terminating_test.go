package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestReleasedGangIsScheduledWhole: a gang released below its minCount
// (its 2 bound members deleted) must then be scheduled whole. Members
// being deleted (deletionTimestamp set: a graceful deletion, which lasts
// their grace period) are going: they must not count towards minCount.
// Counted, the next attempt needed only 2 of the 4 members to fit, bound
// them beside the members being deleted, and the gang was below its
// minCount again once those were gone.
func TestReleasedGangIsScheduledWhole(t *testing.T) {
	tests := []struct {
		name     string
		graceful bool // the released members terminate for a while first
	}{
		{"members deleted at once", false},
		{"members terminating for their grace period", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _, rel, now := partialGang(t, true)
			f.once()
			*now = now.Add(30 * time.Second)
			f.wake("small-1")
			f.once()
			if got := rel.got(); len(got) != 1 {
				t.Fatalf("releases %v, want one", got)
			}
			released := make([]*v1.Pod, 2)
			for i := range released {
				p := owned(memberPod(fmt.Sprintf("train-%d", i), "train", 1000))
				p.UID, p.Spec.NodeName = types.UID(p.Name), "n1"
				released[i] = p
			}
			for _, p := range released {
				if tc.graceful {
					going := p.DeepCopy()
					going.DeletionTimestamp = &metav1.Time{Time: *now}
					f.h.UpdatePod(p, going)
				} else {
					f.h.DeletePod(p)
				}
			}
			// The Job recreates them; a node with room for 2 members comes.
			for i := range 2 {
				f.h.AddPod(owned(memberPod(fmt.Sprintf("train-%d-new", i), "train", 1000)))
			}
			f.h.AddNode(node("n3", 2000))
			out := f.once()
			if tc.graceful {
				if out.Result == Scheduled || len(f.b.binds) != 0 {
					t.Fatalf("bound %v beside the members being deleted (%+v): 2 of minCount 4 once they are gone", f.b.binds, out)
				}
				for _, p := range released {
					f.h.DeletePod(p) // gone: n1 is free
				}
				out = f.once()
			}
			if out.Result != Scheduled || len(f.b.binds) != 4 {
				t.Fatalf("the released gang, with room for all of it: %+v, bound %v", out, f.b.binds)
			}
			if got := rel.got(); !slices.Equal(got[0], []string{"train-0", "train-1"}) || len(got) != 1 {
				t.Fatalf("releases %v", got)
			}
		})
	}
}
