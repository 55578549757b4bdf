package schedq

// Deferral by cohort. A budget's tail (wakeByClass) holds most of the
// items a move request woke no room for: with thousands parked, marking
// each of them deferred, and unmarking each when the event ends, is most
// of what an event costs. When the tail's items are the members of the
// cohorts the request moved, less those it took from the heap, the group
// records those cohorts instead (roomGroup.lazy), and each cohort the
// live groups that defer it so (cohort.lazy): a member that joined its
// cohort before such a group was made, and that the group does not hold
// one by one (roomGroup.deferred), is deferred by it. The readers ask
// the cohort (deferredCount, deferredBy, lastFlushed); a member that
// leaves its cohort takes what the cohort's records said of it along
// (leaveDefers). The tail's heap, and so the order of later offers, is
// that of the per-item deferral.

// noteMoving records, for wakeByClass, a cohort a request without a
// match moves (judgeBucket). O(1) amortized.
func (c *Core[K, T]) noteMoving(co *cohort[K, T]) {
	if co.key.gate == "" {
		c.moving = append(c.moving, co)
	}
}

// movingMembers returns how many members the cohorts of c.moving hold,
// or -1 if the request was not judged by cohort.
func (c *Core[K, T]) movingMembers() int {
	if !c.movingOK {
		return -1
	}
	n := 0
	for _, co := range c.moving {
		n += len(co.members)
	}
	return n
}

// deferLazily defers g's tail with its cohorts, if its items are the
// members of the cohorts in c.moving (ok: every candidate was one) less
// those g.deferred holds, and reports whether it did. O(c + d) for c
// cohorts and d items in g.deferred.
func (c *Core[K, T]) deferLazily(g *roomGroup[K, T], ok bool, nowNs int64) bool {
	if !ok {
		return false
	}
	for _, co := range c.moving {
		co.mark = 0
	}
	for _, r := range g.deferred {
		co := r.e.cohortOf()
		if co == nil {
			return false
		}
		co.mark++
	}
	n := 0
	for _, co := range c.moving {
		n += len(co.members) - co.mark
	}
	if n != g.tailLen() {
		return false
	}
	g.lazyTail = true
	var tc classSet
	for _, co := range c.moving {
		if len(co.members) == co.mark {
			continue
		}
		g.lazy = append(g.lazy, co)
		co.lazy = append(co.lazy, g)
		co.lastG = g
		if tc.first(co.key.class) {
			g.tailClasses = append(g.tailClasses, co.key.class)
		}
		if g.woken > 0 {
			co.flushAt, co.flushSeq = nowNs, g.seq // see wakeWithin
		}
	}
	return true
}

// noteFlushed sets e's last flush (entryMore.lastFlush) to ns, noting
// when, so that it is not taken for older than its cohort's record.
// O(1).
func (c *Core[K, T]) noteFlushed(e *entry[K, T], ns int64) {
	m := e.ext()
	m.lastFlush, m.flushSeq = ns, c.parked.seq
}

// cohortFlush reports the last flush that e's cohort's record gives e,
// if that record is newer than e's own.
func cohortFlush[K comparable, T any](m *entryMore[K, T]) (int64, bool) {
	co := m.coh
	if co != nil && co.flushSeq > m.joined && co.flushSeq > m.flushSeq {
		return co.flushAt, true
	}
	return 0, false
}

// holds reports whether g holds e one by one. O(d) for d items in
// g.deferred.
func (g *roomGroup[K, T]) holds(e *entry[K, T]) bool {
	for _, r := range g.deferred {
		if r.e == e {
			return true
		}
	}
	return false
}

// countOut counts e, which leaves g's lazy tail for g.deferred, among
// the events it waits on, unless it was counted when it changed cohort
// (g.moved). O(1), O(len(g.moved)) if any.
func (g *roomGroup[K, T]) countOut(e *entry[K, T]) {
	var found bool
	if g.moved, found = dropOne(g.moved, e); !found {
		e.more.deferCount++
	}
}

// endLazy takes ended g out of the lists of the cohorts it deferred.
// O(c·l) for c cohorts and l live groups on each.
func (c *Core[K, T]) endLazy(g *roomGroup[K, T]) {
	for _, co := range g.lazy {
		co.lazy, _ = dropOne(co.lazy, g)
	}
	g.lazy = nil
}

// covers reports whether g, which defers e's cohort lazily, defers e.
func (g *roomGroup[K, T]) covers(e *entry[K, T]) bool {
	return g.seq > e.more.joined && !g.holds(e)
}

// lazyCount returns how many live groups defer e with its cohort.
// O(l·d) for l live groups on the cohort and d items each holds one by
// one.
func lazyCount[K comparable, T any](e *entry[K, T]) int {
	co := e.cohortOf()
	if co == nil {
		return 0
	}
	n := 0
	for _, g := range co.lazy {
		if g.covers(e) {
			n++
		}
	}
	return n
}

// deferredCount returns how many events that have not ended deferred e.
func (c *Core[K, T]) deferredCount(e *entry[K, T]) int {
	if e.more == nil {
		return 0
	}
	return int(e.more.deferCount) + lazyCount(e)
}

// deferredBy returns the last budget group that deferred e (it may have
// ended since), if e still waits on the room of a group that has not
// ended, else nil.
func (c *Core[K, T]) deferredBy(e *entry[K, T]) *roomGroup[K, T] {
	if c.deferredCount(e) == 0 {
		return nil
	}
	return lastDeferrer(e)
}

// lastDeferrer returns the last group that deferred e one by one or
// with its cohort, since its deferrals were last cleared, or nil.
func lastDeferrer[K comparable, T any](e *entry[K, T]) *roomGroup[K, T] {
	m := e.more
	g := m.lastDeferrer
	if co := m.coh; co != nil && co.lastG != nil && co.lastG.seq > m.joined && (g == nil || co.lastG.seq > g.seq) {
		g = co.lastG
	}
	return g
}

// lastFlushed returns the last leftover flush that tried e, or the last
// event whose room went to others while it was deferred (Unix ns), 0 if
// none: the later noted of e's own and its cohort's record.
func (c *Core[K, T]) lastFlushed(e *entry[K, T]) int64 {
	m := e.more
	if m == nil {
		return 0
	}
	if ns, ok := cohortFlush(m); ok {
		return ns
	}
	return m.lastFlush
}

// leaveDefers writes what e's cohort's records say of e into e, as it
// leaves the cohort: the last event it heard, and, if it changes cohort
// while parked (moving), the groups that defer it with the cohort, which
// count it one by one from now on. O(l·d) for l live groups on the
// cohort, as lazyCount, when moving, else O(1).
func leaveDefers[K comparable, T any](e *entry[K, T], moving bool) {
	m, co := e.more, e.more.coh
	if ns, ok := cohortFlush(m); ok {
		m.lastFlush, m.flushSeq = ns, co.flushSeq
	}
	if !moving {
		return
	}
	for _, g := range co.lazy {
		if g.covers(e) {
			m.deferCount++
			g.moved = append(g.moved, e)
		}
	}
	m.lastDeferrer = lastDeferrer(e)
}

// dropOne removes the first x from s by moving the last element into its
// place (the order is not kept), clears the vacated slot so that it holds
// no pointer, and reports whether x was there. O(len(s)).
func dropOne[P comparable](s []P, x P) ([]P, bool) {
	for i, y := range s {
		if y == x {
			var zero P
			s[i] = s[len(s)-1]
			s[len(s)-1] = zero
			return s[:len(s)-1], true
		}
	}
	return s, false
}
