package schedq

import "testing"

// TestMemberReaddedInFlightKeepsNomination checks that the end of a group
// attempt, which drops the copy of a member deleted during it, keeps the
// nomination of the member added again under the same key meanwhile: that
// item has not left the queue, as a lone item's Requeue keeps it. Done of
// the whole attempt drops it, as a lone item's Done does.
func TestMemberReaddedInFlightKeepsNomination(t *testing.T) {
	tests := []struct {
		name string
		end  func(h *harness, a Attempt[string, job])
		want string
	}{
		{"requeued", func(h *harness, a Attempt[string, job]) {
			h.requeueGroup(a, Failure{RejectedBy: []string{"Fit"}})
		}, "n1"},
		{"done", func(h *harness, a Attempt[string, job]) {
			if err := h.c.Done(a, h.now); err != nil {
				h.t.Fatal(err)
			}
			h.check()
		}, ""},
		{"done members", func(h *harness, a Attempt[string, job]) {
			h.doneMembers(a, 1)
		}, "n1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, groupsOn)
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0), gm("g", "b", 0))
			a := h.popGroup("g")
			if err := h.c.Delete("a", h.now); err != nil {
				t.Fatal(err)
			}
			h.add(gm("g", "a", 0))
			if err := h.c.Nominate("a", "n1"); err != nil {
				t.Fatal(err)
			}
			tc.end(h, a)
			if target, _ := h.c.Nomination("a"); target != tc.want {
				t.Fatalf("the re-added member's nomination is %q, want %q", target, tc.want)
			}
		})
	}
}
