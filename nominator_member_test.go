package schedq

import (
	"errors"
	"testing"
)

// TestNominateMemberDeletedDuringAttempt checks Nominate's rule for a
// group member deleted during its group's attempt, as for a lone item:
// it can no longer be nominated.
func TestNominateMemberDeletedDuringAttempt(t *testing.T) {
	h := newHarness(t, groupsOn)
	h.setGroup("g", 1, 0)
	h.add(gm("g", "a", 0), gm("g", "b", 0))
	h.popGroup("g")
	if err := h.c.Delete("a", h.now); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Nominate("a", "n1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Nominate of a member deleted in flight: %v, want ErrNotFound", err)
	}
	h.check()
	if target, ok := h.c.Nomination("a"); ok {
		t.Fatalf("deleted member nominated to %q", target)
	}
}
