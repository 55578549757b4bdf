package schedq

import (
	"testing"
	"time"
)

// TestBudgetOffersInFairOrder: under fairness the pop order interleaves
// the tenants by usage, and an event's room goes to the items in pop
// order. A tenant that has used the queue less must get the room first,
// not wait, deferred, behind every parked item of a busier tenant that
// arrived before it: the budget decides which items get into activeQ at
// all, so an order by arrival there would undo fairness for good while
// room comes in small pieces.
func TestBudgetOffersInFairOrder(t *testing.T) {
	tests := []struct {
		name  string
		room  int
		woken []string
		kept  []string
	}{
		{"room for one: the tenant that used less", 1, []string{"b1"}, []string{"a1", "a2", "a3", "b2"}},
		{"room for two: one of each", 2, []string{"b1", "a1"}, []string{"a2", "a3", "b2"}},
		{"room for three: b again, having still used less", 3, []string{"b1", "a1", "b2"}, []string{"a2", "a3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fairBy(nil), func(c *Config[string, job]) {
				c.Budget = func(ev Event, _, newObj any) (Budget[job], bool) { m, ok := newObj.(*machine); return m, ok }
				c.Hints["Fit"] = []EventHint[job]{{Event: evMachineAdd}}
			})
			// Tenant a has used the queue more: 3 pops to b's 2 (its
			// items, parked, arrived first).
			h.add(lj("a1", 0, "a"), lj("a2", 0, "a"), lj("a3", 0, "a"))
			h.add(lj("b1", 0, "b"), lj("b2", 0, "b"))
			for range 5 {
				h.fail(h.popName(), "Fit")
			}
			h.add(lj("a0", 0, "a")) // one more pop charged to a, done
			h.c.Done(h.pop(), h.now)
			h.step(time.Minute)
			h.move(evMachineAdd, &machine{size: tc.room})
			for _, name := range tc.woken {
				if got := h.where(name); got == InUnschedulable {
					t.Errorf("%s stayed parked, want woken (woken: %v)", name, tc.woken)
				}
			}
			for _, name := range tc.kept {
				h.want(name, InUnschedulable)
			}
		})
	}
}
