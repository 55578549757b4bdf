package schedq

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// hintLog is a moveLog that also keeps each hint call.
type hintLog struct{ moveLog }

func (r *hintLog) HintDone(_ int64, plugin, event string, h Hint, err error) {
	r.lines = append(r.lines, fmt.Sprintf("hint %s %s %v %v", plugin, event, h, err))
}

// TestMoveByClassSameAsByItemRandom drives two queues with
// Config.HintClass, one judging by cohort and one item by item, through
// the same random operations (adds, failures with shared and distinct
// plugin lists, updates of label, priority, gate and group while parked,
// deletes, activations, events, flushes, group entities beside the
// cohorts, the move request's epoch wrapping), with and without a wake
// budget by class: what comes in where, each move request's counts, the
// hint calls (in any order), each item's place and its explanation (the
// event that deferred it, its leftover flush) must be the same at every
// step. O(runs × steps) small queues; about 2 s.
func TestMoveByClassSameAsByItemRandom(t *testing.T) {
	labels := []string{"", "web", "db", "a"}
	fails := []Failure{
		{}, {RejectedBy: []string{"Fit"}}, {RejectedBy: []string{"Affinity"}},
		{RejectedBy: []string{"Fit", "Affinity"}}, {RejectedBy: []string{"Affinity", "Fit"}},
		{WaitingOn: []string{"Volume"}}, {RejectedBy: []string{"Fit"}, WaitingOn: []string{"Volume"}},
	}
	runs := 200
	if testing.Short() {
		runs = 20
	}
	state := uint64(45)
	rnd := func(n int) int {
		state ^= state << 13
		state ^= state >> 7
		state ^= state << 17
		return int(state>>1) % n
	}
	for run := range runs {
		seed := state
		budget, groups := run%2 == 1, run%4 >= 2
		one := func(byClass bool) (*harness, *hintLog) {
			log := &hintLog{}
			h := newHarness(t, withClass, func(c *Config[string, job]) {
				c.Recorder = log
				c.Hints["Fit"] = append(c.Hints["Fit"], EventHint[job]{Event: evPlacedAdd, Fn: affinityHint})
				if groups {
					groupsOn(c)
				}
				if budget {
					c.Less, c.Priority = nil, jobPrio
					c.Budget, c.ClassBudget = fuzzBudget, true
				}
			})
			h.c.parked.byClass = byClass
			h.c.epoch = math.MaxUint32 - uint32(run%64) // wraps in the run (nextEpoch)
			if groups {
				// Group entities park beside the cohorts, outside them.
				h.setGroup("g0", 1, 3)
				h.setGroup("g1", 2, 1)
			}
			return h, log
		}
		hc, lc := one(true)
		hi, li := one(false)
		for step := range 400 {
			state = seed // both queues see the same choices
			op, k, x := rnd(9), rnd(16), rnd(1<<16)
			seed = state
			name := fmt.Sprint("j", k)
			desc := ""
			for _, h := range []*harness{hc, hi} {
				switch op {
				case 0:
					desc = "add " + name
					p := job{name: name, prio: int32(x % 4), label: labels[x%len(labels)], gated: x%13 == 0}
					if groups && x%3 != 0 {
						p.group = []string{"g0", "g1"}[x%2]
					}
					h.c.Add(p, h.now)
				case 1, 2:
					desc = "pop and fail"
					if a, ok := h.c.Pop(h.now); ok {
						_ = h.c.Requeue(a, fails[x%len(fails)], h.now)
					}
				case 3:
					desc = "update " + name
					if info, _, ok := h.c.Get(name); ok {
						p := info.Item
						switch x % 3 {
						case 0:
							p.label = labels[x/3%len(labels)]
						case 1:
							p.prio = int32(x / 3 % 5)
						case 2:
							p.gated = !p.gated
						}
						if groups && x%7 == 0 {
							p.group = []string{"", "g0", "g1"}[x/7%3] // into or out of a group
						}
						h.c.Update(info.Item, p, h.now)
					}
				case 4:
					desc = "delete " + name
					_ = h.c.Delete(name, h.now)
				case 5:
					desc = "activate " + name
					h.c.Activate([]string{name}, h.now)
				case 6, 7:
					ev := fuzzEvents[x%len(fuzzEvents)]
					var obj any = x / 16 % 4
					if ev == evPlacedAdd {
						obj = labels[x/16%len(labels)]
					}
					desc = fmt.Sprintf("move %s %v", ev.label(), obj)
					h.c.Move(ev, nil, obj, nil, h.now)
				case 8:
					desc = "tick"
					h.step(fuzzSteps[x%len(fuzzSteps)])
					h.c.Tick(h.now)
				}
				h.check()
			}
			// The hints are asked in another order (cohort by cohort), as
			// often: compare them as a set, the rest in order.
			if !slices.Equal(sortedHints(lc.lines), sortedHints(li.lines)) {
				t.Fatalf("run %d step %d %s: by cohort %q, by item %q", run, step, desc, lc.lines, li.lines)
			}
			for i := range 16 {
				n := fmt.Sprint("j", i)
				if a, b := hc.where(n), hi.where(n); a != b {
					t.Fatalf("run %d step %d %s: %s by cohort %v, by item %v", run, step, desc, n, a, b)
				}
				if a, b := deferralOf(hc, n), deferralOf(hi, n); a != b {
					t.Fatalf("run %d step %d %s: %s by cohort %s, by item %s", run, step, desc, n, a, b)
				}
			}
			lc.lines, li.lines = lc.lines[:0], li.lines[:0]
		}
		if hc.c.judged > hi.c.judged {
			t.Fatalf("run %d: judged %d items by cohort, %d by item", run, hc.c.judged, hi.c.judged)
		}
	}
}

// sortedHints returns lines with its hint calls sorted to its end.
func sortedHints(lines []string) []string {
	var other, hints []string
	for _, l := range lines {
		if strings.HasPrefix(l, "hint ") {
			hints = append(hints, l)
		} else {
			other = append(other, l)
		}
	}
	slices.Sort(hints)
	return append(other, hints...)
}
