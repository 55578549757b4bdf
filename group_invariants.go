package schedq

// owns reports whether the map (for a lone item) or its group (for a
// group entity) knows queued entry e as queued.
func (c *Core[K, T]) owns(e *entry[K, T]) bool {
	if e.kind == kindGroup {
		return e.grp.ent == e && c.groups[e.grp.name] == e.grp
	}
	return c.queuedEntry(e.key) == e
}

// flies reports whether e is known as the attempt in flight for its key
// or group.
func (c *Core[K, T]) flies(e *entry[K, T]) bool {
	if e.kind == kindGroup {
		return e.grp.flight == e && c.groups[e.grp.name] == e.grp
	}
	return c.flightEntry(e.key) == e
}

func (c *Core[K, T]) groupEntities() (n int) {
	for _, g := range c.groups {
		if g.ent != nil {
			n++
		}
	}
	return n
}

func (c *Core[K, T]) groupFlights() (n int) {
	for _, g := range c.groups {
		if g.flight != nil {
			n++
		}
	}
	return n
}

// queuedEntities lists the lone items and group entities in sub-queues.
func (c *Core[K, T]) queuedEntities() []*entry[K, T] {
	var out []*entry[K, T]
	for _, e := range c.keys {
		if e.kind == kindLone && e.loc != locFlight {
			out = append(out, e)
		}
	}
	for _, g := range c.groups {
		if g.ent != nil {
			out = append(out, g.ent)
		}
	}
	return out
}

// checkGroups verifies the groups: every member is in exactly one place
// (incomplete, its entity, pending or in flight) and its group's list for
// that place points back at it; an entity exists exactly when its group
// is known, not in flight, and has queued members; waiting members wait
// for the right thing; an unknown group with nothing left is forgotten.
func (c *Core[K, T]) checkGroups(bad func(string, ...any)) {
	members := 0
	for key, m := range c.keys {
		if m.kind == kindMember {
			members++
			c.checkMember(key, m, bad)
		}
	}
	listed := 0
	for name, g := range c.groups {
		if g.name != name {
			bad("group map %q holds group %q", name, g.name)
		}
		listed += c.checkGroupLists(g, bad)
		c.checkGroupEntity(g, bad)
		c.checkMemberPriorities(g, bad)
	}
	if listed != members {
		bad("groups list %d members, the map has %d", listed, members)
	}
}

// checkMember verifies one member of the map: its group is the map's, it
// is at its index in the list its place names, it is not counted per
// plugin, and its shadow, if any, is in flight.
func (c *Core[K, T]) checkMember(key K, m *entry[K, T], bad func(string, ...any)) {
	g := m.grp
	if g == nil || c.groups[g.name] != g {
		bad("member %v: group not in the map", key)
		return
	}
	switch m.loc {
	case locMember, locMemberFlight, locIncomplete, locPending:
	default:
		bad("member %v: bad place %d", key, m.loc)
		return
	}
	l := *g.list(m.loc)
	if m.idx < 0 || int(m.idx) >= len(l) || l[m.idx] != m {
		bad("member %v: not at its index %d in group %q", key, m.idx, g.name)
	}
	if m.is(flagCounted) {
		bad("member %v counted per plugin", key)
	}
	if s := m.shadowOf(); s != nil && (s.loc != locFlight || s.key != key) {
		bad("member %v: shadow is not in flight", key)
	}
}

// checkGroupLists verifies a group's three member lists (in flight,
// queued with their hint classes, waiting) and returns how many of their
// members the map holds.
func (c *Core[K, T]) checkGroupLists(g *group[K, T], bad func(string, ...any)) int {
	name := g.name
	listed := len(g.queued) + len(g.waiting)
	for i, m := range g.flying {
		// A member deleted (or re-added elsewhere) during the
		// attempt has left the map.
		if c.keys[m.key] == m {
			listed++
		} else if !m.is(flagDeleted) {
			bad("group %q: in-flight member %v left the map but is not deleted", name, m.key)
		}
		if m.loc != locMemberFlight || int(m.idx) != i || m.grp != g {
			bad("group %q: in-flight member %v misfiled", name, m.key)
		}
	}
	if len(g.classes) != len(g.queued) {
		bad("group %q: %d hint classes for %d queued members", name, len(g.classes), len(g.queued))
	}
	for i, m := range g.queued {
		if m.loc != locMember || int(m.idx) != i || m.grp != g {
			bad("group %q: queued member %v misfiled", name, m.key)
		}
		if i < len(g.classes) && g.classes[i] != m.hclass {
			bad("group %q: queued member %v has hint class %#x, its group lists %#x", name, m.key, m.hclass, g.classes[i])
		}
	}
	want := locIncomplete
	if g.known {
		want = locPending
	}
	for i, m := range g.waiting {
		if m.loc != want || int(m.idx) != i || m.grp != g {
			bad("group %q: waiting member %v at %d, want %d", name, m.key, m.loc, want)
		}
	}
	return listed
}

// checkGroupEntity verifies a group's entity and attempt: an entity
// exactly while members are queued, filed where it sorts, with a queued
// representative; an attempt in flight filed as one; and no empty group
// kept.
func (c *Core[K, T]) checkGroupEntity(g *group[K, T], bad func(string, ...any)) {
	name := g.name
	if len(g.waiting) > 0 && g.known && g.flight == nil {
		bad("group %q: known and not in flight, but %d members wait", name, len(g.waiting))
	}
	if (g.ent != nil) != (len(g.queued) > 0) {
		bad("group %q: entity %v with %d queued members", name, g.ent != nil, len(g.queued))
	}
	if g.ent != nil && (!g.known || g.flight != nil) {
		bad("group %q: entity while unknown or in flight", name)
	}
	if e := g.ent; e != nil {
		if e.kind != kindGroup || e.grp != g || e.loc.location() == 0 || e.loc == locFlight {
			bad("group %q: entity misfiled (loc %d)", name, e.loc)
		}
		if g.rep == nil || g.rep.loc != locMember || g.rep.grp != g {
			bad("group %q: representative member is not queued in it", name)
		}
		if c.cfg.Priority != nil && (e.loc == locActive || e.loc == locBackoffUnsched) && e.prio != g.spec.Priority {
			bad("group %q: entity sorted at priority %d, its spec says %d", name, e.prio, g.spec.Priority)
		}
	}
	if e := g.flight; e != nil && (e.kind != kindGroup || e.grp != g || e.loc != locFlight) {
		bad("group %q: attempt in flight misfiled", name)
	}
	if g.flight == nil && len(g.flying) > 0 {
		bad("group %q: %d members in flight without an attempt", name, len(g.flying))
	}
	if !g.known && g.ent == nil && g.flight == nil && len(g.waiting) == 0 {
		bad("group %q: unknown and empty, but kept", name)
	}
}

// checkMemberPriorities verifies, under Config.Priority, the priorities
// cached in g's queued members and in those of its attempt, which order
// them within the group's attempts.
func (c *Core[K, T]) checkMemberPriorities(g *group[K, T], bad func(string, ...any)) {
	if c.cfg.Priority == nil {
		return
	}
	for _, l := range [][]*entry[K, T]{g.queued, g.flying} {
		for _, m := range l {
			if p := c.cfg.Priority(m.Item); !m.is(flagDeleted) && m.prio != p {
				bad("group %q: member %v cached priority %d, Priority says %d", g.name, m.key, m.prio, p)
			}
		}
	}
}
