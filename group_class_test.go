package schedq

import (
	"fmt"
	"testing"
)

// classOfLabel is a Config.HintClass for jobs whose hints read only the
// label: jobs with one label are alike.
func classOfLabel(p job) uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(p.label); i++ {
		h = (h ^ uint64(p.label[i])) * 1099511628211
	}
	return h
}

// TestMoveGroupAsksOneMemberPerClass: with Config.HintClass, a move asks
// the hint of one member per class in a group, not of every member; the
// verdict is still the best of the members', so a member of another
// class that the hint accepts still moves the group.
func TestMoveGroupAsksOneMemberPerClass(t *testing.T) {
	calls := 0
	h := newHarness(t, groupsOn, func(c *Config[string, job]) {
		c.HintClass = classOfLabel
		c.Hints["Fit"] = []EventHint[job]{{Event: evMachineAdd, Fn: func(p job, _, _ any) (Hint, error) {
			calls++
			if p.label == "wake" {
				return HintQueue, nil
			}
			return HintSkip, nil
		}}}
	})
	h.setGroup("g", 4, 0)
	for i := range 4 {
		h.add(gm("g", fmt.Sprint("a", i), 0))
	}
	h.requeueGroup(h.popGroup("g"), Failure{RejectedBy: []string{"Fit"}})
	h.move(evMachineAdd, 4)
	h.want("a0", InUnschedulable)
	if calls != 1 {
		t.Fatalf("the hint was asked %d times for a group of 4 alike members, want 1", calls)
	}
	w := gm("g", "w", 0)
	w.label = "wake"
	h.add(w) // joins the parked entity, which stays parked
	h.want("w", InUnschedulable)
	calls = 0
	h.move(evMachineAdd, 4)
	h.want("a0", InBackoff)
	if calls > 2 {
		t.Fatalf("the hint was asked %d times for a group of 2 classes, want at most 2", calls)
	}
}

// TestMoveGroupManyClasses: a group with more classes than classSet
// scans (it moves to a map) asks each member once and still finds the
// one member the hint accepts.
func TestMoveGroupManyClasses(t *testing.T) {
	calls := 0
	h := newHarness(t, groupsOn, func(c *Config[string, job]) {
		c.HintClass = classOfLabel
		c.Hints["Fit"] = []EventHint[job]{{Event: evMachineAdd, Fn: func(p job, _, _ any) (Hint, error) {
			calls++
			if p.label == "wake" {
				return HintQueue, nil
			}
			return HintSkip, nil
		}}}
	})
	n := 3 * classSetSmall
	h.setGroup("g", n, 0)
	for i := range n {
		m := gm("g", fmt.Sprint("m", i), 0)
		m.label = fmt.Sprint("l", i%(2*classSetSmall))
		h.add(m)
	}
	h.requeueGroup(h.popGroup("g"), Failure{RejectedBy: []string{"Fit"}})
	h.move(evMachineAdd, 4)
	h.want("m0", InUnschedulable)
	if calls != 2*classSetSmall {
		t.Fatalf("the hint was asked %d times for %d classes, want %d", calls, 2*classSetSmall, 2*classSetSmall)
	}
	calls = 0
	h.move(evMachineAdd, 4) // the set, reset, works again
	if calls != 2*classSetSmall {
		t.Fatalf("second move: the hint was asked %d times, want %d", calls, 2*classSetSmall)
	}
	w := gm("g", "w", 0)
	w.label = "wake"
	h.add(w)
	h.move(evMachineAdd, 4)
	h.want("m0", InBackoff)
}

// labelHints is a test configuration whose Fit and Affinity hints read
// only an item's label, with counts of their calls: Fit queues items
// labelled "wake", Affinity items whose label is the new object.
func labelHints(calls map[string]int) func(*Config[string, job]) {
	return func(c *Config[string, job]) {
		c.HintClass = classOfLabel
		c.Hints["Fit"] = []EventHint[job]{{Event: evMachineAdd, Fn: func(p job, _, _ any) (Hint, error) {
			calls["Fit"]++
			if p.label == "wake" {
				return HintQueue, nil
			}
			return HintSkip, nil
		}}}
		c.Hints["Affinity"] = []EventHint[job]{{Event: evMachineAdd, Fn: func(p job, _, newObj any) (Hint, error) {
			calls["Affinity"]++
			if s, ok := newObj.(string); ok && s == p.label {
				return HintQueue, nil
			}
			return HintSkip, nil
		}}}
	}
}

// TestMoveAsksOneItemPerClass: with Config.HintClass, a move request asks
// each hint once per class of the parked items; the others of the class
// take that answer. The answers are per hint and per request: another
// plugin's hint is asked on its own, and the next request asks again.
func TestMoveAsksOneItemPerClass(t *testing.T) {
	calls := map[string]int{}
	h := newHarness(t, labelHints(calls))
	var names []string
	for i := range 6 {
		p := mk(fmt.Sprint("p", i), int32(i))
		p.label = []string{"wake", "x"}[i%2]
		h.add(p)
		names = append(names, p.name)
	}
	for range names {
		a, ok := h.c.Pop(h.now)
		if !ok {
			t.Fatal("nothing to pop")
		}
		h.fail(a.Key, "Fit", "Affinity")
	}
	h.move(evMachineAdd, "nothing")
	for i, n := range names {
		h.want(n, []Location{InBackoff, InUnschedulable}[i%2])
	}
	// The hints run in plugin order, Affinity first: each once per class.
	if calls["Fit"] != 2 || calls["Affinity"] != 2 {
		t.Fatalf("hint calls %v, want Fit:2 Affinity:2", calls)
	}
	h.move(evMachineAdd, "x")
	for _, n := range names {
		h.want(n, InBackoff)
	}
	// Only the x items are left, and Affinity queues their class.
	if calls["Fit"] != 2 || calls["Affinity"] != 3 {
		t.Fatalf("hint calls after the second move %v, want Fit:2 Affinity:3 (asked again)", calls)
	}
}

// TestMoveMemoManyClasses: with more classes than the memo has slots,
// colliding classes are asked again, and every item gets its own
// class's answer.
func TestMoveMemoManyClasses(t *testing.T) {
	calls := map[string]int{}
	h := newHarness(t, labelHints(calls))
	n := 4 * memoSlots
	for i := range n {
		p := mk(fmt.Sprint("p", i), int32(i))
		p.label = fmt.Sprint("l", i)
		h.add(p)
	}
	for range n {
		a, ok := h.c.Pop(h.now)
		if !ok {
			t.Fatal("nothing to pop")
		}
		h.fail(a.Key, "Affinity")
	}
	h.move(evMachineAdd, "l7")
	for i := range n {
		want := InUnschedulable
		if i == 7 {
			want = InBackoff
		}
		h.want(fmt.Sprint("p", i), want)
	}
	if calls["Affinity"] != n {
		t.Fatalf("Affinity asked %d times for %d items of distinct classes, want %d", calls["Affinity"], n, n)
	}
}
