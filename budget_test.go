package schedq

import (
	"strings"
	"testing"
	"time"
)

// machine is a test budget that measures its room afresh: a machine with
// room for size items, of which placed are bound there and reserved are
// promised to woken items.
type machine struct{ size, placed, reserved int }

func (m *machine) Take(job) bool {
	if m.placed+m.reserved >= m.size {
		return false
	}
	m.reserved++
	return true
}

func (m *machine) Return(job) bool {
	m.reserved--
	return true
}

// Key says the room is the event's own (Budget.Key).
func (*machine) Key() string { return "" }

// budgetHarness parks the named items (priority as given) on Fit, and
// makes every machine event offer the room of the machine it carries.
func budgetHarness(t *testing.T, items ...job) *harness {
	h := newHarness(t, func(c *Config[string, job]) {
		c.Budget = func(ev Event, _, newObj any) (Budget[job], bool) {
			m, ok := newObj.(*machine)
			return m, ok
		}
		c.Hints["Fit"] = []EventHint[job]{{Event: evMachineAdd}, {Event: evMachineTaint}}
	})
	h.add(items...)
	for range items {
		h.fail(h.popName(), "Fit")
	}
	h.step(time.Minute) // every backoff is over
	return h
}

func (h *harness) wantDeferred(name, by string) {
	h.t.Helper()
	x, err := h.c.Explain(name, h.now)
	if err != nil || x.DeferredBy != by {
		h.t.Fatalf("%s: deferred by %q (%v), want %q", name, x.DeferredBy, err, by)
	}
}

func TestBudgetWakesInPopOrder(t *testing.T) {
	h := budgetHarness(t, mk("a", 1), mk("b", 5), mk("c", 3), mk("d", 4), mk("e", 2))
	h.move(evMachineAdd, &machine{size: 2})
	for name, loc := range map[string]Location{"b": InActive, "d": InActive, "c": InUnschedulable, "e": InUnschedulable, "a": InUnschedulable} {
		h.want(name, loc)
	}
	h.wantDeferred("c", "MachineAdd")
	h.wantDeferred("b", "")
	if x, _ := h.c.Explain("c", h.now); x.Reason == "" || x.String() == "" {
		t.Fatal("no reason for a deferred item")
	}
}

// TestBudgetRoomComesBack: room a woken item held is offered again, in
// pop order, when its attempt fails, when it is deleted, and when it ends
// having used none; once no woken item holds room, what is still deferred
// stays parked for the next event.
func TestBudgetRoomComesBack(t *testing.T) {
	m := &machine{size: 1}
	h := budgetHarness(t, mk("a", 1), mk("b", 3), mk("c", 2), mk("d", 4))
	h.move(evMachineAdd, m)
	h.want("d", InActive)
	h.wantDeferred("b", "MachineAdd")

	h.attemptFail("d", "Fit") // its attempt failed: the room is unused
	h.want("d", InUnschedulable)
	h.want("b", InActive)
	h.wantDeferred("d", "") // parked again by its own failure, not deferred

	if err := h.c.Delete("b", h.now); err != nil { // gone before its attempt
		t.Fatal(err)
	}
	h.check()
	h.want("c", InActive)

	a := h.pop() // c, bound elsewhere: it used none of this machine's room
	if err := h.c.Done(a, h.now); err != nil {
		t.Fatal(err)
	}
	h.check()
	h.want("a", InActive)

	a = h.pop() // a, bound here
	m.placed++
	if err := h.c.Done(a, h.now); err != nil {
		t.Fatal(err)
	}
	h.check()
	h.want("d", InUnschedulable) // no room left and no woken item: settled
	h.wantDeferred("d", "")
	h.step(time.Minute)
	h.move(evMachineAdd, &machine{size: 1}) // the next machine wakes it
	h.want("d", InActive)
}

// TestBudgetFailureToBackoffReturnsRoom: a woken item whose attempt fails
// but goes to backoff (an event during the attempt) gives its room back too.
func TestBudgetFailureToBackoffReturnsRoom(t *testing.T) {
	h := budgetHarness(t, mk("a", 2), mk("b", 1))
	h.move(evMachineAdd, &machine{size: 1})
	h.want("a", InActive)
	h.wantDeferred("b", "MachineAdd")
	a := h.pop()
	h.move(evMachineTaint, &machine{size: 0}) // during the attempt; no room
	if err := h.c.Requeue(a, Failure{RejectedBy: []string{"Fit"}}, h.now); err != nil {
		t.Fatal(err)
	}
	h.check()
	h.want("a", InBackoff) // the taint event sends it to backoff, not parking
	h.want("b", InActive)  // and its room went to b
}

// TestBudgetGateKeepsNoRoom: an item that a PreEnqueue check parks again
// on its way out holds no room; the next deferred item gets it.
func TestBudgetGateKeepsNoRoom(t *testing.T) {
	h := budgetHarness(t, mk("a", 2), mk("b", 1))
	h.c.Update(mk("a", 2), job{name: "a", prio: 2, gated: true}, h.now) // gated while parked: stays parked on Fit
	h.check()
	h.move(evMachineAdd, &machine{size: 1})
	h.want("a", InGated)
	h.want("b", InActive)
}

// TestBudgetOff: without Config.Budget every item a hint accepts wakes.
func TestBudgetOff(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 1), mk("b", 2))
	h.attemptFail("b", "Fit")
	h.attemptFail("a", "Fit")
	h.step(time.Minute)
	h.move(evMachineAdd, &machine{size: 1})
	h.want("a", InActive)
	h.want("b", InActive)
}

// host is a machine whose room events share: two events on it (a join, a
// change) offer the same room. sizes gives each job's size.
type host struct {
	size, promised int
	sizes          map[string]int
}

// hostRoom is one event's view of a host's room, shared under the host's key.
type hostRoom struct{ h *host }

func (r hostRoom) Key() string { return "host" }

func (r hostRoom) Take(j job) bool {
	n := r.h.sizes[j.name]
	if r.h.promised+n > r.h.size {
		return false
	}
	r.h.promised += n
	return true
}

func (r hostRoom) Return(j job) bool { r.h.promised -= r.h.sizes[j.name]; return true }

// TestBudgetSharedRoomAcrossEvents: an item that one event deferred waits
// for the room that another event's woken item holds on the same key, and
// gets it when that item's attempt fails, whichever event woke it.
func TestBudgetSharedRoomAcrossEvents(t *testing.T) {
	for _, slow := range []bool{false, true} {
		hs := &host{size: 2, sizes: map[string]int{"p1": 1, "p2": 2, "p3": 1}}
		h := newHarness(t, func(c *Config[string, job]) {
			c.Budget = func(ev Event, _, newObj any) (Budget[job], bool) { r, ok := newObj.(hostRoom); return r, ok }
			c.Hints["Fit"] = []EventHint[job]{{Event: evMachineAdd}, {Event: evMachineTaint}}
		})
		h.c.Tick(h.now)
		h.add(mk("p3", 9))
		h.attemptFail("p3", "Fit")
		h.step(time.Minute)
		h.move(evMachineTaint, hostRoom{hs}) // wakes p3, which holds 1 of 2
		h.add(mk("p1", 5), mk("p2", 4))
		a3 := h.pop()
		h.attemptFail("p1", "Fit")
		h.attemptFail("p2", "Fit")
		h.step(time.Minute)
		h.c.Tick(h.now)
		h.move(evMachineAdd, hostRoom{hs}) // wakes p1; p2 (size 2) does not fit beside p3
		h.wantDeferred("p2", "MachineAdd")
		h.attemptFail("p1", "Fit") // its room comes back, but p2 still does not fit beside p3
		h.wantDeferred("p2", "MachineAdd")
		if slow { // p3's attempt outlives a flush
			h.step(3 * time.Second)
			h.c.Tick(h.now)
			h.wantDeferred("p2", "MachineAdd")
		}
		if err := h.c.Requeue(a3, Failure{RejectedBy: []string{"Fit"}}, h.now); err != nil {
			t.Fatal(err)
		}
		h.check()
		if got := h.where("p2"); got != InActive && got != InBackoff {
			t.Fatalf("slow=%v: p2 is %v with the host empty, want woken", slow, got)
		}
	}
}

// TestBudgetGatedWhileDeferred: a deferred item that a gate then holds
// waits for its gate, not for room.
func TestBudgetGatedWhileDeferred(t *testing.T) {
	h := budgetHarness(t, mk("a", 2), mk("b", 1))
	h.move(evMachineAdd, &machine{size: 1})
	h.wantDeferred("b", "MachineAdd")
	h.c.Update(mk("b", 1), job{name: "b", prio: 1, gated: true}, h.now)
	h.c.Activate([]string{"b"}, h.now)
	h.want("b", InGated)
	h.wantDeferred("b", "")
	h.check()
}

// TestBudgetNotOK: a Config.Budget that answers ok false sets no limit,
// as its doc says, whatever budget it returns with it: a typed nil (as
// budgetHarness returns for an event without a machine), or one that has
// no room.
func TestBudgetNotOK(t *testing.T) {
	tests := []struct {
		name string
		room Budget[job]
	}{
		{"typed nil", (*machine)(nil)},
		{"a budget without room", &machine{size: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := budgetHarness(t, mk("a", 1), mk("b", 5))
			h.c.cfg.Budget = func(Event, any, any) (Budget[job], bool) { return tc.room, false }
			h.move(evMachineAdd, nil)
			h.want("a", InActive)
			h.want("b", InActive)
			h.wantDeferred("a", "")
		})
	}
}

// TestBudgetExplainSaysWhoHoldsTheRoom: Explain of a deferred item must
// not say that items ahead of it took its room when the room is held by
// an item behind it in pop order, woken earlier by another event of the
// same room: it says the room was not enough beside what the items woken
// before it hold.
func TestBudgetExplainSaysWhoHoldsTheRoom(t *testing.T) {
	hs := &host{size: 1, sizes: map[string]int{"low": 1, "high": 1}}
	h := newHarness(t, func(c *Config[string, job]) {
		c.Budget = func(ev Event, _, newObj any) (Budget[job], bool) { r, ok := newObj.(hostRoom); return r, ok }
		c.Hints["Fit"] = []EventHint[job]{{Event: evMachineAdd}, {Event: evMachineTaint}}
	})
	h.add(mk("low", 1))
	h.attemptFail("low", "Fit")
	h.step(time.Minute)
	h.move(evMachineTaint, hostRoom{hs}) // wakes low, which holds the host
	h.add(mk("high", 9))
	h.attemptFail("high", "Fit")
	h.step(time.Minute)
	h.move(evMachineAdd, hostRoom{hs}) // high does not fit beside low
	h.wantDeferred("high", "MachineAdd")
	x, err := h.c.Explain("high", h.now)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{x.Reason, x.String()} {
		if strings.Contains(text, "items ahead") {
			t.Errorf("Explain says items ahead of high took its room; low, behind it, holds it:\n%s", text)
		}
		if !strings.Contains(text, "woken before it") {
			t.Errorf("Explain does not say that items woken before it hold the room:\n%s", text)
		}
	}
}
