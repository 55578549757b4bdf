package schedq

import (
	"cmp"
	"slices"
	"time"
)

// A cohort's members in pop order. A move request that a wake budget
// limits (Config.ClassBudget, the default order) offers its room to its
// candidates in pop order; when they are the members of one cohort, most
// of them are left parked, in the event's tail, and later offers take
// from the tail's front. Ordering the candidates per event (a heap of
// thousands, built anew by each of thousands of events) was most of what
// a pod's end cost in a forecast. So each cohort also keeps its members'
// records in pop order (cohortOrder), appended as they join, and marked
// as they leave; an event takes its few pods from the front, and its tail
// is a cursor into the records (roomGroup.ord), not a copy.
//
// Exactness: the heap breaks ties of priority and timestamp by the
// candidates' order in the index, which swap-removal changes between
// events; a cursor cannot. A cohort whose members tie is therefore not
// kept in order (cohort.tied), and its events use the heap as before, so
// that every event's wakes, deferrals and later offers are those of the
// heap. A record holds the sort keys its member had when it joined, as a
// heap slot holds those of the event: a member whose priority changes
// while parked drops the order (rekey), to be built anew; the groups
// holding the old records keep them, as a heap keeps its slots.
//
// A record is a candidate of group g (it was a member when g was made)
// if it joined before g (in < g.seq) and had not left by then (out, the
// parked.seq at its leaving plus one, is 0 or above g.seq).

// cohortOrder is a cohort's records in pop order: higher priority first,
// then the earlier timestamp, with no two equal. Records are only
// appended and marked: the groups whose tails point into it read it as
// it was, and a rebuilt order is a new cohortOrder. head is the first
// record not yet left; dead counts the records left.
type cohortOrder[K comparable, T any] struct {
	recs []orderRec[K, T]
	head int
	dead int
}

// orderRec is a member's record: its sort keys when it joined, the
// parked.seq then (in), and that at its leaving plus one (out, 0 while a
// member).
type orderRec[K comparable, T any] struct {
	e    *entry[K, T]
	prio int32
	ts   int64
	in   uint64
	out  uint64
}

// keysBefore reports whether a record with keys (p1, t1) pops before one
// with (p2, t2).
func keysBefore(p1 int32, t1 int64, p2 int32, t2 int64) bool {
	if p1 != p2 {
		return p1 > p2
	}
	return t1 < t2
}

// candidate reports whether r was a member of its cohort when g was
// made.
func (g *roomGroup[K, T]) candidate(r *orderRec[K, T]) bool {
	return r.in < g.seq && (r.out == 0 || r.out > g.seq)
}

// orderJoin appends e's record to co's order if e pops after its last
// record; otherwise the order is dropped, to be built anew when an event
// needs it (ensureOrder). O(1) amortized.
func (p *parked[K, T]) orderJoin(co *cohort[K, T], e *entry[K, T]) {
	o := co.ord
	if o == nil {
		return
	}
	if n := len(o.recs); n > 0 && !keysBefore(o.recs[n-1].prio, o.recs[n-1].ts, e.prio, e.ts) {
		co.ord = nil
		return
	}
	e.more.opos = int32(len(o.recs))
	o.recs = append(o.recs, orderRec[K, T]{e: e, prio: e.prio, ts: e.ts, in: e.more.joined})
}

// orderLeave marks e's record as left, as e leaves its cohort co. O(1)
// amortized (the head moves past each record once).
func (p *parked[K, T]) orderLeave(co *cohort[K, T], e *entry[K, T]) {
	o := co.ord
	if o == nil {
		return
	}
	o.recs[e.more.opos].out = p.seq + 1
	o.dead++
	for o.head < len(o.recs) && o.recs[o.head].out != 0 {
		o.head++
	}
	if o.dead > 8 && 2*o.dead > len(o.recs) {
		co.ord = o.compacted()
	}
}

// compacted returns a new order of o's records not left, each member's
// place noted (o itself is left as it is, for the groups that read it).
// O(r) for r records.
func (o *cohortOrder[K, T]) compacted() *cohortOrder[K, T] {
	recs := make([]orderRec[K, T], 0, len(o.recs)-o.dead)
	for _, r := range o.recs[o.head:] {
		if r.out == 0 {
			r.e.more.opos = int32(len(recs))
			recs = append(recs, r)
		}
	}
	return &cohortOrder[K, T]{recs: recs}
}

// rekey drops the order of parked e's cohort if e's sort keys are no
// longer those of its record (its priority changed with its item). O(1).
func (p *parked[K, T]) rekey(e *entry[K, T]) {
	co := e.cohortOf()
	if co == nil || co.ord == nil {
		return
	}
	if r := &co.ord.recs[e.more.opos]; r.prio != e.prio || r.ts != e.ts {
		co.ord = nil
	}
}

// ensureOrder builds co's order from its members if it was dropped
// (orderJoin, rekey), and reports whether co is kept in order: not if
// two members tie, in which case it is not tried again while the cohort
// lasts, nor without Config's budget by class. O(1) if kept; O(m log m)
// to build, for m members.
func (p *parked[K, T]) ensureOrder(co *cohort[K, T]) bool {
	if co.ord != nil {
		return true
	}
	if co.tied || !p.ordered {
		return false
	}
	recs := make([]orderRec[K, T], 0, len(co.members))
	for _, e := range co.members {
		recs = append(recs, orderRec[K, T]{e: e, prio: e.prio, ts: e.ts, in: e.more.joined})
	}
	sortRecs(recs)
	for i := range recs {
		if i > 0 && !keysBefore(recs[i-1].prio, recs[i-1].ts, recs[i].prio, recs[i].ts) {
			co.tied = true
			return false
		}
		recs[i].e.more.opos = int32(i)
	}
	co.ord = &cohortOrder[K, T]{recs: recs}
	return true
}

// sortRecs sorts records into pop order.
func sortRecs[K comparable, T any](recs []orderRec[K, T]) {
	slices.SortFunc(recs, func(a, b orderRec[K, T]) int {
		if a.prio != b.prio {
			return cmp.Compare(b.prio, a.prio)
		}
		return cmp.Compare(a.ts, b.ts)
	})
}

// tailLen returns how many items g's tail holds, stale ones too: those
// of its heap or of its cursor. O(1).
func (g *roomGroup[K, T]) tailLen() int { return g.tail.Len() + g.ordN }

// popTail takes the first item of g's tail in pop order (which may be
// stale, as a heap's). g.tailLen() must be above 0. O(log t) for a heap
// of t; for a cursor, O(1) amortized over the records it passes.
func (g *roomGroup[K, T]) popTail() deferRef[K, T] {
	if g.ord == nil {
		s, _ := g.tail.Pop()
		return s.Ref
	}
	for {
		r := &g.ord.recs[g.cur]
		g.cur++
		if g.candidate(r) {
			g.ordN--
			if g.ordN == 0 {
				g.ord = nil
			}
			return deferRef[K, T]{e: r.e}
		}
	}
}

// eachTail calls f with each item of g's tail (stale ones too). O(t) for
// t items in a heap; O(r) for the r records after a cursor.
func (g *roomGroup[K, T]) eachTail(f func(deferRef[K, T])) {
	for i := range g.tail.Len() {
		f(g.tail.At(i).Ref)
	}
	if g.ord == nil {
		return
	}
	for i := g.cur; i < len(g.ord.recs); i++ {
		if r := &g.ord.recs[i]; g.candidate(r) {
			f(deferRef[K, T]{e: r.e})
		}
	}
}

// dropTail lets go of g's tail. O(1) besides recycleTail.
func (c *Core[K, T]) dropTail(g *roomGroup[K, T]) {
	c.recycleTail(g.tail.Release())
	g.ord, g.cur, g.ordN = nil, 0, 0
}

// strategyOf returns the strategy the last move request that listed
// parked e gave it: its cohort's, if a request that took from the
// cohort's order came after e joined and after e's own was set. O(1).
func strategyOf[K comparable, T any](e *entry[K, T]) strategy {
	if m := e.more; m != nil {
		if co := m.coh; co != nil && co.stratSeq > m.stratSeq && co.stratSeq > m.joined {
			return co.strat
		}
	}
	return e.strategy
}

// keepStrategy writes into e, as it leaves its cohort, the strategy its
// cohort's record gives it. O(1).
func keepStrategy[K comparable, T any](e *entry[K, T]) {
	m := e.more
	if co := m.coh; co.stratSeq > m.stratSeq && co.stratSeq > m.joined {
		e.strategy, m.stratSeq = co.strat, co.stratSeq
	}
}

// allCohorted reports whether every parked item indexed under a plugin
// that hears ev is in a cohort. O(b) for b such plugins.
func (c *Core[K, T]) allCohorted(ev Event) bool {
	for _, i := range c.hears(ev) {
		if b := c.parked.buckets[c.regs[i].plugin]; b != nil && b.loose > 0 {
			return false
		}
	}
	return true
}

// eachHeard calls f with the bucket of each plugin that hears ev, once,
// in the order of the registrations (as judgeAll visits them).
func (c *Core[K, T]) eachHeard(ev Event, f func(*bucket[K, T])) {
	last := ""
	for _, i := range c.hears(ev) {
		r := &c.regs[i]
		if r.plugin == last {
			continue
		}
		last = r.plugin // regs are grouped by plugin
		if b := c.parked.buckets[r.plugin]; b != nil {
			f(b)
		}
	}
}

// judgeCohortsFirst judges the cohorts of every bucket that hears ev (no
// item is outside a cohort: allCohorted), and returns how many items they
// hold. If exactly one cohort moves, not gated and kept in order, it is
// c.ordCo: the request's candidates are its members, and wakeOrdered
// takes them from its order without listing them. Judging the cohorts of
// all buckets before listing any changes nothing: with no item outside a
// cohort, listing asks no hint. O(k) for k cohorts, besides ensureOrder.
func (c *Core[K, T]) judgeCohortsFirst(ev Event, label string, oldObj, newObj any) int {
	c.ordMoving, c.ordLast, c.ordCo = 0, nil, nil
	examined := 0
	c.eachHeard(ev, func(b *bucket[K, T]) {
		_, n := c.judgeCohorts(b, ev, label, oldObj, newObj)
		examined += n
	})
	if co := c.ordLast; c.ordMoving == 1 && co.key.gate == "" && c.parked.ensureOrder(co) {
		c.ordCo = co
	}
	c.ordLast = nil
	return examined
}

// listBuckets lists the members of the moving cohorts judged by
// judgeCohortsFirst, bucket by bucket, as judgeBucket does.
func (c *Core[K, T]) listBuckets(out []mover[K, T], ev Event, label string, oldObj, newObj any) []mover[K, T] {
	c.eachHeard(ev, func(b *bucket[K, T]) {
		for _, co := range b.cohorts {
			if co.first == b && co.verdict != stayParked {
				out, _ = c.listBucket(out, b, ev, label, oldObj, newObj)
				return
			}
		}
	})
	return out
}

// wakeOrdered is moveItems' offer of room b to the members of co, the
// one cohort the request moves (judgeCohortsFirst), as wakeWithin and
// wakeByClass would make it with the members listed: the same Take and
// Return calls, the same wakes and deferrals, and a tail that is a
// cursor into co's order rather than a heap of its members. It returns
// how many items it woke. O(w + d) for w items woken and d records
// passed, when the room does not hold all the members; else as
// wakeWithin.
func (c *Core[K, T]) wakeOrdered(b Budget[T], label string, co *cohort[K, T], now time.Time) int {
	bk := co.first
	fit := 0 // moveItems' first offer: in the index's order, until one does not fit
	for i, x := range bk.cohs {
		if x != co {
			continue
		}
		if !b.Take(bk.items[i].Item) {
			break
		}
		fit++
	}
	if fit == len(co.members) {
		ready := c.ready[:0]
		for i, x := range bk.cohs {
			if x == co {
				e := bk.items[i]
				e.strategy, e.more.stratSeq = co.verdict, c.parked.seq
				ready = append(ready, e)
			}
		}
		n := c.wakeWithin(b, label, ready, fit, now)
		clear(ready)
		c.ready = ready[:0]
		return n
	}
	c.parked.seq++
	g := &roomGroup[K, T]{b: b, label: label, seq: c.parked.seq, key: b.Key()}
	for i, x := range bk.cohs {
		if fit == 0 {
			break
		}
		if x == co {
			b.Return(bk.items[i].Item) // undone, as wakeWithin does
			fit--
		}
	}
	co.strat, co.stratSeq = co.verdict, g.seq
	c.takeOrdered(g, co, now)
	return c.wakeDone(g, now)
}

// takeOrdered is wakeByClass for the members of co, in its order: it
// wakes them from the front while they fit, defers the first that does
// not, and leaves the rest in g's tail, a cursor into the order.
func (c *Core[K, T]) takeOrdered(g *roomGroup[K, T], co *cohort[K, T], now time.Time) {
	// A wake may copy co's order (orderLeave), marking the later wakes
	// in the copy only: o is read as it was, and the members before the
	// cursor are counted as they are passed, not from o's marks.
	o := co.ord
	i, held := o.head, 0
	for i < len(o.recs) {
		r := &o.recs[i]
		i++
		if r.out != 0 {
			continue
		}
		if g.b.Take(r.e.Item) {
			c.wake(g, r.e, g.label, now)
			continue
		}
		g.deferEntry(r.e) // its class found no room: no other member fits
		held = 1          // the one member before the cursor
		break
	}
	n := len(co.members) - held
	if n == 0 {
		return
	}
	g.ord, g.cur, g.ordN = o, i, n
	if c.deferLazily(g, true, now.UnixNano()) {
		return
	}
	c.markTail(g, now)
}
