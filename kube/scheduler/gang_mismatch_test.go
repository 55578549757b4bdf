package scheduler

import (
	"strings"
	"testing"

	"github.com/schedq/schedq/kube/framework"
)

// TestPriorityMismatchWarnedOncePerChange: a member whose priority is not
// its group's is warned of it (PriorityMismatch) once, not at every
// attempt of its group; a new priority of the PodGroup is a new mismatch,
// warned once again. Before, every attempt of a gang that could not fit
// warned each such member again.
func TestPriorityMismatchWarnedOncePerChange(t *testing.T) {
	for _, tc := range []struct {
		name     string
		attempts int
		// raiseAt, if not 0, is the attempt before which the PodGroup's
		// priority changes from 100 to 200.
		raiseAt int
		want    int // warnings, for the 2 members
	}{
		{name: "one attempt", attempts: 1, want: 2},
		{name: "repeated attempts", attempts: 4, want: 2},
		{name: "the group's priority changed", attempts: 4, raiseAt: 3, want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, w := newGangFixture(t)
			f.h.AddNode(node("a", 500)) // too small: the gang fails every time
			f.h.AddPodGroup(podGroup("mixed", 2, 100))
			f.addGang("mixed", 2, 1000)
			for i := range tc.attempts {
				if i > 0 {
					if i == tc.raiseAt {
						f.h.UpdatePodGroup(podGroup("mixed", 2, 100), podGroup("mixed", 2, 200))
					}
					f.q.Activate(framework.Key(pod("mixed-0", 0)))
				}
				if out := f.once(); out.Result != Unschedulable {
					t.Fatalf("attempt %d: outcome %+v", i+1, out)
				}
			}
			n := 0
			for _, got := range w.got {
				if strings.Contains(got, "PriorityMismatch") {
					n++
				}
			}
			if n != tc.want {
				t.Fatalf("%d PriorityMismatch warnings after %d attempts, want %d: %q", n, tc.attempts, tc.want, w.got)
			}
		})
	}
}
