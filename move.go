package schedq

import (
	"time"
)

// Move is a move request: ev happened, with its old and new objects
// (either may be nil), so parked items that it may help are requeued. It
// returns at once if no plugin registered for a matching event. Otherwise
// it looks only at the items held back by the plugins that did (every
// parked item for a wildcard event); for each that match accepts (nil
// accepts all) it asks those plugins' hints, and requeues the item to
// activeQ or backoffQ, or leaves it. Gated items move only if their gating
// plugin registered for the event. The event is also recorded for the
// attempts in flight, whose requeue then takes it into account.
//
// match gets a read-only view of the item's Info and must not keep it; it
// narrows a request to the items an object concerns (the items whose
// affinity a new object satisfies, say). Like the hints, it runs under the
// lock and must be pure and fast.
//
// O(k log n) for k examined items; the hints run once per examined item
// and interested plugin, or with Config.HintClass once per class of
// items and interested plugin (moveItems keeps the answers). With
// Config.HintClass and no match, the items are judged by cohort
// (judgeBucket): O(c) for c cohorts if none moves, else O(k) reads of
// the index beside the items and O(m log n) for m moved; with a wake
// budget by class and one cohort moving alone, in order
// (cohort_order.go), O(c) plus the items woken and deferred.
func (c *Core[K, T]) Move(ev Event, oldObj, newObj any, match func(info *Info[T]) bool, now time.Time) {
	defer c.check()
	if ev.wildcard() {
		out := append(c.scratch[:0], c.parked.all...)
		c.scratch = out
		c.moveItems(out, false, ev, oldObj, newObj, match, now)
		return
	}
	if c.interested(ev) {
		c.moveItems(nil, true, ev, oldObj, newObj, match, now)
	}
}

// interested reports whether any plugin registered for an event matching ev.
func (c *Core[K, T]) interested(ev Event) bool {
	return len(c.hears(ev)) > 0
}

// mover is a candidate of a move request that its hints send somewhere.
type mover[K comparable, T any] struct {
	e *entry[K, T]
	s strategy
}

// judgeAll judges the candidates of a move request and returns, into a
// scratch list, those that move, with their strategies, and how many it
// examined. The candidates are list or, with fromBuckets, the parked
// items indexed under a plugin that registered for an event matching ev,
// each once. Each is judged as it is found, while its entry is in the
// cache, and nothing moves until all are judged: judging changes nothing.
func (c *Core[K, T]) judgeAll(list []*entry[K, T], fromBuckets bool, ev Event, label string, oldObj, newObj any, match func(*Info[T]) bool) ([]mover[K, T], int) {
	out := c.movers[:0]
	if !fromBuckets {
		for _, e := range list {
			out = c.judge(out, e, ev, label, oldObj, newObj, match)
		}
		c.movers = out
		return out, len(list)
	}
	c.nextEpoch()
	c.moving, c.movingOK = c.moving[:0], match == nil && c.parked.byClass
	examined, last := 0, ""
	for _, i := range c.hears(ev) {
		r := &c.regs[i]
		if r.plugin == last {
			continue
		}
		last = r.plugin // regs are grouped by plugin
		b := c.parked.buckets[r.plugin]
		if b == nil {
			continue
		}
		if match == nil && c.parked.byClass {
			if c.ordWant && c.allCohorted(ev) {
				// The cohorts of every bucket first: if one moves
				// alone, its order gives the candidates (wakeOrdered).
				examined = c.judgeCohortsFirst(ev, label, oldObj, newObj)
				if c.ordCo == nil {
					out = c.listBuckets(out, ev, label, oldObj, newObj)
				}
				c.movers = out
				return out, examined
			}
			out, examined = c.judgeBucket(out, examined, b, ev, label, oldObj, newObj)
			continue
		}
		for _, e := range b.items {
			if e.gen != c.epoch {
				e.gen = c.epoch
				examined++
				out = c.judge(out, e, ev, label, oldObj, newObj, match)
			}
		}
	}
	c.movers = out
	return out, examined
}

// judge appends e to out, with its strategy, if match accepts it (nil
// accepts all), its gate may lift, and its hints send it somewhere.
func (c *Core[K, T]) judge(out []mover[K, T], e *entry[K, T], ev Event, label string, oldObj, newObj any, match func(*Info[T]) bool) []mover[K, T] {
	if match != nil && !c.matchEntry(e, match) {
		return out
	}
	if s := c.judgeOne(e, ev, label, oldObj, newObj); s != stayParked {
		out = append(out, mover[K, T]{e: e, s: s})
	}
	return out
}

// judgeOne returns where ev sends parked e: nowhere if its gate cannot
// lift, else where its hints send it.
func (c *Core[K, T]) judgeOne(e *entry[K, T], ev Event, label string, oldObj, newObj any) strategy {
	c.judged++
	if e.loc == locGated && !c.gatingMatches(e, ev) {
		return stayParked
	}
	return c.worth(e, ev, label, oldObj, newObj)
}

// judgeBucket is judgeAll's pass over bucket b, for a request that no
// match narrows, with the items filed in cohorts (Config.HintClass). It
// judges each cohort that it meets first in b once, with one of its
// items; if none of them moves and b holds no item outside a cohort, it
// is done without looking at b's items. Otherwise it walks b in order,
// reading each item's cohort beside it, and adds the items of the
// cohorts that move, as judge would have, and judges the items outside
// a cohort one by one. O(k) for k cohorts in b, plus O(len(b.items))
// when any moves. It returns out and examined, updated; the items
// counted are those of the cohorts met first in b, and the others b
// holds that no earlier bucket did.
func (c *Core[K, T]) judgeBucket(out []mover[K, T], examined int, b *bucket[K, T], ev Event, label string, oldObj, newObj any) ([]mover[K, T], int) {
	moves, n := c.judgeCohorts(b, ev, label, oldObj, newObj)
	examined += n
	if !moves && b.loose == 0 {
		return out, examined
	}
	out, n = c.listBucket(out, b, ev, label, oldObj, newObj)
	return out, examined + n
}

// judgeCohorts judges the cohorts of b not met in an earlier bucket of
// the request, and reports whether any moves and how many items they
// hold. O(k) for k cohorts in b.
func (c *Core[K, T]) judgeCohorts(b *bucket[K, T], ev Event, label string, oldObj, newObj any) (moves bool, examined int) {
	for _, co := range b.cohorts {
		if co.epoch == c.epoch {
			continue // met in an earlier bucket
		}
		co.epoch, co.first = c.epoch, b
		examined += len(co.members)
		co.verdict = c.judgeOne(co.members[0], ev, label, oldObj, newObj)
		if co.verdict != stayParked {
			moves = true
			c.noteMoving(co)
			c.ordMoving++
			c.ordLast = co
		}
	}
	return moves, examined
}

// listBucket is judgeBucket's walk of b in order: it appends the items
// of the moving cohorts met first in b, and judges those outside a
// cohort one by one. O(len(b.items)).
func (c *Core[K, T]) listBucket(out []mover[K, T], b *bucket[K, T], ev Event, label string, oldObj, newObj any) ([]mover[K, T], int) {
	examined := 0
	for i, co := range b.cohs {
		if co == nil {
			if e := b.items[i]; e.gen != c.epoch {
				e.gen = c.epoch
				examined++
				out = c.judge(out, e, ev, label, oldObj, newObj, nil)
			}
			continue
		}
		if co.first == b && co.verdict != stayParked {
			out = append(out, mover[K, T]{e: b.items[i], s: co.verdict})
		}
	}
	return out, examined
}

// nextEpoch starts a move request's epoch, in which judgeAll visits
// each parked entry once. An entry's mark is cleared when it is parked,
// so only parked entries carry marks; when the counter wraps (once every
// 2^32 requests) their marks are cleared too, so that no old mark equals
// a new epoch. O(1), O(p) for p parked items on a wrap.
func (c *Core[K, T]) nextEpoch() {
	c.epoch++
	if c.epoch == 0 {
		for _, e := range c.parked.all {
			e.gen = 0
		}
		for _, co := range c.parked.byKey {
			co.epoch = 0
		}
		c.epoch = 1
	}
}

// moveItems requeues the candidates (list, or the parked items of the
// plugins that hear ev, see judgeAll) that match accepts (nil: all) and
// their hints send somewhere, then records the move request. It clears
// its scratch lists.
func (c *Core[K, T]) moveItems(list []*entry[K, T], fromBuckets bool, ev Event, oldObj, newObj any, match func(*Info[T]) bool, now time.Time) {
	label := c.label(ev)
	var b Budget[T]
	if c.cfg.Budget != nil && !ev.wildcard() {
		if room, ok := c.cfg.Budget(ev, oldObj, newObj); ok {
			b = room // ok false: no limit, whatever room holds
			if nb, ok := room.(NominatedBudget[T]); ok {
				nb.UseNominated(c.Nominated)
			}
		}
	}
	if c.cfg.HintClass != nil && !ev.wildcard() {
		c.memo.start()
	}
	c.heldFor.inMove, c.heldFor.lastPending, c.heldFor.lastUnsched = true, nil, nil
	c.ordWant = b != nil && c.cfg.Priority != nil && c.cfg.ClassBudget && c.cfg.HintClass != nil && c.fair == nil
	movers, examined := c.judgeAll(list, fromBuckets, ev, label, oldObj, newObj, match)
	c.heldFor.inMove = false
	c.memo.stop()
	moved, fit, ready := 0, 0, c.ready[:0]
	for _, m := range movers {
		e := m.e
		if b != nil && e.loc == locParked && e.kind != kindGroup {
			e.strategy = m.s
			if c.parked.ordered && e.more != nil {
				e.more.stratSeq = c.parked.seq // see strategyOf
			}
			ready = append(ready, e)
			if fit == len(ready)-1 && b.Take(e.Item) {
				fit++ // so far they all fit (see wakeWithin)
			}
			continue
		}
		if l := c.requeue(e, m.s, label, now); l != locParked && l != locGated {
			moved++
		}
	}
	if len(ready) > 0 {
		moved += c.wakeWithin(b, label, ready, fit, now)
	}
	clear(ready)
	c.ready = ready[:0]
	if co := c.ordCo; co != nil {
		c.ordCo = nil
		moved += c.wakeOrdered(b, label, co, now)
	}
	clear(c.moving)
	c.moving, c.movingOK = c.moving[:0], false
	c.ordLast, c.ordMoving = nil, 0
	clear(movers)
	clear(list)
	c.moveRequestCycle = c.cycle
	c.flights.record(flightEvent[K, T]{event: ev, label: label, oldObj: oldObj, newObj: newObj})
	c.rec.Moved(label, examined, moved)
}

// Activate moves the named items to activeQ at once, from the parking area
// (after the PreEnqueue checks) or from backoffQ. For a key in flight, the
// activation is remembered and sends the item back after backoff if the
// attempt fails. Unknown keys are ignored. O(k log n) for k keys.
func (c *Core[K, T]) Activate(keys []K, now time.Time) {
	defer c.check()
	for _, key := range keys {
		if m := c.keys[key]; m != nil && m.kind == kindMember {
			c.activateMember(m, now)
			continue
		}
		if e := c.queuedEntry(key); e != nil && e.loc != locActive {
			fromBackoff := e.loc == locBackoffUnsched || e.loc == locBackoffError
			if c.toActive(e, labelForceActivate, fromBackoff, now) {
				continue
			}
		}
		if c.flightEntry(key) != nil {
			c.flights.record(flightEvent[K, T]{event: eventForceActivate, target: key, hasTarget: true})
		}
		c.moveRequestCycle = c.cycle
	}
}

// Tick runs the queue's periodic work that is due at now: the backoff
// flush every FlushBackoffInterval and the leftover flush every
// FlushUnschedulableInterval. The first call anchors the schedule at now
// and flushes nothing; each flush then runs at the first Tick at or after
// each multiple of its interval from the anchor. Queue.Run calls Tick on
// its clock; a caller in virtual time calls it at every step, and asks
// NextDeadline when to come back. O(m log n) for m moved items, plus O(p)
// for p parked items when the leftover flush runs.
func (c *Core[K, T]) Tick(now time.Time) {
	defer c.check()
	ns := now.UnixNano()
	if !c.anchored {
		c.anchored = true
		c.anchor = ns
		c.nextBackoff = ns + int64(c.cfg.FlushBackoffInterval)
		c.nextLeftover = ns + int64(c.cfg.FlushUnschedulableInterval)
		return
	}
	if ns >= c.nextBackoff {
		c.flushBackoff(now)
		c.nextBackoff = c.after(ns, c.cfg.FlushBackoffInterval)
	}
	if ns >= c.nextLeftover {
		c.flushLeftover(now)
		c.nextLeftover = c.after(ns, c.cfg.FlushUnschedulableInterval)
	}
}

// after returns the first multiple of every, counted from the anchor,
// that is later than ns.
func (c *Core[K, T]) after(ns int64, every time.Duration) int64 {
	n := (ns-c.anchor)/int64(every) + 1
	return c.anchor + n*int64(every)
}

// NextDeadline returns when Tick next has work, given what is queued now:
// the next backoff flush if backoffQ holds items (or a budget's deferred
// items wait for a recheck), the next leftover flush if items are parked,
// whichever comes first. ok is false if neither holds
// anything, or Tick was never called. Anything that changes the queue may
// change the answer. O(1).
func (c *Core[K, T]) NextDeadline() (deadline time.Time, ok bool) {
	if !c.anchored {
		return deadline, false
	}
	next := int64(0)
	if c.backoffU.Len()+c.backoffE.Len() > 0 || len(c.rechecks) > 0 {
		next = c.nextBackoff
	}
	if c.parked.len() > 0 && (next == 0 || c.nextLeftover < next) {
		next = c.nextLeftover
	}
	if next == 0 {
		return deadline, false
	}
	return time.Unix(0, next), true
}

// flushBackoff moves every item whose backoff has ended at now to
// activeQ, from both backoff heaps (event BackoffComplete). O(m log n) for
// m moved items.
func (c *Core[K, T]) flushBackoff(now time.Time) {
	c.recheckRoom(now)
	for {
		e, ok := c.backoffU.Peek()
		if !ok || c.backoffRunning(e.BackoffExpiry, now) {
			break
		}
		c.toActive(e, labelBackoffComplete, true, now)
	}
	for i := 0; ; i++ {
		if i%warmBatch == 0 {
			c.backoffE.warm(warmBatch) // the next ones, in expiry order
		}
		e, ok := c.backoffE.Peek()
		if !ok || c.backoffRunning(e.BackoffExpiry, now) {
			break
		}
		c.toActive(e, labelBackoffComplete, true, now)
	}
}

// warmBatch is how many entries a flush warms at a time (entry.warm):
// enough for their cache misses to overlap, few enough that they are
// still in the cache when their turn comes.
const warmBatch = 16

// flushLeftover retries the parked items that have waited longer than
// MaxInUnschedulable, counted from the later of their Timestamp and the
// last flush that tried them (so a gated item is retried once per
// MaxInUnschedulable, not at every flush), or the last event whose room
// went to others (Config.Budget): an item such an event deferred has not
// missed its event, and waits for room, not for a timeout. They move, after backoff, with
// the wildcard event UnschedulableTimeout. O(p) for p parked items.
func (c *Core[K, T]) flushLeftover(now time.Time) {
	out := c.scratch[:0]
	for _, e := range c.parked.all {
		from := max(e.Timestamp.UnixNano(), c.lastFlushed(e))
		if time.Duration(now.UnixNano()-from) > c.cfg.MaxInUnschedulable {
			out = append(out, e)
		}
	}
	c.scratch = out
	if len(out) == 0 {
		return
	}
	for _, e := range out {
		e.FlushedFromUnschedulable = true
		c.noteFlushed(e, now.UnixNano())
	}
	c.moveItems(out, false, eventTimeout, nil, nil, nil, now)
}
