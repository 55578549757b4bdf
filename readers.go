package schedq

import (
	"maps"
	"time"
)

// Get returns the item with key and where it is: queued, or else in
// flight. O(1).
func (c *Core[K, T]) Get(key K) (Info[T], Location, bool) {
	if e := c.keys[key]; e != nil {
		if e.kind == kindMember {
			return e.Info, c.memberLocation(e), true
		}
		return e.Info, e.loc.location(), true
	}
	return Info[T]{}, 0, false
}

// Counts returns the number of items in each place, a group's members
// counted one by one in the place of their group. O(1), plus O(g) for g
// groups.
func (c *Core[K, T]) Counts() Counts {
	n := c.entityCounts()
	if len(c.groups) > 0 {
		n = c.memberCounts(n)
	}
	return n
}

// entityCounts returns the number of entities in each place: lone items
// and groups alike. O(1).
func (c *Core[K, T]) entityCounts() Counts {
	return Counts{
		Active:        c.active.Len(),
		Backoff:       c.backoffU.Len() + c.backoffE.Len(),
		Unschedulable: c.parked.len() - c.parked.gated,
		Gated:         c.parked.gated,
		InFlight:      c.flights.len(),
	}
}

// Stats returns the counts and the levels behind the queue's gauges: the
// items each plugin holds back, and the events kept for attempts in flight.
// O(p + e) for p plugins and e kept events.
func (c *Core[K, T]) Stats() Stats {
	s := Stats{Counts: c.Counts(), Entities: c.entities(), HeldBy: maps.Clone(c.byPlugin), InFlightEvents: map[string]int{}}
	if s.HeldBy == nil {
		s.HeldBy = map[string]int{}
	}
	if n := c.flights.len(); n > 0 {
		s.InFlightEvents[labelInFlight] = n
	}
	for i := range c.flights.log {
		s.InFlightEvents[c.flights.log[i].label]++
	}
	return s
}

// check runs the invariant checker after an operation, if the caller
// asked for it (Config.CheckInvariants).
func (c *Core[K, T]) check() {
	if c.cfg.CheckInvariants != nil {
		if err := c.checkInvariants(); err != nil {
			c.cfg.CheckInvariants(err)
		}
	}
}

// since returns the time from a Unix-nanosecond instant to now.
func since(ns int64, now time.Time) time.Duration { return time.Duration(now.UnixNano() - ns) }
