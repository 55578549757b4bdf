package schedq

import (
	"fmt"
	"slices"
	"time"

	"github.com/schedq/schedq/internal/heap"
)

// held reports whether a plugin holds the item back: it rejected the last
// attempt, or it gates the item.
func (e *entry[K, T]) held() bool {
	return e.GatedBy != "" || len(e.RejectedBy)+len(e.WaitingOn) > 0
}

// rejected reports whether the last attempt failed on a plugin rather than
// an error.
func (e *entry[K, T]) rejected() bool {
	return len(e.RejectedBy)+len(e.WaitingOn) > 0
}

// loc is where an entry is, in more detail than Location.
type loc uint8

const (
	locNone loc = iota
	locActive
	locBackoffUnsched // backoffQ, failed with a rejecting plugin
	locBackoffError   // backoffQ, failed with an error
	locParked
	locGated
	locFlight
)

func (l loc) location() Location {
	switch l {
	case locActive:
		return InActive
	case locBackoffUnsched, locBackoffError:
		return InBackoff
	case locParked:
		return InUnschedulable
	case locGated:
		return InGated
	case locFlight:
		return InFlight
	}
	return 0
}

// subQueue is the sub-queue that Recorder hears of for l.
func (l loc) subQueue() Location {
	switch l {
	case locBackoffUnsched, locBackoffError:
		return InBackoff
	case locParked:
		return InUnschedulable
	case locGated:
		return InGated
	}
	return InActive
}

// entry is an item and the queue's bookkeeping for it. Entries are recycled
// after Done, so nothing outside the queue may hold one.
//
// The small fields are packed together, one index serves whichever
// container holds the entry, the time it entered a sub-queue and the
// time of its pop share a field, the pop order of flights is kept by
// flights rather than in the entries, and what only parked items,
// re-added keys and the optional features use is out of line
// (entryMore), so a pod's entry fits the 320-byte size class, five
// whole cache lines: indexes are int32, which bounds a queue to 2^31
// items.
type entry[K comparable, T any] struct {
	// The heap's sort keys and index come first, to share a cache line.
	// idx is its index in the one container that indexes it: a heap
	// that records indexes (backoffQ's unschedulable heap, activeQ
	// under a caller's Less), parked.all, flights, or, for a group
	// member, its group's list for its place. -1 if none.
	idx  int32
	prio int32 // cached Priority(Item), with the default order
	// gen is its live slot in a lazy activeQ, a tenant's heap
	// (Config.Fairness) or the error backoff, or, while parked, the
	// move-request epoch that last visited it (Core.nextEpoch). A slot is live only while loc names its
	// container, so the two uses never meet.
	gen   uint32
	loc   loc
	kind  kind   // lone item, group entity or group member (group.go)
	flags eflags // counted, updated, deleted, readded, shadow
	// strategy is what its hints chose for the last event (Config.Budget).
	strategy strategy
	ts       int64  // cached Timestamp, as Unix nanoseconds
	hclass   uint64 // a member's cached Config.HintClass
	// entered is when it entered its current place: a sub-queue, or
	// flight (Unix ns). In the first cache line, so that a move between
	// sub-queues leaves the last one, the key's, alone.
	entered int64
	// more holds what only parked items and the optional features need
	// (entry_more.go); nil until first needed, kept when recycled. In the
	// first cache line, beside what a move request reads of each parked
	// item.
	more *entryMore[K, T]

	Info[T]
	key K
	seq uint64 // entry order into activeQ, for ties under a caller's Less

	// Groups (group.go): an entity's or a member's group.
	grp *group[K, T]
}

// eflags are an entry's flags.
type eflags uint8

const (
	// flagCounted: its plugins are in Core.byPlugin.
	flagCounted eflags = 1 << iota
	// flagUpdated, flagDeleted: an Update or a Delete arrived during the
	// attempt in flight.
	flagUpdated
	flagDeleted
	// flagReadded: its key was queued again during that attempt (a
	// queued entry may have it as shadow; until its next pop, so
	// possibly no longer).
	flagReadded
	// flagShadow: more.shadow is set (a queued entry whose key is in
	// flight too), so that reading it costs no load of more otherwise.
	flagShadow
)

// is reports whether e has all of flags f. O(1).
func (e *entry[K, T]) is(f eflags) bool { return e.flags&f == f }

// set turns flags f on or off. O(1).
func (e *entry[K, T]) set(f eflags, on bool) {
	if on {
		e.flags |= f
	} else {
		e.flags &^= f
	}
}

// Core is the queue's deterministic state machine. It takes the current
// time as an argument, starts no goroutines, takes no locks and reads no
// clock, so it is not safe for concurrent use: Queue wraps it with a mutex.
// Tests and the simulator drive it directly in virtual time. Make one with
// NewCore: the zero Core has no Config (whose Key is required), is not
// usable, and panics on Add or Pop.
type Core[K comparable, T any] struct {
	cfg  Config[K, T]
	rec  Recorder
	regs []registration[T]

	// keys maps a key to its queued entry or, if none, its entry in flight.
	// A queued entry whose key is also in flight (re-added during the
	// attempt) points to the in-flight one through shadow.
	keys     map[K]*entry[K, T]
	queued   int // entries in the sub-queues
	active   activeQueue[K, T]
	backoffU *backoffHeap[K, T]  // failed with a rejecting plugin
	backoffE *errorBackoff[K, T] // failed with an error
	parked   parked[K, T]
	flights  flights[K, T]
	groups   map[string]*group[K, T] // by name (group.go)

	cycle            int64 // pops so far
	moveRequestCycle int64 // cycle of the latest move request, -1 if none
	seq              uint64

	// The flush schedule, in Unix ns: Tick's first call anchors it, and
	// each flush then runs at the multiples of its interval from there.
	anchor, nextBackoff, nextLeftover int64
	anchored                          bool

	// byPlugin counts queued items per plugin that holds them back, from
	// requeue (or gating) until their next pop.
	byPlugin map[string]int

	labels  map[Event]string // Event.Label() of events seen, to build each once
	hearing hearing          // the registrations that hear the last event judged
	held    []heldReg        // scratch of heldBy
	heldFor heldKey          // what held answers for, if set
	lists   pluginLists      // the items' plugin lists, shared (plugin_lists.go)
	asked   classSet         // scratch of worthGroup: the classes asked
	memo    hintMemo         // a move request's hint answers by class
	movers  []mover[K, T]    // scratch of judgeAll
	ready   []*entry[K, T]   // scratch of moveItems: the items a budget is offered
	// moving is the cohorts (not gated) a request judged by cohort moves,
	// if movingOK (cohort_defer.go).
	moving   []*cohort[K, T]
	movingOK bool
	// A move request with a budget by class (cohort_order.go): ordWant
	// if its candidates may come from a cohort's order, ordCo the one
	// cohort that moves if they do, ordMoving how many cohorts move.
	ordWant        bool
	ordCo, ordLast *cohort[K, T]
	ordMoving      int

	rechecks  []*roomGroup[K, T]            // budgets to offer once more (budget.go)
	tails     [][]heap.Slot[deferRef[K, T]] // ended groups' tails, for reuse (budget_class.go)
	tailSlots int                           // their capacity in all
	rooms     map[string]*roomKey[K, T]     // shared rooms, by Budget.Key
	// Scratch space of popOrder.
	orderKeys    []orderKey
	orderScratch []*entry[K, T]

	nom nominator[K] // nominations (nominator.go)

	epoch   uint32
	judged  int // items whose hints a move request asked, in all (tests)
	free    []*entry[K, T]
	scratch []*entry[K, T]

	fair *fairActive[K, T] // activeQ too, under Config.Fairness; else nil
	rate popRate           // recent pops, for Explain's estimates
}

// NewCore validates cfg and returns an empty Core. A mistake in cfg is an
// error wrapping ErrInvalidConfig that names the field.
func NewCore[K comparable, T any](cfg Config[K, T]) (*Core[K, T], error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	c := &Core[K, T]{
		cfg:              cfg,
		rec:              cfg.Recorder,
		regs:             flatten(cfg.Hints),
		keys:             map[K]*entry[K, T]{},
		byPlugin:         map[string]int{},
		moveRequestCycle: -1,
	}
	c.parked.byClass = cfg.HintClass != nil
	less := func(a, b *entry[K, T]) bool {
		if cfg.Less(&a.Info, &b.Info) {
			return true
		}
		return !cfg.Less(&b.Info, &a.Info) && a.seq < b.seq
	}
	if cfg.Priority != nil {
		less = func(a, b *entry[K, T]) bool {
			if a.prio != b.prio {
				return a.prio > b.prio
			}
			return a.ts < b.ts
		}
	}
	switch {
	case cfg.Fairness != nil:
		c.fair = newFairActive(*cfg.Fairness, customLess(cfg))
		c.fair.rec = cfg.Recorder
		c.active = c.fair
	case cfg.Priority != nil:
		c.active = newLazyActive[K, T]()
	default:
		c.active = newIndexedActive(less)
	}
	c.parked.ordered = c.parked.byClass && cfg.Budget != nil && cfg.ClassBudget && cfg.Priority != nil && c.fair == nil
	if cfg.DisablePopFromBackoff {
		c.backoffU = newBackoffHeap[K, T](nil)
	} else {
		c.backoffU = newBackoffHeap(less)
	}
	c.backoffE = newErrorBackoff[K, T]()
	return c, nil
}

// plugins calls f once for each distinct plugin that holds e back.
func (e *entry[K, T]) plugins(f func(string)) {
	for i, p := range e.RejectedBy {
		if !slices.Contains(e.RejectedBy[:i], p) {
			f(p)
		}
	}
	for i, p := range e.WaitingOn {
		if !slices.Contains(e.WaitingOn[:i], p) && !slices.Contains(e.RejectedBy, p) {
			f(p)
		}
	}
	if g := e.GatedBy; g != "" && !slices.Contains(e.RejectedBy, g) && !slices.Contains(e.WaitingOn, g) {
		f(g)
	}
}

// uncount takes e out of the per-plugin counts.
func (c *Core[K, T]) uncount(e *entry[K, T]) {
	if !e.is(flagCounted) {
		return
	}
	e.set(flagCounted, false)
	e.plugins(func(p string) {
		if c.byPlugin[p]--; c.byPlugin[p] <= 0 {
			delete(c.byPlugin, p)
		}
	})
}

// recount puts e back into the per-plugin counts if it is out of them.
// Whatever changes e's plugins takes it out first (see setGate and Pop).
func (c *Core[K, T]) recount(e *entry[K, T]) {
	if e.is(flagCounted) || !e.held() {
		return
	}
	e.set(flagCounted, true)
	e.plugins(func(p string) { c.byPlugin[p]++ })
}

// label returns ev's label, built once per distinct event.
func (c *Core[K, T]) label(ev Event) string {
	if ev.Label != "" {
		return ev.Label
	}
	l, ok := c.labels[ev]
	if !ok {
		if c.labels == nil || len(c.labels) > 1024 {
			c.labels = map[Event]string{}
		}
		l = ev.label()
		c.labels[ev] = l
	}
	return l
}

// matches reports whether the registered event reg covers the sent ev.
func (c *Core[K, T]) matches(reg, ev Event) bool {
	return reg.wildcard() || c.cfg.Match(reg, ev)
}

// sortKeys refreshes the keys the default order compares, before e enters
// or moves within a heap ordered by them. A lone item's priority is the
// one cached when its item was set (setItem), so that moving it between
// sub-queues never reads the caller's item.
func (c *Core[K, T]) sortKeys(e *entry[K, T]) {
	if c.cfg.Priority != nil {
		switch e.kind {
		case kindGroup:
			e.prio = e.grp.spec.Priority
		case kindMember:
			e.prio = c.cfg.Priority(e.Item)
		}
		e.ts = e.Timestamp.UnixNano()
	}
}

// setItem makes item the lone entry e's item and caches its priority.
func (c *Core[K, T]) setItem(e *entry[K, T], item T) {
	e.Item = item
	if c.cfg.Priority != nil {
		e.prio = c.cfg.Priority(item)
	}
}

func (c *Core[K, T]) newEntry(item T, now time.Time) *entry[K, T] {
	var e *entry[K, T]
	if n := len(c.free); n > 0 {
		e = c.free[n-1]
		c.free[n-1] = nil
		c.free = c.free[:n-1]
	} else {
		e = &entry[K, T]{}
	}
	c.setItem(e, item)
	e.key = c.cfg.Key(item)
	e.Timestamp = now
	e.idx = -1
	return e
}

// retire gives back the room e holds, if any, and recycles it.
func (c *Core[K, T]) retire(e *entry[K, T], now time.Time) {
	c.release(e, now)
	c.recycle(e)
}

// recycle returns e to the free list, wiped so it pins nothing.
func (c *Core[K, T]) recycle(e *entry[K, T]) {
	c.uncount(e)
	m := e.more
	if m != nil {
		*m = entryMore[K, T]{slots: m.slots[:0], clearedAt: c.parked.seq} // its deferRefs go stale
	}
	*e = entry[K, T]{more: m}
	if len(c.free) < 1024 {
		c.free = append(c.free, e)
	}
}

// queuedEntry returns the queued entry for key, or nil.
func (c *Core[K, T]) queuedEntry(key K) *entry[K, T] {
	if e := c.keys[key]; e != nil && e.loc != locFlight {
		return e
	}
	return nil
}

// flightEntry returns the entry in flight for key, or nil.
func (c *Core[K, T]) flightEntry(key K) *entry[K, T] {
	e := c.keys[key]
	if e == nil || e.loc == locFlight {
		return e
	}
	return e.shadowOf()
}

// enqueue registers a new queued entry, which must not be in the map yet.
// An attempt in flight for the same key becomes its shadow.
func (c *Core[K, T]) enqueue(e *entry[K, T]) {
	if f := c.keys[e.key]; f != nil {
		e.setShadow(f)
		f.set(flagReadded, true)
	}
	c.keys[e.key] = e
	c.queued++
}

// dequeue forgets a queued entry that left the sub-queues for good.
func (c *Core[K, T]) dequeue(e *entry[K, T]) {
	c.queued--
	if f := e.shadowOf(); f != nil {
		c.keys[e.key] = f
		e.setShadow(nil)
	} else {
		delete(c.keys, e.key)
	}
}

// endFlight stops tracking an attempt that is not requeued. A shadow's
// queued entry keeps the key; otherwise the key is forgotten.
func (c *Core[K, T]) endFlight(e *entry[K, T]) {
	c.flights.end(e)
	switch q := c.keys[e.key]; {
	case q == e:
		delete(c.keys, e.key)
	case q != nil && q.shadowOf() == e:
		q.setShadow(nil)
	}
}

// Poppable reports whether Pop would return an entity now: activeQ holds
// one, or pop-from-backoff is on and the unschedulable backoff heap holds
// one (never the error heap). Only the operations change the answer, and
// Tick, which moves items whose backoff ended; a driver in virtual time
// asks it, and NextDeadline, to know when to come back. O(1).
func (c *Core[K, T]) Poppable() bool {
	return c.active.Len() > 0 || (!c.cfg.DisablePopFromBackoff && c.backoffU.Len() > 0)
}

// Add queues a new item. If its key is already queued, the old copy is
// replaced, wherever it was. The item goes to activeQ, or is parked as
// gated if a PreEnqueue check rejects it. O(log n).
func (c *Core[K, T]) Add(item T, now time.Time) {
	defer c.check()
	if c.cfg.Group != nil && c.addGrouped(item, now) {
		return
	}
	e := c.newEntry(item, now)
	// One map lookup and one store: the hot path of every Add.
	switch prev := c.keys[e.key]; {
	case prev == nil:
		c.queued++
	case prev.loc == locFlight:
		e.setShadow(prev)
		prev.set(flagReadded, true)
		c.queued++
	default: // queued: replace it, keeping its attempt in flight if any
		c.unlink(prev, now)
		e.setShadow(prev.shadowOf())
		prev.setShadow(nil)
		c.retire(prev, now)
	}
	c.keys[e.key] = e
	c.toActive(e, labelAdd, false, now)
}

// Update replaces a queued item with its new version, keeping its history.
//   - In flight: no queue changes; the update is kept for the requeue, and
//     the events it amounts to are recorded for the attempt's hints.
//   - In activeQ or backoffQ: updated in place.
//   - Parked or gated: updated, then moved if a hint accepts one of the
//     update's events (see Config.UpdateEvents; any update moves it when
//     hints are off).
//   - Unknown: added, as by Add.
//
// The item is found by newItem's key: oldItem only gives the update's
// events to the hints. An update whose two versions have different keys
// is the new key's (added if unknown) and leaves the old key's item as it
// was; to rename an item, Delete the old key and Add the new one.
//
// An update that leaves the item's priority as it was keeps its place
// among its equals in activeQ. O(log n) plus the hints of its events.
func (c *Core[K, T]) Update(oldItem, newItem T, now time.Time) {
	defer c.check()
	if c.cfg.Group != nil && c.updateGrouped(oldItem, newItem, now) {
		return
	}
	key := c.cfg.Key(newItem)
	e := c.queuedEntry(key)
	if e == nil {
		if f := c.flightEntry(key); f != nil {
			c.setItem(f, newItem)
			f.set(flagUpdated, true)
			for _, ev := range c.updateEvents(oldItem, newItem) {
				c.flights.record(flightEvent[K, T]{event: ev, label: c.label(ev), oldObj: oldItem, newObj: newItem})
			}
			return
		}
		e = c.newEntry(newItem, now)
		c.enqueue(e)
		c.toActive(e, labelUpdate, false, now)
		return
	}
	switch e.loc {
	case locActive:
		old := e.Info
		e.Item = newItem
		if c.resorted(e, &old) || c.retenanted(e) {
			c.fixActive(e)
		}
		return
	case locBackoffUnsched:
		old := e.Info
		e.Item = newItem
		if c.resorted(e, &old) {
			c.backoffU.Fix(int(e.idx))
		}
		return
	case locBackoffError:
		c.setItem(e, newItem)
		return
	}
	// Parked or gated.
	c.setItem(e, newItem)
	if e.kind == kindLone {
		c.classify(e)
		c.parked.recohort(e)
		c.parked.rekey(e)
	}
	events := c.updateEvents(oldItem, newItem)
	if c.cfg.DisableQueueingHints {
		if len(events) > 0 {
			c.requeue(e, afterBackoff, labelUpdate, now)
		}
		return
	}
	for _, ev := range events {
		if e.loc == locGated && !c.gatingMatches(e, ev) {
			continue
		}
		label := c.label(ev)
		s := c.worth(e, ev, label, oldItem, newItem)
		if s == stayParked {
			continue
		}
		if l := c.requeue(e, s, label, now); l != locParked && l != locGated {
			return
		}
	}
}

// fixActive puts e, in activeQ, at its new place there after its sort
// keys or its tenant changed. Under Config.Priority it stamps e anew
// (entry.seq, which that order does not read), as an entry into activeQ
// does, so that a listing's place for it is no longer taken for its
// place (stillListed); under a caller's Less, entry.seq is the order's
// tie, which resorted renewed already if the order moved e, and which a
// new tenant's line keeps. O(log n).
func (c *Core[K, T]) fixActive(e *entry[K, T]) {
	if c.cfg.Priority != nil {
		c.seq++
		e.seq = c.seq
	}
	c.active.Fix(e)
}

// resorted refreshes e's sort keys after its item changed from old, and
// reports whether its heap must be fixed: whether the order sees a
// difference. Under Config.Priority a group entity's item (the member
// representing it) is no sort key: its GroupSpec.Priority is. An item that moves so re-enters behind its new equals; one
// that does not keeps its place.
func (c *Core[K, T]) resorted(e *entry[K, T], old *Info[T]) bool {
	if c.cfg.Priority == nil {
		if !c.cfg.Less(old, &e.Info) && !c.cfg.Less(&e.Info, old) {
			return false
		}
		c.seq++
		e.seq = c.seq
		return true
	}
	if e.kind == kindGroup {
		return false // its GroupSpec.Priority orders it, not its item's
	}
	p := c.cfg.Priority(e.Item)
	if p == e.prio {
		return false
	}
	e.prio = p
	return true
}

func (c *Core[K, T]) updateEvents(oldItem, newItem T) []Event {
	if c.cfg.UpdateEvents == nil {
		return []Event{eventUpdate}
	}
	return c.cfg.UpdateEvents(oldItem, newItem)
}

// Delete removes the item with key: its queued copy, if any, and its
// attempt in flight, if any, which is marked so that its requeue drops it
// (a key re-added during its attempt has both). It returns ErrNotFound if
// the key is neither queued nor in flight. O(log n).
func (c *Core[K, T]) Delete(key K, now time.Time) error {
	defer c.check()
	c.nom.drop(key)
	if m := c.keys[key]; m != nil && m.kind == kindMember {
		return c.deleteMember(m, now)
	}
	f := c.flightEntry(key)
	q := c.queuedEntry(key)
	if f == nil && q == nil {
		return fmt.Errorf("%w: delete %v", ErrNotFound, key)
	}
	if f != nil {
		f.set(flagDeleted, true)
	}
	if q != nil {
		c.unlink(q, now)
		c.dequeue(q)
		c.retire(q, now)
	}
	return nil
}

// Pop takes the next item to try: the head of activeQ or, when activeQ is
// empty and pop-from-backoff is on, the head of the unschedulable backoff
// heap (never the error heap). The item is then in flight until Done or
// Requeue of the returned attempt. ok is false when nothing is poppable.
// O(log n).
func (c *Core[K, T]) Pop(now time.Time) (a Attempt[K, T], ok bool) {
	ok = c.pop(now, &a)
	return a, ok
}

// pop is Pop, writing the attempt into *a, which must be the zero
// Attempt (left so if nothing is poppable), so that Queue's Pop gets it
// without a copy. A lone item's attempt is written field by field: a
// composite literal would be built on the stack and copied.
func (c *Core[K, T]) pop(now time.Time, a *Attempt[K, T]) bool {
	defer c.check()
	var e *entry[K, T]
	switch {
	case c.active.Len() > 0:
		e, _ = c.active.Pop()
		c.rec.Left(InActive, since(e.entered, now))
	case !c.cfg.DisablePopFromBackoff && c.backoffU.Len() > 0:
		e, _ = c.backoffU.Pop()
		c.rec.Left(InBackoff, since(e.entered, now))
		c.incoming(e, InActive, labelPopFromBackoff)
		if e.InitialAttemptTimestamp.IsZero() {
			e.InitialAttemptTimestamp = now
		}
	default:
		return false
	}
	c.queued--
	c.uncount(e)
	if prev := e.shadowOf(); prev != nil {
		// The key was re-added during an older attempt, which this pop
		// supersedes.
		e.setShadow(nil)
		c.flights.end(prev)
		c.retire(prev, now)
	}
	c.popped(e, now)
	c.cycle++
	e.Attempts++
	e.Cycle = c.cycle
	e.BackoffExpiry = time.Time{}
	e.entered = now.UnixNano() // its pop
	e.set(flagUpdated|flagDeleted|flagReadded, false)
	c.flights.start(e)
	if e.kind == kindGroup {
		*a = c.popGroup(e, now)
		return true
	}
	a.Key, a.Info, a.ent = e.key, e.Info, e
	return true
}

// Done ends attempt a after it succeeded or was given up. It returns
// ErrNotInFlight if a is not in flight: on a second Done, after Requeue,
// or when a newer pop of the key has superseded it, whose attempt a stale
// Done must not end. O(1).
func (c *Core[K, T]) Done(a Attempt[K, T], now time.Time) error {
	defer c.check()
	if a.Group != "" {
		return c.doneGroup(a, now)
	}
	key, cycle := a.Key, a.Cycle
	e, queued := c.keys[key], (*entry[K, T])(nil)
	if e != nil && e.loc != locFlight {
		queued, e = e, e.shadowOf() // re-added during the attempt
	}
	if e == nil || e.Cycle != cycle {
		return fmt.Errorf("%w: done %v: no attempt of cycle %d in flight", ErrNotInFlight, key, cycle)
	}
	c.flights.end(e)
	c.nom.drop(key)
	if queued != nil {
		queued.setShadow(nil)
	} else {
		delete(c.keys, key)
	}
	if !e.InitialAttemptTimestamp.IsZero() {
		c.rec.Scheduled(time.Duration(e.entered-e.InitialAttemptTimestamp.UnixNano()), e.FlushedFromUnschedulable)
	}
	c.retire(e, now)
	return nil
}

// Failure says why an attempt failed, by the names of the checks
// (kube-scheduler's plugins) that decided it. No check means an error: the
// item goes to error backoff and is never parked.
type Failure struct {
	// RejectedBy names the checks that found the item unschedulable
	// (upstream: unschedulable plugins).
	RejectedBy []string
	// WaitingOn names the checks that left it waiting for something that
	// will happen by itself (upstream: pending plugins); an event they
	// accept requeues it at once.
	WaitingOn []string
	// Reasons are why, as data for programs: the distinct reasons the
	// checks gave (a scheduler's "Insufficient cpu"), which the queue
	// keeps (Info.Reasons, Explain) and never reads.
	Reasons []string
	// Message says why, for people (Info.Message, Explain).
	Message string
}

// Requeue puts an item back after its attempt a failed, and ends the
// attempt (do not call Done after it). Where it goes:
//   - no plugins (an error): backoffQ, error heap;
//   - with hints (the default): the events seen during the attempt decide,
//     through the rejecting plugins' hints: parked, backoffQ or activeQ;
//   - hints off: backoffQ if a move request happened since its pop
//     (moveRequestCycle >= cycle), else parked.
//
// If an Update arrived during the attempt, the updated item is requeued
// instead of a.Item. If a Delete did, the item is dropped. If the key is
// queued already (re-added during the attempt), the queued copy stays and
// ErrAlreadyQueued is returned. If a is not in flight (no Pop returned it,
// a newer pop of the key superseded it, or Done or Requeue ended it),
// nothing is requeued and ErrNotInFlight is returned: Park queues an item
// that no Pop returned. O(log n) plus the hints of the events seen during
// the attempt.
func (c *Core[K, T]) Requeue(a Attempt[K, T], f Failure, now time.Time) error {
	return c.requeueAttempt(&a, &f, now)
}

// requeueAttempt is Requeue, reading a and f in place, so that Queue's
// Requeue passes them on without a copy. Neither is kept nor changed.
func (c *Core[K, T]) requeueAttempt(a *Attempt[K, T], f *Failure, now time.Time) error {
	defer c.check()
	if a.Group != "" {
		return c.requeueGroup(*a, *f, now)
	}
	item, cycle := a.Item, a.Cycle
	if e := a.ent; e != nil && e.loc == locFlight && e.Cycle == cycle && !e.is(flagReadded) && e.key == a.Key &&
		c.flights.holds(e) {
		// The entry Pop returned, still in this attempt (cycles are
		// unique within a Core) and nothing re-added its key: the map's
		// entry for the key is this one, so no lookup (nor Config.Key)
		// is needed. holds makes sure the entry is this Core's: another
		// Core's attempt of the same key and cycle goes the long way.
		return c.requeueFlight(e, item, f, now)
	}
	key := c.cfg.Key(item)
	// One map lookup: the key's queued entry, if any, and its attempt in
	// flight (the entry itself, or the queued one's shadow).
	e, queued := c.keys[key], false
	if e != nil && e.loc != locFlight {
		e, queued = e.shadowOf(), true
	}
	if e != nil && e.Cycle != cycle {
		e = nil // a stale cycle: that attempt was superseded
	}
	if queued {
		if e != nil {
			c.endFlight(e)
			c.retire(e, now)
		}
		return fmt.Errorf("%w: requeue %v", ErrAlreadyQueued, key)
	}
	if e == nil {
		// That attempt has ended: superseded by a newer pop of the key,
		// or deleted, or finished; or it never was. Its item is not
		// brought back.
		if cycle == 0 {
			return fmt.Errorf("%w: requeue %v: cycle 0, which no Pop returned (Park queues such an item)", ErrNotInFlight, key)
		}
		return fmt.Errorf("%w: requeue %v: no attempt of cycle %d in flight", ErrNotInFlight, key, cycle)
	}
	return c.requeueFlight(e, item, f, now)
}

// requeueFlight is Requeue of e, in flight and the map's entry for its
// key, with the attempt's item.
func (c *Core[K, T]) requeueFlight(e *entry[K, T], item T, f *Failure, now time.Time) error {
	if e.is(flagDeleted) {
		c.endFlight(e)
		c.retire(e, now)
		return nil
	}
	c.release(e, now)
	if !e.is(flagUpdated) && !sameValue(&e.Item, &item) {
		// The attempt's item is requeued; the one popped (the usual case)
		// keeps its cached priority, so a failure need not read it.
		c.setItem(e, item)
	}
	c.failed(e, f, e.Cycle, c.flights.since(e), now)
	return nil
}

// Park queues item, which no Pop of this queue returned, as if an attempt
// had just failed with f: parked behind f's plugins (with hints on; with
// hints off it backs off), or in error backoff if f names none. A
// scheduler that takes over from another uses it for the items its
// predecessor found unschedulable. A group member joins its group as
// failed; if it creates the group's entity, the entity takes the failure.
// It returns ErrAlreadyQueued, and changes nothing, if the key is queued
// or in flight. O(log n).
func (c *Core[K, T]) Park(item T, f Failure, now time.Time) error {
	defer c.check()
	key := c.cfg.Key(item)
	if c.keys[key] != nil {
		return fmt.Errorf("%w: park %v: queued or in flight already", ErrAlreadyQueued, key)
	}
	if c.cfg.Group != nil && c.cfg.Group(item) != "" {
		c.parkMember(key, item, f, now)
		return nil
	}
	c.failed(c.newEntry(item, now), &f, 0, nil, now)
	return nil
}

// failed records failure f on e, released from its attempt of cycle (0
// for Park) during which events happened, and queues it where they say.
func (c *Core[K, T]) failed(e *entry[K, T], f *Failure, cycle int64, events []flightEvent[K, T], now time.Time) {
	e.Timestamp = now
	e.BackoffExpiry = time.Time{}
	e.FlushedFromUnschedulable = false
	e.RejectedBy = c.lists.of(f.RejectedBy)
	e.WaitingOn = c.lists.of(f.WaitingOn)
	e.Reasons = slices.Clone(f.Reasons)
	e.Message = f.Message
	rejected := len(f.RejectedBy)+len(f.WaitingOn) > 0
	if rejected {
		e.UnschedulableCount++
		e.ConsecutiveErrors = 0
	} else {
		e.ConsecutiveErrors++
	}

	var s strategy
	switch {
	case !rejected:
		s = afterBackoff
	case c.cfg.DisableQueueingHints:
		// Park (cycle 0) has no attempt to race a move request: it backs
		// off, as documented, whatever moves came before.
		if cycle == 0 || c.moveRequestCycle >= cycle {
			s = afterBackoff
		}
	default:
		for i := range events {
			ev := &events[i]
			if ev.hasTarget && ev.target != e.key {
				continue
			}
			if s = max(s, c.worth(e, ev.event, ev.label, ev.oldObj, ev.newObj)); s == immediately ||
				s == afterBackoff && len(e.WaitingOn) == 0 {
				break
			}
		}
	}
	if e.loc == locFlight {
		// Requeue found e as the map's entry for its key, which stays,
		// now queued: no second lookup.
		c.flights.end(e)
		c.queued++
	} else {
		c.enqueue(e)
	}
	c.requeue(e, s, labelAttemptFailure, now)
}

// unlink takes a queued entry out of whichever sub-queue holds it.
func (c *Core[K, T]) unlink(e *entry[K, T], now time.Time) {
	sq := e.loc.subQueue()
	switch e.loc {
	case locActive:
		c.active.Remove(e)
	case locBackoffUnsched:
		c.backoffU.Remove(int(e.idx))
	case locBackoffError:
		c.backoffE.Remove(e)
	case locParked, locGated:
		c.parked.remove(e)
		c.clearDeferred(e)
	default:
		return
	}
	c.rec.Left(sq, since(e.entered, now))
	e.loc = locNone
}

// gated reports whether a PreEnqueue check holds e back.
func (e *entry[K, T]) gated() bool { return e.GatedBy != "" }
