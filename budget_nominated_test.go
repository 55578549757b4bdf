package schedq

import (
	"slices"
	"testing"
	"time"
)

// nominatedMachine is a machine (a test budget) whose room the items
// nominated to it hold: each takes one place of size, unless it is the
// item offered or holds room already.
type nominatedMachine struct {
	machine
	name      string
	nominated func(string) []job
	taken     []string
}

func (m *nominatedMachine) UseNominated(f func(string) []job) { m.nominated = f }

func (m *nominatedMachine) Take(j job) bool {
	held := 0
	if m.nominated != nil {
		for _, n := range m.nominated(m.name) {
			if n.name != j.name && !slices.Contains(m.taken, n.name) {
				held++
			}
		}
	}
	if m.placed+m.reserved+held >= m.size {
		return false
	}
	m.reserved++
	m.taken = append(m.taken, j.name)
	return true
}

// TestNominatedBudgetSeesNominations: a budget that implements
// NominatedBudget is given the queue's nominations before its first
// Take, in their latest versions, so that it can keep the room of an
// item nominated to its machine from the items of lower priority.
func TestNominatedBudgetSeesNominations(t *testing.T) {
	tests := []struct {
		name  string
		to    string // where b is nominated, "" for nowhere
		wakeA bool   // whether a, parked, is woken
	}{
		{name: "b nominated to the machine holds one place", to: "m1"},
		{name: "b nominated elsewhere holds none here", to: "m2", wakeA: true},
		{name: "no nomination", wakeA: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config[string, job]) {
				c.Budget = func(ev Event, _, newObj any) (Budget[job], bool) {
					m, ok := newObj.(*nominatedMachine)
					return m, ok
				}
				c.Hints["Fit"] = []EventHint[job]{{Event: evMachineAdd}}
			})
			h.add(mk("a", 1))
			h.fail(h.popName(), "Fit")
			h.step(time.Minute) // a's backoff is over
			h.add(mk("b", 5))   // b waits in activeQ, not offered the room
			if tc.to != "" {
				if err := h.c.Nominate("b", tc.to); err != nil {
					t.Fatal(err)
				}
			}
			// One place, for a unless b's nomination holds it.
			m := &nominatedMachine{machine: machine{size: 1}, name: "m1"}
			h.move(evMachineAdd, m)
			if m.nominated == nil {
				t.Fatal("the budget was not given the nominations")
			}
			h.want("b", InActive)
			if tc.wakeA {
				h.want("a", InActive)
			} else {
				h.want("a", InUnschedulable)
			}
		})
	}
}
