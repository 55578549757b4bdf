package schedq

import (
	"fmt"
	"time"
)

// EntityCounts is the number of queue entities in each place, by kind.
type EntityCounts struct {
	// Lone counts lone items, one entity each.
	Lone Counts `json:"lone"`
	// Groups counts group entities; Incomplete and Pending count the
	// groups that have members waiting so.
	Groups Counts `json:"groups"`
}

// memberLocation is where member m is: its entity's place, or apart.
func (c *Core[K, T]) memberLocation(m *entry[K, T]) Location {
	switch m.loc {
	case locMember:
		return m.grp.ent.loc.location()
	case locMemberFlight:
		return InFlight
	case locIncomplete:
		return InIncomplete
	case locPending:
		return InPending
	}
	return 0
}

// add adds n to the count of place l.
func (n *Counts) add(l Location, k int) {
	switch l {
	case InActive:
		n.Active += k
	case InBackoff:
		n.Backoff += k
	case InUnschedulable:
		n.Unschedulable += k
	case InGated:
		n.Gated += k
	case InFlight:
		n.InFlight += k
	case InIncomplete:
		n.Incomplete += k
	case InPending:
		n.Pending += k
	}
}

// memberCounts turns entity counts into item counts: each group entity
// counts as its members, and waiting members count apart. O(g).
func (c *Core[K, T]) memberCounts(n Counts) Counts {
	for _, g := range c.groups {
		if e := g.ent; e != nil {
			n.add(e.loc.location(), len(g.queued)-1)
		}
		if g.flight != nil {
			n.add(InFlight, len(g.flying)-1)
		}
		if len(g.waiting) > 0 {
			n.add(g.waiting[0].loc.waitLocation(), len(g.waiting))
		}
	}
	return n
}

func (l loc) waitLocation() Location {
	if l == locPending {
		return InPending
	}
	return InIncomplete
}

// entities counts the entities in each place by kind. O(g).
func (c *Core[K, T]) entities() EntityCounts {
	x := EntityCounts{Lone: c.entityCounts()}
	for _, g := range c.groups {
		if e := g.ent; e != nil {
			x.Lone.add(e.loc.location(), -1)
			x.Groups.add(e.loc.location(), 1)
		}
		if g.flight != nil {
			x.Lone.add(InFlight, -1)
			x.Groups.add(InFlight, 1)
		}
		if len(g.waiting) > 0 {
			x.Groups.add(g.waiting[0].loc.waitLocation(), 1)
		}
	}
	return x
}

// explainMember explains member m: its group, its group's place, and why.
func (c *Core[K, T]) explainMember(m *entry[K, T], now time.Time) Explanation[K] {
	g := m.grp
	var x Explanation[K]
	switch e := g.ent; {
	case m.loc == locMember:
		x = c.explain(e, now)
	case m.loc == locMemberFlight:
		x = c.explain(g.flight, now)
	default:
		x = Explanation[K]{
			Location: c.memberLocation(m),
			Since:    time.Unix(0, m.Timestamp.UnixNano()).UTC(),
			Status: Status{
				Timestamp:               m.Timestamp,
				InitialAttemptTimestamp: m.InitialAttemptTimestamp,
				RejectedBy:              m.RejectedBy,
				WaitingOn:               m.WaitingOn,
				Reasons:                 m.Reasons,
				Message:                 m.Message,
			},
		}
	}
	x.Key = m.key
	x.Group = g.name
	x.Attempts = m.Attempts
	x.Reason = c.memberReason(m, x.Reason)
	c.noteNomination(&x, m.key)
	return x
}

// memberReason says why member m waits, around its entity's reason.
func (c *Core[K, T]) memberReason(m *entry[K, T], entity string) string {
	g := m.grp
	switch m.loc {
	case locIncomplete:
		return fmt.Sprintf("waiting for group %q: no such group object", g.name)
	case locPending:
		return fmt.Sprintf("waiting for group %q: its attempt in flight must end first", g.name)
	case locMemberFlight:
		return fmt.Sprintf("group %q (%d members) is being tried now (in flight)", g.name, len(g.flying))
	}
	prefix := fmt.Sprintf("group %q (%d members, min %d)", g.name, len(g.queued), g.spec.MinCount)
	if g.ent.loc == locGated {
		for _, o := range g.queued {
			if o.gated() {
				return fmt.Sprintf("%s: member %v is gated by %s; %s", prefix, o.key, o.GatedBy, entity)
			}
		}
	}
	return prefix + ": " + entity
}
