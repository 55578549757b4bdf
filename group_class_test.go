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
	h.requeueGroup(h.popGroup("g"), Failure{UnschedulablePlugins: []string{"Fit"}})
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
	h.requeueGroup(h.popGroup("g"), Failure{UnschedulablePlugins: []string{"Fit"}})
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
