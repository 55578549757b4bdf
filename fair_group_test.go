package schedq

import (
	"slices"
	"testing"
)

// TestFairGroups: a group is one entry in activeQ, of the tenant of the
// member that created it (its label here), charged once per pop; a
// member's position is its group's, and Pending lists the group once,
// as that member.
func TestFairGroups(t *testing.T) {
	h := newHarness(t, fairBy(nil), groupsOn)
	h.setGroup("g", 2, 0)
	h.add(lj("a1", 0, "a"), lj("a2", 0, "a"))
	h.add(job{name: "m1", label: "b", group: "g"}, job{name: "m2", label: "b", group: "g"})
	h.add(lj("b1", 0, "b"))
	h.check()
	x, err := h.c.Explain("m2", h.now)
	if err != nil || x.Position == nil || x.Position.Ahead != 1 {
		t.Fatalf("member m2: %v, position %+v; want its group's: 1 ahead (a1)", err, x.Position)
	}
	p := h.c.Pending(PendingOptions[job]{}, h.now)
	if got := pendingKeys(p); !slices.Equal(got, []string{"a1", "m1", "a2", "b1"}) {
		t.Errorf("Pending %v, want a1, the group as m1, a2, b1", got)
	}
	if a := h.pop(); a.Item.name != "a1" {
		t.Fatalf("popped %q", a.Item.name)
	}
	h.popGroup("g")
	if n := h.c.fair.tenants["b"].pops; n != 1 {
		t.Errorf("tenant b charged %d pops for its group, want 1", n)
	}
	if got := h.popName(); got != "a2" {
		t.Errorf("after the group, popped %q, want a2 (b used its turn)", got)
	}
}
