package schedq

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// GroupSpec is what the caller knows of a group object.
type GroupSpec struct {
	// MinCount is how many members an attempt must place to succeed; >= 1.
	MinCount int
	// Priority orders the group in activeQ under the default order
	// (Config.Priority); members' own priorities do not count.
	Priority int32
}

// validate reports a wrong field of s, wrapping ErrInvalidGroup.
func (s GroupSpec) validate(name string) error {
	if name == "" {
		return fmt.Errorf("%w: name must not be empty", ErrInvalidGroup)
	}
	if s.MinCount < 1 {
		return fmt.Errorf("%w: group %q: MinCount must be >= 1, got %d", ErrInvalidGroup, name, s.MinCount)
	}
	return nil
}

// labelGroupUpdate is the event of a SetGroup that may help a parked group.
const labelGroupUpdate = "GroupUpdate"

// kind tells lone items, group entities and group members apart.
type kind uint8

const (
	kindLone   kind = iota
	kindGroup       // a group's entity: in a sub-queue or in flight, never in Core.keys
	kindMember      // a member: in Core.keys, in one of its group's lists
)

// Where a member is. Members in an entity take the entity's place.
const (
	locMember       loc = iota + 100 // in its group's queued entity
	locMemberFlight                  // in its group's attempt in flight
	locIncomplete                    // its group object is unknown
	locPending                       // arrived while its group was in flight
)

// group is a group object and its members. Every member is in exactly one
// of its lists: queued (the entity ent), flying (the attempt flight) or
// waiting (incomplete, or pending while flight is set). A group has at
// most one entity and one attempt in flight; several groups may be in
// flight at once.
type group[K comparable, T any] struct {
	name    string
	spec    GroupSpec
	known   bool         // SetGroup was called, and no DeleteGroup since
	rep     *entry[K, T] // the member whose item ent carries, for Less
	ent     *entry[K, T] // the queued entity, if any
	flight  *entry[K, T] // the entity in flight, if any
	queued  []*entry[K, T]
	classes []uint64 // the queued members' hint classes, in queued's order
	flying  []*entry[K, T]
	waiting []*entry[K, T]
}

// list returns the list that holds members at l.
func (g *group[K, T]) list(l loc) *[]*entry[K, T] {
	switch l {
	case locMember:
		return &g.queued
	case locMemberFlight:
		return &g.flying
	}
	return &g.waiting
}

// put appends m to the list for l and sets its place. O(1).
func (g *group[K, T]) put(m *entry[K, T], l loc) {
	s := g.list(l)
	m.loc, m.idx = l, int32(len(*s))
	*s = append(*s, m)
	if l == locMember {
		g.classes = append(g.classes, m.hclass)
	}
}

// take removes m from its list (swap-remove). O(1).
func (g *group[K, T]) take(m *entry[K, T]) {
	s := g.list(m.loc)
	last := (*s)[len(*s)-1]
	if m.loc == locMember {
		g.classes[m.idx] = g.classes[len(g.classes)-1]
		g.classes = g.classes[:len(g.classes)-1]
	}
	(*s)[m.idx] = last
	last.idx = m.idx
	(*s)[len(*s)-1] = nil
	*s = (*s)[:len(*s)-1]
	m.loc, m.idx = locNone, -1
}

// group returns the group named name, created unknown if need be.
func (c *Core[K, T]) group(name string) *group[K, T] {
	g := c.groups[name]
	if g == nil {
		if c.groups == nil {
			c.groups = map[string]*group[K, T]{}
		}
		g = &group[K, T]{name: name}
		c.groups[name] = g
	}
	return g
}

// forget drops g once nothing refers to it.
func (c *Core[K, T]) forget(g *group[K, T]) {
	if !g.known && g.ent == nil && g.flight == nil && len(g.waiting) == 0 {
		delete(c.groups, g.name)
	}
}

// SetGroup adds or updates the group object name. Members that waited for
// it (InIncomplete) form the group's entity, which enters activeQ (or is
// gated). A changed Priority re-sorts a queued entity; a lowered MinCount
// moves a parked one, after its backoff, like an event. A bad spec is an
// error wrapping ErrInvalidGroup that names the field, and changes
// nothing. O(m log n) for m members that waited.
func (c *Core[K, T]) SetGroup(name string, spec GroupSpec, now time.Time) error {
	defer c.check()
	if c.cfg.Group == nil {
		return fmt.Errorf("%w: set group %q: Config.Group is nil", ErrInvalidGroup, name)
	}
	if err := spec.validate(name); err != nil {
		return err
	}
	g := c.group(name)
	old, was := g.spec, g.known
	g.spec, g.known = spec, true
	if !was {
		c.resolve(g, now)
		return nil
	}
	if e := g.ent; e != nil && spec.Priority != old.Priority && c.cfg.Priority != nil {
		e.prio = spec.Priority
		switch e.loc {
		case locActive:
			c.fixActive(e)
		case locBackoffUnsched:
			c.backoffU.Fix(int(e.idx))
		}
	}
	if e := g.ent; e != nil && spec.MinCount < old.MinCount && (e.loc == locParked || e.loc == locGated) {
		c.requeue(e, afterBackoff, labelGroupUpdate, now)
	}
	return nil
}

// resolve places the members that waited for g's object. If they form a
// new entity, they enter it all at once, so that its checks run once and
// the earliest arrival is its creator. O(m log m) for m members.
func (c *Core[K, T]) resolve(g *group[K, T], now time.Time) {
	if len(g.waiting) == 0 {
		return
	}
	ms := slices.Clone(g.waiting)
	slices.SortFunc(ms, func(a, b *entry[K, T]) int { return cmpSeq(a.seq, b.seq) })
	if !g.known || g.flight != nil || g.ent != nil {
		for _, m := range ms {
			g.take(m)
			c.attach(m, labelAdd, now)
		}
		return
	}
	for _, m := range ms {
		g.take(m)
		g.put(m, locMember)
	}
	c.toActive(c.newEntity(g, ms[0]), labelAdd, false, now)
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// DeleteGroup forgets the group object name: its queued and pending
// members go back to wait for it (InIncomplete), and so do the members of
// an attempt in flight when it ends. It returns an error wrapping
// ErrNotFound if the group is unknown. O(m) for m members.
func (c *Core[K, T]) DeleteGroup(name string, now time.Time) error {
	defer c.check()
	g := c.groups[name]
	if g == nil || !g.known {
		return fmt.Errorf("%w: group %q", ErrNotFound, name)
	}
	g.known = false
	if e := g.ent; e != nil {
		for len(g.queued) > 0 {
			m := g.queued[len(g.queued)-1]
			g.take(m)
			g.put(m, locIncomplete)
		}
		c.dropEntity(g, now)
	}
	for _, m := range g.waiting {
		m.loc = locIncomplete
	}
	c.forget(g)
	return nil
}

// dropEntity takes g's queued entity out of the sub-queues and recycles it.
func (c *Core[K, T]) dropEntity(g *group[K, T], now time.Time) {
	e := g.ent
	c.unlink(e, now)
	c.queued--
	g.ent = nil
	c.recycle(e)
}

// newEntity makes g's queued entity, created by member m: it takes m's
// Timestamp (and, for a caller's Less, m's item).
func (c *Core[K, T]) newEntity(g *group[K, T], m *entry[K, T]) *entry[K, T] {
	var e *entry[K, T]
	if n := len(c.free); n > 0 {
		e = c.free[n-1]
		c.free[n-1] = nil
		c.free = c.free[:n-1]
	} else {
		e = &entry[K, T]{}
	}
	e.kind, e.grp = kindGroup, g
	e.Item, e.Timestamp = m.Item, m.Timestamp
	g.rep = m
	e.idx = -1
	g.ent = e
	c.queued++
	return e
}

// newMember makes the entry of a member, not yet placed.
func (c *Core[K, T]) newMember(item T, now time.Time) *entry[K, T] {
	m := c.newEntry(item, now)
	m.kind = kindMember
	c.seq++
	m.seq = c.seq
	c.memberKeys(m)
	return m
}

// memberKeys caches the keys members are tried in.
func (c *Core[K, T]) memberKeys(m *entry[K, T]) {
	if c.cfg.Priority != nil {
		m.prio = c.cfg.Priority(m.Item)
	}
	m.ts = m.Timestamp.UnixNano()
	c.classify(m)
}

// classify caches member m's Config.HintClass, if the queue has one.
func (c *Core[K, T]) classify(m *entry[K, T]) {
	if c.cfg.HintClass != nil {
		m.hclass = c.cfg.HintClass(m.Item)
	}
}

// attach places member m, in no list yet, by the state of its group (named
// by Config.Group): incomplete, pending, or in the entity, which it
// creates if need be. An entity it joins goes where upstream sends it:
// from activeQ through the PreEnqueue checks again, from backoffQ to
// backoffQ (or activeQ if its backoff, as computed when it entered
// backoffQ, is over); a parked or gated entity
// stays. It reports whether m created the entity.
func (c *Core[K, T]) attach(m *entry[K, T], label string, now time.Time) bool {
	g := m.grp
	if g == nil {
		g = c.group(c.cfg.Group(m.Item))
		m.grp = g
	}
	switch {
	case !g.known:
		g.put(m, locIncomplete)
		return false
	case g.flight != nil:
		g.put(m, locPending)
		return false
	}
	e := g.ent
	g.put(m, locMember)
	if e == nil {
		e = c.newEntity(g, m)
		c.toActive(e, label, false, now)
		return true
	}
	c.joined(e, label)
	switch e.loc {
	case locActive:
		c.gateOn(e, m, label, now)
	case locBackoffUnsched, locBackoffError:
		// The expiry computed when e entered backoffQ, at its size then:
		// a join grows the cap, never the backoff under way (as upstream,
		// which caches the expiry), and the flush frees e by it too.
		if !c.backoffRunning(e.BackoffExpiry, now) {
			c.toActive(e, label, false, now)
		} else if !c.cfg.DisablePopFromBackoff {
			c.gateOn(e, m, label, now)
		}
	}
	return false
}

// gateOn runs the PreEnqueue checks on m, which joined entity e in activeQ
// or backoffQ (whose other members passed them): if m is gated, so is e.
// O(checks).
func (c *Core[K, T]) gateOn(e, m *entry[K, T], label string, now time.Time) {
	if len(c.cfg.PreEnqueue) == 0 || c.admit(m) {
		return
	}
	c.setGate(e, m.GatedBy)
	c.parkGated(e, label, now)
}

// joined tells the recorder that a member joined entity e where it is.
func (c *Core[K, T]) joined(e *entry[K, T], label string) {
	q := InUnschedulable
	switch e.loc {
	case locActive:
		q = InActive
	case locBackoffUnsched, locBackoffError:
		q = InBackoff
	}
	c.rec.JoinedGroup(q, label, 1)
}

// detach takes member m out of its group's lists. An entity left empty is
// dropped; a gated one that lost a gated member has its checks run again,
// so that deleting the only gated member ungates the group. It returns
// the group.
func (c *Core[K, T]) detach(m *entry[K, T], now time.Time) *group[K, T] {
	g := m.grp
	inEntity := m.loc == locMember
	g.take(m)
	if !inEntity {
		return g
	}
	e := g.ent
	if len(g.queued) == 0 {
		c.dropEntity(g, now)
		return g
	}
	if g.rep == m {
		g.rep = g.queued[0]
		c.represent(e, g.rep.Item)
	}
	if e.loc == locGated && m.gated() {
		c.toActive(e, labelUpdate, false, now)
	}
	return g
}

// represent makes item the one a caller's Less sees for entity e.
func (c *Core[K, T]) represent(e *entry[K, T], item T) {
	old := e.Info
	e.Item = item
	if !c.resorted(e, &old) && !(e.loc == locActive && c.retenanted(e)) {
		return
	}
	switch e.loc {
	case locActive:
		c.fixActive(e)
	case locBackoffUnsched:
		c.backoffU.Fix(int(e.idx))
	}
}

// removeMember forgets a member that is not in flight.
func (c *Core[K, T]) removeMember(m *entry[K, T], now time.Time) {
	g := c.detach(m, now)
	c.unkey(m)
	c.recycle(m)
	c.forget(g)
}

// unkey drops m's key from the map, handing it back to a lone attempt in
// flight that m shadowed, if any.
func (c *Core[K, T]) unkey(m *entry[K, T]) {
	if c.keys[m.key] != m {
		return
	}
	if s := m.shadowOf(); s != nil {
		c.keys[m.key] = s
		m.setShadow(nil)
		return
	}
	delete(c.keys, m.key)
}

// groupSize is the size backoff counts for entity e.
func (e *entry[K, T]) groupSize() int {
	if e.grp.ent == e {
		return len(e.grp.queued)
	}
	return len(e.grp.flying)
}

// maxBackoff is the backoff cap for e: MaxBackoff, times the square root
// of its size for a group of more than one member, saturated at the
// longest Duration (a float64 beyond it would convert to a negative one,
// which means no backoff at all).
func (c *Core[K, T]) maxBackoff(e *entry[K, T]) time.Duration {
	if e.kind != kindGroup {
		return c.cfg.MaxBackoff
	}
	n := e.groupSize()
	if n <= 1 {
		return c.cfg.MaxBackoff
	}
	d := float64(c.cfg.MaxBackoff) * math.Sqrt(float64(n))
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// admitGroup runs the PreEnqueue checks on every member of entity e: any
// gated member gates the group, under the first such member's plugin.
// O(m * checks).
func (c *Core[K, T]) admitGroup(e *entry[K, T]) bool {
	gate := ""
	for _, m := range e.grp.queued {
		if !c.admit(m) && gate == "" {
			gate = m.GatedBy
		}
	}
	c.setGate(e, gate)
	return gate == ""
}

// worthGroup judges an event for entity e member by member, against the
// group's own plugins (decided once for the entity, not per member): the
// best verdict wins. It stops at the first member that earns the best
// verdict the group can get: at once, or, if the group has no pending
// plugin, after backoff. With Config.HintClass, a member whose class an
// earlier member had is not asked: its verdict would be that member's.
// O(m·h) for m members and h hearing hints, the hints running for one
// member per class.
func (c *Core[K, T]) worthGroup(e *entry[K, T], ev Event, label string, oldObj, newObj any) strategy {
	regs := c.heldBy(e, ev)
	if len(regs) == 0 {
		return stayParked
	}
	anyPending := len(e.WaitingOn) > 0
	best := afterBackoff
	if anyPending {
		best = immediately
	}
	g := e.grp
	classes := c.cfg.HintClass != nil
	c.asked.reset()
	s := stayParked
	for i, m := range g.queued {
		// The class is read from the group's list: a member skipped is
		// never read, so a group of alike members costs one member's read.
		if classes && !c.asked.first(g.classes[i]) {
			continue
		}
		if s = max(s, c.askHints(regs, m.Item, m.hclass, label, anyPending, oldObj, newObj)); s == best {
			break
		}
	}
	return s
}

// matchEntry applies a move request's match to e: to each member of a
// group entity, any of which may match.
func (c *Core[K, T]) matchEntry(e *entry[K, T], match func(*Info[T]) bool) bool {
	if e.kind != kindGroup {
		return match(&e.Info)
	}
	for _, m := range e.grp.queued {
		if match(&m.Info) {
			return true
		}
	}
	return false
}

// incoming tells the recorder that e entered sub-queue q.
func (c *Core[K, T]) incoming(e *entry[K, T], q Location, label string) {
	if e.kind == kindGroup {
		c.incomingGroup(e, q, label)
		return
	}
	c.rec.Incoming(q, label)
}

// incomingGroup tells the recorder that group entity e entered q.
func (c *Core[K, T]) incomingGroup(e *entry[K, T], q Location, label string) {
	c.rec.IncomingGroup(q, label, len(e.grp.queued))
}
