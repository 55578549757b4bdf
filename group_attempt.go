package schedq

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// popGroup finishes the pop of group entity e, already in flight: its
// members go in flight in the order to try them, each with the group's
// Cycle. O(m log m) for m members; one allocation, the Members slice.
func (c *Core[K, T]) popGroup(e *entry[K, T], now time.Time) Attempt[K, T] {
	g := e.grp
	g.ent, g.flight, g.rep = nil, e, nil
	c.sortMembers(g.queued)
	g.queued, g.flying = g.flying[:0], g.queued
	g.classes = g.classes[:0]
	a := Attempt[K, T]{Info: e.Info, Group: g.name, Spec: g.spec, Members: make([]Attempt[K, T], len(g.flying))}
	var zero T
	a.Item = zero
	for i, m := range g.flying {
		if prev := m.shadowOf(); prev != nil {
			// A lone attempt of the same key, which this pop supersedes.
			m.setShadow(nil)
			c.flights.end(prev)
			c.retire(prev, now)
		}
		m.loc, m.idx = locMemberFlight, int32(i)
		m.Attempts++
		m.Cycle = e.Cycle
		m.set(flagUpdated|flagDeleted, false)
		if m.InitialAttemptTimestamp.IsZero() {
			m.InitialAttemptTimestamp = e.InitialAttemptTimestamp
		}
		a.Members[i] = Attempt[K, T]{Key: m.key, Info: m.Info}
	}
	return a
}

// sortMembers puts members in the order to try them: higher priority
// first (the caller's Less, if set), then more attempts, then earlier
// Timestamp, then arrival order.
func (c *Core[K, T]) sortMembers(ms []*entry[K, T]) {
	slices.SortFunc(ms, func(a, b *entry[K, T]) int {
		if c.cfg.Priority != nil {
			if a.prio != b.prio {
				return cmp.Compare(b.prio, a.prio)
			}
		} else if c.cfg.Less(&a.Info, &b.Info) {
			return -1
		} else if c.cfg.Less(&b.Info, &a.Info) {
			return 1
		}
		return cmp.Or(cmp.Compare(b.Attempts, a.Attempts), cmp.Compare(a.ts, b.ts), cmpSeq(a.seq, b.seq))
	})
}

// flyingGroup returns the group whose attempt a is, or an error wrapping
// ErrNotInFlight.
func (c *Core[K, T]) flyingGroup(a Attempt[K, T], op string) (*group[K, T], error) {
	g := c.groups[a.Group]
	if g == nil || g.flight == nil || g.flight.Cycle != a.Cycle {
		return nil, fmt.Errorf("%w: %s group %q: no attempt of cycle %d in flight", ErrNotInFlight, op, a.Group, a.Cycle)
	}
	return g, nil
}

// doneGroup ends group attempt a after all its members were placed: they
// leave the queue, and the members that arrived during the attempt
// (pending) form a new entity. O(m) for m members.
func (c *Core[K, T]) doneGroup(a Attempt[K, T], now time.Time) error {
	g, err := c.flyingGroup(a, "done")
	if err != nil {
		return err
	}
	e := g.flight
	for len(g.flying) > 0 {
		m := g.flying[len(g.flying)-1]
		if !m.is(flagDeleted) && !e.InitialAttemptTimestamp.IsZero() {
			c.rec.Scheduled(time.Duration(e.entered-e.InitialAttemptTimestamp.UnixNano()), e.FlushedFromUnschedulable)
		}
		c.nom.drop(m.key) // as a lone Done, even for a copy added again since
		c.leave(m)
	}
	c.endGroupFlight(g, now)
	return nil
}

// leave forgets member m of the attempt in flight, and its nomination,
// unless its key names another item now (m was deleted and the key added
// again during the attempt): that item keeps its own.
func (c *Core[K, T]) leave(m *entry[K, T]) {
	if c.keys[m.key] == m {
		c.nom.drop(m.key)
	}
	m.grp.take(m)
	c.unkey(m)
	c.recycle(m)
}

// endGroupFlight stops tracking g's attempt, recycles its entity, and
// places the members that waited for it.
func (c *Core[K, T]) endGroupFlight(g *group[K, T], now time.Time) {
	e := g.flight
	c.flights.end(e)
	g.flight = nil
	c.recycle(e)
	c.resolve(g, now)
	c.forget(g)
}

// DoneMembers ends group attempt a after some of its members were placed
// and the others were not: a success of the group, short of all its
// members. The members at indexes placed (into a.Members; an index given
// twice counts once) leave the queue;
// the others, with those that arrived during the attempt, go back with the
// group to activeQ at once, keeping the group's Timestamp, with its
// failure counts reset, message as its Message and reasons (why the
// others were not placed) as its Reasons. With every member
// placed, use Done. It returns ErrInvalidGroup if a is not a group attempt,
// placed is empty or an index is out of range, and ErrNotInFlight if a is
// not in flight; either changes nothing. O(m log n) for m members.
func (c *Core[K, T]) DoneMembers(a Attempt[K, T], placed []int, message string, now time.Time, reasons ...string) error {
	defer c.check()
	if a.Group == "" || len(placed) == 0 {
		return fmt.Errorf("%w: done members of %q: a group attempt and at least one placed member are needed", ErrInvalidGroup, a.Group)
	}
	g, err := c.flyingGroup(a, "done members of")
	if err != nil {
		return err
	}
	for _, i := range placed {
		if i < 0 || i >= len(a.Members) {
			return fmt.Errorf("%w: done members of group %q: index %d out of range [0,%d)", ErrInvalidGroup, a.Group, i, len(a.Members))
		}
	}
	c.endGroup(g, a, placed, Failure{Message: message, Reasons: reasons}, now)
	return nil
}

// requeueGroup reports the failure of group attempt a (see Requeue). O(m
// log n) for m members, plus the hints of the events seen during the
// attempt, per member.
func (c *Core[K, T]) requeueGroup(a Attempt[K, T], f Failure, now time.Time) error {
	g, err := c.flyingGroup(a, "requeue")
	if err != nil {
		return err
	}
	c.endGroup(g, a, nil, f, now)
	return nil
}

// endGroup ends g's attempt a: the members at placed leave, the others
// come back with the group, which takes failure f unless some were placed.
func (c *Core[K, T]) endGroup(g *group[K, T], a Attempt[K, T], placed []int, f Failure, now time.Time) {
	e := g.flight
	c.placeLeftovers(g, a, placed)
	if !g.known || len(g.flying) == 0 && (len(g.waiting) == 0 || len(placed) > 0) {
		// The group was deleted during the attempt: its members wait for
		// the group object. Or the attempt left no member and no failure
		// to keep (none waits, or it was a success): those that waited
		// form a new entity. A failure with only waiting members left is
		// the group's and is kept below: it backs off or parks, counted.
		for len(g.flying) > 0 {
			m := g.flying[len(g.flying)-1]
			g.take(m)
			g.put(m, locIncomplete)
		}
		c.endGroupFlight(g, now)
		return
	}
	rejected := len(f.RejectedBy)+len(f.WaitingOn) > 0
	e.BackoffExpiry = time.Time{}
	e.FlushedFromUnschedulable = false
	e.Message, e.Reasons = f.Message, slices.Clone(f.Reasons)
	e.RejectedBy, e.WaitingOn = nil, nil
	switch {
	case len(placed) > 0:
		e.UnschedulableCount, e.ConsecutiveErrors = 0, 0
	case rejected:
		e.Timestamp = now
		e.RejectedBy = c.lists.of(f.RejectedBy)
		e.WaitingOn = c.lists.of(f.WaitingOn)
		e.UnschedulableCount++
		e.ConsecutiveErrors = 0
	default:
		e.Timestamp = now
		e.ConsecutiveErrors++
	}
	// The members come back into the entity, then those that waited.
	for len(g.flying) > 0 {
		m := g.flying[len(g.flying)-1]
		g.take(m)
		g.put(m, locMember)
	}
	for len(g.waiting) > 0 {
		m := g.waiting[len(g.waiting)-1]
		g.take(m)
		g.put(m, locMember)
	}
	g.rep = g.queued[0]
	e.Item = g.rep.Item
	s := c.groupStrategy(g, e, a.Cycle, rejected, len(placed) > 0)
	c.flights.end(e)
	g.flight, g.ent = nil, e
	c.queued++
	c.requeue(e, s, labelAttemptFailure, now)
}

// placeLeftovers drops from g's attempt the members that were placed and
// those deleted during it.
func (c *Core[K, T]) placeLeftovers(g *group[K, T], a Attempt[K, T], placed []int) {
	for _, i := range placed {
		if m, ok := c.flyingMember(g, a.Members[i].Key); ok {
			c.leave(m)
		}
	}
	for i := len(g.flying) - 1; i >= 0; i-- {
		if i < len(g.flying) && g.flying[i].is(flagDeleted) {
			c.leave(g.flying[i])
		}
	}
}

// flyingMember returns the member of g's attempt with key.
func (c *Core[K, T]) flyingMember(g *group[K, T], key K) (*entry[K, T], bool) {
	m := c.keys[key]
	if m == nil || m.kind != kindMember || m.grp != g || m.loc != locMemberFlight {
		return nil, false
	}
	return m, true
}

// groupStrategy decides where a failed group attempt goes: leftovers of a
// success at once; an error after backoff; a rejection as the events seen
// during the attempt say, through the rejecting plugins' hints asked for
// each member (the best verdict wins), or the legacy rule with hints off.
func (c *Core[K, T]) groupStrategy(g *group[K, T], e *entry[K, T], cycle int64, rejected, placed bool) strategy {
	switch {
	case placed:
		return immediately
	case !rejected:
		return afterBackoff
	case c.cfg.DisableQueueingHints:
		if c.moveRequestCycle >= cycle {
			return afterBackoff
		}
		return stayParked
	}
	s := stayParked
	events := c.flights.since(e)
	for i := range events {
		ev := &events[i]
		if ev.hasTarget {
			if m := c.keys[ev.target]; m == nil || m.grp != g {
				continue
			}
		}
		if s = max(s, c.worth(e, ev.event, ev.label, ev.oldObj, ev.newObj)); s == immediately ||
			s == afterBackoff && len(e.WaitingOn) == 0 {
			break
		}
	}
	return s
}
