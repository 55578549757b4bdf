package schedq

import (
	"fmt"
	"testing"
)

// TestFlightsCompacted: attempts ending out of pop order leave holes in
// the flights' slots, which are compacted away; an attempt that outlives
// the compaction still sees the events of its flight, and one popped
// after an event does not.
func TestFlightsCompacted(t *testing.T) {
	h := newHarness(t)
	const n = 100
	for i := range n {
		h.add(mk(fmt.Sprint(i), int32(n-i)))
	}
	popped := map[string]Attempt[string, job]{}
	for range n - 1 {
		a := h.pop()
		popped[a.Item.name] = a
	}
	h.move(evMachineAdd, 2) // seen by the n-1 in flight: Fit would now pass
	last := h.pop()         // popped after the event: it never saw it
	for i := 1; i < n-1; i++ {
		if i == n/2 {
			continue
		}
		if err := h.c.Done(popped[fmt.Sprint(i)], h.now); err != nil {
			t.Fatal(err)
		}
		h.check()
	}
	if got, max := len(h.c.flights.slots), 2*h.c.flights.len()+32; got > max {
		t.Fatalf("%d slots for %d flights, want at most %d", got, h.c.flights.len(), max)
	}
	h.fail("0", "Fit")
	h.fail(fmt.Sprint(n/2), "Fit")
	h.fail(last.Item.name, "Fit")
	h.want("0", InBackoff)
	h.want(fmt.Sprint(n/2), InBackoff)
	h.want(last.Item.name, InUnschedulable)
}
