package schedq

import (
	"slices"
	"time"
)

// addGrouped is Add when groups are on. It handles members, and lone
// items whose key was a member's; it reports false to leave a lone item to
// Add. A key that was a member of an attempt in flight leaves it (the
// attempt's outcome drops it) unless it stays in the same group and was
// not deleted, where the new item replaces the one in flight. A lone attempt in flight for the
// key of a new member is superseded, as by a newer pop. O(log n), plus
// the PreEnqueue checks of the entity's members if it is in activeQ.
func (c *Core[K, T]) addGrouped(item T, now time.Time) bool {
	name := c.cfg.Group(item)
	key := c.cfg.Key(item)
	prev := c.keys[key]
	if prev != nil && prev.kind == kindMember {
		if prev.loc == locMemberFlight {
			if name == prev.grp.name && !prev.is(flagDeleted) {
				prev.Item = item
				c.memberKeys(prev) // its priority orders it in the next attempt
				prev.set(flagUpdated, true)
				return true
			}
			prev.set(flagDeleted, true)
			delete(c.keys, key)
			prev = nil
		} else {
			c.removeMember(prev, now)
			prev = c.keys[key] // a lone attempt in flight it shadowed, if any
		}
	}
	if name == "" {
		return false
	}
	var shadow *entry[K, T]
	switch {
	case prev == nil:
	case prev.loc == locFlight:
		shadow = prev
	default:
		c.unlink(prev, now)
		c.dequeue(prev)
		shadow = c.keys[key] // the attempt in flight prev shadowed, if any
		if shadow != nil {
			delete(c.keys, key)
		}
		c.retire(prev, now)
	}
	m := c.newMember(item, now)
	m.setShadow(shadow)
	if shadow != nil {
		shadow.set(flagReadded, true)
	}
	c.keys[key] = m
	c.attach(m, labelAdd, now)
	return true
}

// updateGrouped is Update when groups are on; false leaves a lone item to
// Update. A member that changes group leaves the old one and is added to
// the new one. In the same group:
//   - in flight: the new item is kept for the outcome, and the events the
//     update amounts to are recorded for the attempt's hints;
//   - incomplete, pending, or in an entity in activeQ or backoffQ: the
//     item is replaced;
//   - in a parked or gated entity: replaced, and the entity moves if the
//     hints accept one of the update's events for this member.
//
// O(log n) plus the hints of the update's events.
func (c *Core[K, T]) updateGrouped(oldItem, newItem T, now time.Time) bool {
	key := c.cfg.Key(newItem)
	m := c.keys[key]
	if m == nil || m.kind != kindMember {
		if c.cfg.Group(newItem) == "" {
			return false
		}
		return c.addGrouped(newItem, now)
	}
	if name := c.cfg.Group(newItem); name != m.grp.name {
		if name != "" {
			return c.addGrouped(newItem, now)
		}
		// Out of its group: a lone item now, queued even if an older lone
		// attempt of the key is still in flight.
		if m.loc == locMemberFlight {
			m.set(flagDeleted, true)
			delete(c.keys, key)
		} else {
			c.removeMember(m, now)
		}
		e := c.newEntry(newItem, now)
		c.enqueue(e)
		c.toActive(e, labelUpdate, false, now)
		return true
	}
	m.Item = newItem
	c.memberKeys(m)
	if m.loc == locMember {
		m.grp.classes[m.idx] = m.hclass
	}
	g := m.grp
	switch m.loc {
	case locMemberFlight:
		m.set(flagUpdated, true)
		for _, ev := range c.updateEvents(oldItem, newItem) {
			c.flights.record(flightEvent[K, T]{event: ev, label: c.label(ev), oldObj: oldItem, newObj: newItem})
		}
		return true
	case locIncomplete, locPending:
		return true
	}
	e := g.ent
	if g.rep == m {
		c.represent(e, newItem)
	}
	if e.loc != locParked && e.loc != locGated {
		return true
	}
	events := c.updateEvents(oldItem, newItem)
	if c.cfg.DisableQueueingHints {
		if len(events) > 0 {
			c.requeue(e, afterBackoff, labelUpdate, now)
		}
		return true
	}
	for _, ev := range events {
		if e.loc == locGated && !c.gatingMatches(e, ev) {
			continue
		}
		label := c.label(ev)
		s := afterBackoff
		if e.held() && !ev.wildcard() {
			s = c.worthItem(e, newItem, ev, label, oldItem, newItem)
		}
		if s == stayParked {
			continue
		}
		if l := c.requeue(e, s, label, now); l != locParked && l != locGated {
			return true
		}
	}
	return true
}

// deleteMember removes member m. A member in flight is marked, so that
// its attempt's outcome drops it. O(log n).
func (c *Core[K, T]) deleteMember(m *entry[K, T], now time.Time) error {
	if m.loc == locMemberFlight {
		m.set(flagDeleted, true)
		return nil
	}
	c.removeMember(m, now)
	return nil
}

// activateMember moves member m's entity to activeQ. For a member in
// flight, or pending on its group's attempt, the activation is remembered
// for that attempt's outcome.
func (c *Core[K, T]) activateMember(m *entry[K, T], now time.Time) {
	g := m.grp
	switch m.loc {
	case locMember:
		if e := g.ent; e.loc != locActive {
			c.toActive(e, labelForceActivate, e.loc == locBackoffUnsched || e.loc == locBackoffError, now)
		}
	case locMemberFlight, locPending:
		c.flights.record(flightEvent[K, T]{event: eventForceActivate, target: m.key, hasTarget: true})
	}
	c.moveRequestCycle = c.cycle
}

// parkMember is Park of member item, whose key is unknown: it comes back
// as failed and joins its group. If it creates the group's entity, the
// entity takes the failure; it joins an existing entity as by Add.
func (c *Core[K, T]) parkMember(key K, item T, f Failure, now time.Time) {
	m := c.newMember(item, now)
	m.RejectedBy = c.lists.of(f.RejectedBy)
	m.WaitingOn = c.lists.of(f.WaitingOn)
	m.Message, m.Reasons = f.Message, slices.Clone(f.Reasons)
	c.keys[key] = m
	g := c.group(c.cfg.Group(item))
	m.grp = g
	if !g.known || g.flight != nil || g.ent != nil {
		c.attach(m, labelAttemptFailure, now)
		return
	}
	g.put(m, locMember)
	e := c.newEntity(g, m)
	e.Message, e.Reasons = f.Message, slices.Clone(f.Reasons)
	rejected := len(f.RejectedBy)+len(f.WaitingOn) > 0
	s := afterBackoff
	if rejected {
		e.RejectedBy = c.lists.of(f.RejectedBy)
		e.WaitingOn = c.lists.of(f.WaitingOn)
		e.UnschedulableCount++
		if !c.cfg.DisableQueueingHints { // with hints off, Park backs off
			s = stayParked
		}
	} else {
		e.ConsecutiveErrors++
	}
	c.requeue(e, s, labelAttemptFailure, now)
}
