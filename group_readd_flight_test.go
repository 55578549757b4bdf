package schedq

import (
	"slices"
	"testing"
	"time"
)

// TestMemberReaddedInFlightKeepsNewPriority checks that a member added
// again during its group's attempt, in the same group, is tried by its
// new item's priority in the group's next attempt, as an Update would
// have it.
func TestMemberReaddedInFlightKeepsNewPriority(t *testing.T) {
	tests := []struct {
		name   string
		change func(h *harness, nu job)
	}{
		{"added again", func(h *harness, nu job) { h.c.Add(nu, h.now) }},
		{"updated", func(h *harness, nu job) { h.c.Update(gm("g", "a", 1), nu, h.now) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, groupsOn, func(c *Config[string, job]) {
				c.Less, c.Priority = nil, jobPrio
			})
			h.setGroup("g", 2, 0)
			h.add(gm("g", "a", 1), gm("g", "b", 5))
			a := h.popGroup("g")
			if got := memberNames(a); !slices.Equal(got, []string{"b", "a"}) {
				t.Fatalf("first attempt tries %q, want [b a]", got)
			}
			tc.change(h, gm("g", "a", 10))
			h.check()
			h.requeueGroup(a, Failure{})
			h.step(time.Minute)
			h.c.Tick(h.now)
			h.c.Tick(h.now.Add(time.Second))
			a = h.popGroup("g")
			if got := memberNames(a); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("second attempt tries %q, want [a b] (a's new priority 10 over b's 5)", got)
			}
		})
	}
}
