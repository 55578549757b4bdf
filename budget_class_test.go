package schedq

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// sized is a test budget whose items ask for room by label (big: 2,
// small: 1, as one class asks alike), and that counts its Take calls.
type sized struct {
	room  int
	takes []string
}

func sizeOf(j job) int {
	if j.label == "big" {
		return 2
	}
	return 1
}

func (s *sized) Take(j job) bool {
	s.takes = append(s.takes, j.name)
	if sizeOf(j) > s.room {
		return false
	}
	s.room -= sizeOf(j)
	return true
}

func (s *sized) Return(j job) bool { s.room += sizeOf(j); return true }

// Key says the room is the event's own (Budget.Key).
func (*sized) Key() string { return "" }

// classBudgetRun parks six items of two classes and offers them room 3,
// then deletes the drop items and gives back the room of the first woken
// item's failed attempt. It returns the active items after each offer and
// the Take calls of each. cached uses the default order on cached
// priorities (Config.Priority) instead of a Less.
func classBudgetRun(t *testing.T, byClass, cached bool, drop ...string) (active [2][]string, takes [2][]string) {
	h := newHarness(t, sizedRoom(byClass, cached))
	items := []job{
		{name: "big1", prio: 9, label: "big"}, {name: "big2", prio: 8, label: "big"},
		{name: "small1", prio: 7, label: "small"}, {name: "big3", prio: 6, label: "big"},
		{name: "small2", prio: 5, label: "small"}, {name: "small3", prio: 4, label: "small"},
	}
	h.add(items...)
	for range items {
		h.fail(h.popName(), "Fit")
	}
	h.step(time.Minute)
	b := &sized{room: 3}
	h.move(evMachineAdd, b)
	listActive := func() []string {
		var out []string
		for _, j := range items {
			if x, err := h.c.Explain(j.name, h.now); err == nil && x.Location == InActive {
				out = append(out, j.name)
			}
		}
		return out
	}
	active[0], takes[0] = listActive(), b.takes
	b.takes = nil
	for _, name := range drop {
		if err := h.c.Delete(name, h.now); err != nil {
			t.Fatal(err)
		}
		h.check()
	}
	h.attemptFail("big1", "Fit") // its room comes back, and is offered again
	active[1], takes[1] = listActive(), b.takes
	return active, takes
}

// TestClassBudgetTakesOncePerFullClass: with Config.ClassBudget, once an
// item of a class does not fit, the later items of the class are not
// offered the room, in the first offer and when room comes back; the
// items woken are those a Take per item wakes.
//
// With the cached order the first offer stops at the last class that
// finds no room, and leaves the rest (small3) unsorted; the second finds
// every class of that rest full, and does not look at it.
func TestClassBudgetTakesOncePerFullClass(t *testing.T) {
	for _, cached := range []bool{false, true} {
		perItem, perItemTakes := classBudgetRun(t, false, cached)
		perClass, perClassTakes := classBudgetRun(t, true, cached)
		for i := range perItem {
			if !slices.Equal(perItem[i], perClass[i]) {
				t.Errorf("cached %v, offer %d: woken %v by class, %v by item", cached, i, perClass[i], perItem[i])
			}
		}
		if want := []string{"big1", "small1"}; !slices.Equal(perClass[0], want) {
			t.Errorf("cached %v: woken %v, want %v", cached, perClass[0], want)
		}
		want := [2][]string{
			// In the order judged until one does not fit, then in pop order:
			// big3 and small3 are not offered, their class is full.
			{"big1", "big2", "big1", "big2", "small1", "small2"},
			{"big2", "big3", "small2"}, // small3 is not offered
		}
		for i := range want {
			if !slices.Equal(perClassTakes[i], want[i]) {
				t.Errorf("cached %v, offer %d: Take of %v, want %v (per item: %v)", cached, i, perClassTakes[i], want[i], perItemTakes[i])
			}
		}
	}
}

// TestClassBudgetSortsTheRestWhenNeeded: the items a first offer left
// unsorted (small3, behind small2 whose class found no room) are offered
// in pop order when room comes back and their class has not been found
// full by the items ahead of them: here those items are gone, and small3
// takes the room.
func TestClassBudgetSortsTheRestWhenNeeded(t *testing.T) {
	perItem, _ := classBudgetRun(t, false, true, "big2", "big3", "small2")
	perClass, takes := classBudgetRun(t, true, true, "big2", "big3", "small2")
	for i := range perItem {
		if !slices.Equal(perItem[i], perClass[i]) {
			t.Errorf("offer %d: woken %v by class, %v by item", i, perClass[i], perItem[i])
		}
	}
	if want := []string{"small1", "small3"}; !slices.Equal(perClass[1], want) {
		t.Errorf("after the room came back: active %v, want %v", perClass[1], want)
	}
	if want := []string{"small3"}; !slices.Equal(takes[1], want) {
		t.Errorf("Take of %v when the room came back, want %v", takes[1], want)
	}
}

// TestClassBudgetCachedOrderRandom: with the cached default order,
// Config.ClassBudget (candidates from a heap, a tail left unsorted and
// offered from the heap later) leaves every item where a Take per item in
// a full sort does, through random room, attempts, deletions and flushes.
func TestClassBudgetCachedOrderRandom(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		var hs [2]*harness
		for i, byClass := range []bool{false, true} {
			hs[i] = newHarness(t, sizedRoom(byClass, true))
		}
		items := make([]job, 30)
		for i := range items {
			items[i] = job{name: fmt.Sprint("j", i), prio: int32(r.IntN(4)), label: []string{"big", "small", "tiny"}[r.IntN(3)]}
		}
		for _, h := range hs {
			h.add(items...)
		}
		for step := range 80 {
			var op string
			switch r.IntN(6) {
			case 0, 1:
				room := r.IntN(5)
				op = fmt.Sprint("room ", room)
				for _, h := range hs {
					h.move(evMachineAdd, &sized{room: room})
				}
			case 2:
				fail := r.IntN(3) > 0
				op = fmt.Sprint("pop, fail ", fail)
				var names [2]string
				for i, h := range hs {
					a, ok := h.c.Pop(h.now)
					if !ok {
						continue
					}
					names[i] = a.Item.name
					if fail {
						h.fail(a.Item.name, "Fit")
					} else if err := h.c.Done(att(a.Item.name, a.Cycle), h.now); err != nil {
						t.Fatal(err)
					}
					h.check()
				}
				if names[0] != names[1] {
					t.Fatalf("seed %d step %d: popped %q by item, %q by class", seed, step, names[0], names[1])
				}
			case 3:
				j := items[r.IntN(len(items))]
				op = "delete or add " + j.name
				for _, h := range hs {
					if _, _, ok := h.c.Get(j.name); ok {
						if err := h.c.Delete(j.name, h.now); err != nil {
							t.Fatal(err)
						}
					} else {
						h.c.Add(j, h.now)
					}
					h.check()
				}
			default:
				d := time.Duration(r.IntN(3000)) * time.Millisecond
				op = fmt.Sprint("tick after ", d)
				for _, h := range hs {
					h.step(d)
					h.c.Tick(h.now)
					h.check()
				}
			}
			for _, j := range items {
				if a, b := hs[0].where(j.name), hs[1].where(j.name); a != b {
					t.Fatalf("seed %d step %d (%s): %s is %v by item, %v by class", seed, step, op, j.name, a, b)
				}
			}
		}
	}
}

// TestClassBudgetTailInPopOrder: six alike items, room for one: the first
// wakes, the second finds no room, and the four after it stay unsorted in
// the tail. With the second gone, the room that comes back goes to the
// best of the tail (s3), as a Take per item in pop order gives it.
func TestClassBudgetTailInPopOrder(t *testing.T) {
	for _, byClass := range []bool{false, true} {
		h := newHarness(t, sizedRoom(byClass, true))
		// Added (and so found) out of pop order.
		for _, p := range []int32{4, 9, 6, 8, 5, 7} {
			h.add(job{name: fmt.Sprint("s", 10-p), prio: p, label: "small"})
		}
		for range 6 {
			h.fail(h.popName(), "Fit")
		}
		h.step(time.Minute)
		h.move(evMachineAdd, &sized{room: 1})
		h.want("s1", InActive)
		if err := h.c.Delete("s2", h.now); err != nil {
			t.Fatal(err)
		}
		h.attemptFail("s1", "Fit") // its room comes back
		for _, name := range []string{"s1", "s4", "s5", "s6"} {
			h.want(name, InUnschedulable)
		}
		h.want("s3", InActive)
	}
}

// sizedRoom configures a harness whose events carry their room as a
// *sized budget, with hint classes by label; byClass sets ClassBudget,
// and cached the default order on cached priorities (Config.Priority)
// instead of the harness's Less.
func sizedRoom(byClass, cached bool) func(c *Config[string, job]) {
	return func(c *Config[string, job]) {
		c.HintClass = classOfLabel
		c.ClassBudget = byClass
		c.Budget = func(ev Event, _, newObj any) (Budget[job], bool) {
			s, ok := newObj.(*sized)
			return s, ok
		}
		if cached {
			c.Less, c.Priority = nil, jobPrio
		}
	}
}

// TestClassBudgetTailIsCohortsOrder: a budget's tail of one cohort's
// members, none tied, is a cursor into the cohort's order, not a heap
// (cohort_order.go); with two members tied (the same priority and
// timestamp) it is a heap, whose tie order is the index's. A member
// gone before the event is in neither. Either way the room that comes
// back goes to the best of the tail.
func TestClassBudgetTailIsCohortsOrder(t *testing.T) {
	cases := []struct {
		name   string
		prios  []int32
		gone   string // deleted before the event: in no tail
		cursor bool
		tail   int
		next   string // the tail's best
	}{
		{name: "distinct", prios: []int32{4, 9, 6, 8, 5, 7}, cursor: true, tail: 4, next: "s5"},
		{name: "tied", prios: []int32{4, 9, 6, 8, 5, 5}, cursor: false, tail: 4, next: "s2"},
		{name: "one gone before", prios: []int32{4, 9, 6, 8, 5, 7}, gone: "s5", cursor: true, tail: 3, next: "s2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, sizedRoom(true, true))
			for i, p := range tc.prios {
				h.add(job{name: fmt.Sprint("s", i), prio: p, label: "small"})
			}
			for range tc.prios {
				h.fail(h.popName(), "Fit") // at one instant
			}
			h.step(time.Minute)
			if tc.gone != "" {
				if err := h.c.Delete(tc.gone, h.now); err != nil {
					t.Fatal(err)
				}
			}
			h.move(evMachineAdd, &sized{room: 1})
			h.want("s1", InActive) // priority 9
			g := h.c.keys["s1"].more.tookFrom
			if g == nil {
				t.Fatal("s1 holds no room")
			}
			if got := g.ord != nil; got != tc.cursor || g.tailLen() != tc.tail {
				t.Fatalf("tail: cursor %v (want %v), %d items (want %d)", got, tc.cursor, g.tailLen(), tc.tail)
			}
			if err := h.c.Delete("s3", h.now); err != nil { // priority 8: deferred, not in the tail
				t.Fatal(err)
			}
			h.attemptFail("s1", "Fit") // its room comes back
			h.want(tc.next, InActive)
		})
	}
}

// TestClassBudgetTailCountsAfterCompaction: an event's first wakes may
// leave so many records of the cohort's order dead that the order is
// copied without them while the event still takes from the old copy;
// the items woken after that are marked in the new copy only, and the
// event's tail must still count exactly the members left after its
// cursor (the invariants check the count).
func TestClassBudgetTailCountsAfterCompaction(t *testing.T) {
	h := newHarness(t, sizedRoom(true, true))
	const n = 20
	for i := range n {
		h.add(job{name: fmt.Sprint("s", i), prio: int32(100 - i), label: "small"})
	}
	for range n {
		h.fail(h.popName(), "Fit")
	}
	for i := 10; i < n; i++ { // ten of twenty records dead: one more copies the order
		if err := h.c.Delete(fmt.Sprint("s", i), h.now); err != nil {
			t.Fatal(err)
		}
	}
	h.check()
	h.step(time.Minute)
	h.move(evMachineAdd, &sized{room: 3})
	for _, name := range []string{"s0", "s1", "s2"} {
		h.want(name, InActive)
	}
	g := h.c.keys["s0"].more.tookFrom
	if g == nil || g.tailLen() != 6 {
		t.Fatalf("tail of %v items, want 6 (s4 to s9)", g.tailLen())
	}
}
