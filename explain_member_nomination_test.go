package schedq

import (
	"strings"
	"testing"
)

// TestExplainMemberNomination checks that Explain of a group member gives
// the member's own nomination, wherever the member waits, and not that of
// the item whose key is the group entity's (the zero key).
func TestExplainMemberNomination(t *testing.T) {
	tests := []struct {
		name  string
		setup func(h *harness)
		where Location
	}{
		{"in its entity", func(h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "m", 0))
		}, InActive},
		{"in flight", func(h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "m", 0))
			h.popGroup("g")
		}, InFlight},
		{"incomplete", func(h *harness) {
			h.add(gm("g", "m", 0))
		}, InIncomplete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, groupsOn)
			h.add(mk("", -5)) // the zero key, nominated elsewhere; pops last
			if err := h.c.Nominate("", "elsewhere"); err != nil {
				t.Fatal(err)
			}
			tc.setup(h)
			if err := h.c.Nominate("m", "node-1"); err != nil {
				t.Fatal(err)
			}
			x, err := h.c.Explain("m", h.now)
			if err != nil {
				t.Fatal(err)
			}
			if x.Location != tc.where {
				t.Fatalf("location %v, want %v", x.Location, tc.where)
			}
			if x.NominatedTarget != "node-1" || !strings.HasSuffix(x.Reason, "; nominated to node-1") {
				t.Fatalf("NominatedTarget %q, reason %q; want node-1", x.NominatedTarget, x.Reason)
			}
		})
	}
}
