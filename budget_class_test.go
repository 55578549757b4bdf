package schedq

import (
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

// classBudgetRun parks six items of two classes and offers them room 3,
// then gives back the room of the first woken item's failed attempt. It
// returns the active items after each offer and the Take calls of each.
func classBudgetRun(t *testing.T, byClass bool) (active [2][]string, takes [2][]string) {
	h := newHarness(t, func(c *Config[string, job]) {
		c.HintClass = classOfLabel
		c.ClassBudget = byClass
		c.Budget = func(ev Event, _, newObj any) (Budget[job], bool) {
			s, ok := newObj.(*sized)
			return s, ok
		}
	})
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
	h.attemptFail("big1", "Fit") // its room comes back, and is offered again
	active[1], takes[1] = listActive(), b.takes
	return active, takes
}

// TestClassBudgetTakesOncePerFullClass: with Config.ClassBudget, once an
// item of a class does not fit, the later items of the class are not
// offered the room, in the first offer and when room comes back; the
// items woken are those a Take per item wakes.
func TestClassBudgetTakesOncePerFullClass(t *testing.T) {
	perItem, perItemTakes := classBudgetRun(t, false)
	perClass, perClassTakes := classBudgetRun(t, true)
	for i := range perItem {
		if !slices.Equal(perItem[i], perClass[i]) {
			t.Errorf("offer %d: woken %v by class, %v by item", i, perClass[i], perItem[i])
		}
	}
	if want := []string{"big1", "small1"}; !slices.Equal(perClass[0], want) {
		t.Errorf("woken %v, want %v", perClass[0], want)
	}
	want := [2][]string{
		// In the order judged until one does not fit, then in pop order:
		// big3 and small3 are not offered, their class is full.
		{"big1", "big2", "big1", "big2", "small1", "small2"},
		{"big2", "big3", "small2"}, // small3 is not offered
	}
	for i := range want {
		if !slices.Equal(perClassTakes[i], want[i]) {
			t.Errorf("offer %d: Take of %v, want %v (per item: %v)", i, perClassTakes[i], want[i], perItemTakes[i])
		}
	}
}
