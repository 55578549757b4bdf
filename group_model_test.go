package schedq

import (
	"fmt"
	"slices"
)

// groupModel is a small model of groups, kept by the fuzz driver apart from
// the queue: which group objects exist and which groups have an attempt in
// flight. From it alone follows where each member may be, whatever the
// timing: incomplete only while its group object is unknown, in an entity
// only while its group is known and not in flight, pending only while its
// group is in flight; all queued members of a group share one place; and a
// group's pop takes exactly the members that were queued in it.
type groupModel struct {
	known  map[string]bool
	flying map[string]int64 // group -> cycle of its attempt in flight
	before map[string]place // members' places before the current step
}

type place struct {
	group string
	loc   Location
}

func newGroupModel() *groupModel {
	return &groupModel{known: map[string]bool{}, flying: map[string]int64{}, before: map[string]place{}}
}

func queuedLoc(l Location) bool {
	return l == InActive || l == InBackoff || l == InUnschedulable || l == InGated
}

// snapshot records the members' places before a step.
func (m *groupModel) snapshot(c *Core[string, job]) {
	clear(m.before)
	for _, n := range fuzzNames {
		if info, loc, ok := c.Get(n); ok && info.Item.group != "" {
			m.before[n] = place{info.Item.group, loc}
		}
	}
}

// popped checks a group's pop against the places before it and starts its
// attempt in the model.
func (m *groupModel) popped(a Attempt[string, job]) error {
	if _, ok := m.flying[a.Group]; ok {
		return fmt.Errorf("group %q popped while its attempt of cycle %d is in flight", a.Group, m.flying[a.Group])
	}
	var want, got []string
	for n, p := range m.before {
		if p.group == a.Group && queuedLoc(p.loc) {
			want = append(want, n)
		}
	}
	for _, mem := range a.Members {
		got = append(got, mem.Key)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		return fmt.Errorf("group %q popped with members %v, queued were %v", a.Group, got, want)
	}
	m.flying[a.Group] = a.Cycle
	return nil
}

// check compares every member's place with what the model allows.
func (m *groupModel) check(c *Core[string, job]) error {
	shared := map[string]Location{}
	for _, n := range fuzzNames {
		info, loc, ok := c.Get(n)
		g := info.Item.group
		if !ok || g == "" {
			continue
		}
		_, flying := m.flying[g]
		switch {
		case loc == InIncomplete && m.known[g]:
			return fmt.Errorf("%s incomplete, but group %q is known", n, g)
		case loc == InPending && !flying:
			return fmt.Errorf("%s pending, but group %q has no attempt in flight", n, g)
		case queuedLoc(loc) && (!m.known[g] || flying):
			return fmt.Errorf("%s queued in group %q (%v), known %v, in flight %v", n, g, loc, m.known[g], flying)
		case queuedLoc(loc):
			if l, seen := shared[g]; seen && l != loc {
				return fmt.Errorf("group %q split between %v and %v", g, l, loc)
			}
			shared[g] = loc
		}
	}
	return nil
}
