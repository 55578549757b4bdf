package schedq

import (
	"math"
	"slices"
	"time"

	"github.com/schedq/schedq/internal/backoff"
)

// admit runs the PreEnqueue checks, the current gating plugin first, and
// records the first one that rejects e (or clears it). O(checks).
func (c *Core[K, T]) admit(e *entry[K, T]) bool {
	checks := c.cfg.PreEnqueue
	if len(checks) == 0 {
		return true
	}
	if e.kind == kindGroup {
		return c.admitGroup(e)
	}
	// The checks read the caller's item, which is often not in the cache
	// when queued items are many: load the next pop's entry first, so
	// that its misses overlap with theirs.
	c.active.WarmFront()
	if g := e.GatedBy; g != "" {
		for _, p := range checks {
			if p.Name == g && !p.Admit(e.Item) {
				return false
			}
		}
	}
	for _, p := range checks {
		if p.Name != e.GatedBy && !p.Admit(e.Item) {
			c.setGate(e, p.Name)
			return false
		}
	}
	c.setGate(e, "")
	return true
}

// setGate changes e's gating plugin. The per-plugin counts are taken out
// first, since they are kept by plugin name; the caller's placement puts
// them back.
func (c *Core[K, T]) setGate(e *entry[K, T], plugin string) {
	if e.GatedBy != plugin {
		c.uncount(e)
		e.GatedBy = plugin
	}
}

// toActive moves e into activeQ, after the PreEnqueue checks. With
// pop-from-backoff on, items coming from backoffQ skip the checks: they ran
// when the item entered backoffQ. A gated item is parked instead. It
// reports whether e landed in activeQ.
func (c *Core[K, T]) toActive(e *entry[K, T], label string, fromBackoff bool, now time.Time) bool {
	if !(fromBackoff && !c.cfg.DisablePopFromBackoff) && !c.admit(e) {
		c.parkGated(e, label, now)
		return false
	}
	if e.loc == locActive {
		c.recount(e)
		return true
	}
	c.unlink(e, now)
	e.BackoffExpiry = time.Time{}
	if e.InitialAttemptTimestamp.IsZero() {
		e.InitialAttemptTimestamp = now
	}
	e.entered = now.UnixNano()
	e.loc = locActive
	c.seq++
	e.seq = c.seq
	c.sortKeys(e)
	c.active.Push(e)
	c.recount(e)
	c.incoming(e, InActive, label)
	return true
}

// toBackoff moves e into the backoff heap that fits it: the unschedulable
// one if a plugin rejected it, else the error one, until expiry (its
// Timestamp plus backoffDuration, which the caller computed already). With
// pop-from-backoff on, the PreEnqueue checks run first, since a pop may
// take it from there.
func (c *Core[K, T]) toBackoff(e *entry[K, T], expiry time.Time, label string, now time.Time) {
	if !c.cfg.DisablePopFromBackoff && !c.admit(e) {
		c.parkGated(e, label, now)
		return
	}
	c.unlink(e, now)
	e.BackoffExpiry = expiry
	e.entered = now.UnixNano()
	if e.rejected() {
		e.loc = locBackoffUnsched
		c.sortKeys(e)
		c.backoffU.Push(e)
	} else {
		e.loc = locBackoffError
		c.backoffE.Push(e)
	}
	c.recount(e)
	c.incoming(e, InBackoff, label)
}

// parkGated parks e, which a PreEnqueue check has just gated. A gated
// item is not out of the parking area, so it loses the mark of a leftover
// flush that tried it: an event that ungates it later is what brings it
// out (upstream v1.37.2 clears the mark there too).
func (c *Core[K, T]) parkGated(e *entry[K, T], label string, now time.Time) {
	e.FlushedFromUnschedulable = false
	c.park(e, label, now)
}

// park puts e in the unschedulable area, or re-files it there if its gating
// changed. Only an item new to the area counts as incoming.
func (c *Core[K, T]) park(e *entry[K, T], label string, now time.Time) {
	defer c.recount(e)
	c.release(e, now) // parked without an attempt: it holds no room
	switch e.loc {
	case locParked, locGated:
		if (e.loc == locGated) == e.gated() && (!e.gated() || e.more.slots[0].b.plugin == e.GatedBy) {
			return
		}
		c.parked.remove(e)
		c.clearDeferred(e) // a gated item waits for its gate, not for room
		c.parked.add(e)
		return
	}
	c.unlink(e, now)
	e.BackoffExpiry = time.Time{}
	e.entered = now.UnixNano()
	if e.kind == kindLone {
		c.classify(e) // the class a move request's memo uses
		// Its sort keys, current while it is parked: its priority is
		// cached with its item (setItem) and its Timestamp does not
		// change, so a budget's pop order (wakeByClass) reads them as
		// they are.
		c.sortKeys(e)
	}
	c.parked.add(e)
	c.incoming(e, InUnschedulable, label)
}

// requeue applies a strategy to e and returns where e ended up.
func (c *Core[K, T]) requeue(e *entry[K, T], s strategy, label string, now time.Time) loc {
	if s == stayParked {
		c.park(e, label, now)
		return e.loc
	}
	if s == afterBackoff {
		// The backoff and its expiry are computed once, for both steps.
		if d := c.backoffDuration(e); d != 0 {
			if expiry := backoffExpiry(e.Timestamp, d); c.backoffRunning(expiry, now) {
				c.toBackoff(e, expiry, label, now)
				return e.loc
			}
		}
	}
	c.toActive(e, label, false, now)
	return e.loc
}

// backoffDuration is the backoff e earns: from its consecutive errors if it
// has any, else from its unschedulable failures.
func (c *Core[K, T]) backoffDuration(e *entry[K, T]) time.Duration {
	if c.cfg.DisableBackoff {
		return 0
	}
	n := e.UnschedulableCount
	if e.ConsecutiveErrors > 0 {
		n = e.ConsecutiveErrors
	}
	return backoff.Duration(n, c.cfg.InitialBackoff, c.maxBackoff(e))
}

// lastExpiry is the latest backoff expiry kept: the end of the last whole
// window that Unix nanoseconds hold (year 2262). The heaps, the windows
// and the flush read an expiry in Unix nanoseconds, which a later one
// would wrap to a time long past, letting its item out at once.
var lastExpiry = time.Unix(0, (math.MaxInt64/int64(backoff.Window))*int64(backoff.Window)-1)

// backoffExpiry is when a backoff of d from ts ends, capped at lastExpiry.
func backoffExpiry(ts time.Time, d time.Duration) time.Time {
	if expiry := ts.Add(d); expiry.Before(lastExpiry) {
		return expiry
	}
	return lastExpiry
}

// backoffDone is the first instant at which a backoff that expires at
// expiry has let go of its item: just after the expiry (the item backs off
// while its expiry is not before now), or with pop-from-backoff on, the end
// of the expiry's window.
func (c *Core[K, T]) backoffDone(expiry time.Time) time.Time {
	if c.cfg.DisablePopFromBackoff {
		return expiry.Add(time.Nanosecond)
	}
	return time.Unix(0, (backoff.WindowOf(expiry)+1)*int64(backoff.Window))
}

// backoffRunning reports whether a backoff that expires at expiry still
// holds its item at now: backoffDone(expiry).After(now), compared as that
// does (monotonic readings included), without building a time.Time.
func (c *Core[K, T]) backoffRunning(expiry, now time.Time) bool {
	if c.cfg.DisablePopFromBackoff {
		return !expiry.Before(now)
	}
	return (backoff.WindowOf(expiry)+1)*int64(backoff.Window) > now.UnixNano()
}

// worth decides, for a queued item and an event, where the item should go.
// The hints registered for matching events by the plugins that hold the
// item back (its rejecting plugins and its gating plugin) are asked in
// order: a Queue from a pending plugin means at once; from another plugin,
// after backoff; no Queue, stay. Items no plugin holds back, and wildcard
// events, go after backoff without asking.
// label is ev.Label(), computed once by the caller.
func (c *Core[K, T]) worth(e *entry[K, T], ev Event, label string, oldObj, newObj any) strategy {
	if !e.held() || ev.wildcard() {
		return afterBackoff
	}
	if e.kind == kindGroup {
		return c.worthGroup(e, ev, label, oldObj, newObj)
	}
	return c.askHints(c.heldBy(e, ev), e.Item, e.hclass, label, len(e.WaitingOn) > 0, oldObj, newObj)
}

// worthItem is worth for item, judged against e's plugins: a member of
// the group entity e, updated. It runs outside move requests, so the
// hint memo is not in use and the class is not needed.
func (c *Core[K, T]) worthItem(e *entry[K, T], item T, ev Event, label string, oldObj, newObj any) strategy {
	return c.askHints(c.heldBy(e, ev), item, 0, label, len(e.WaitingOn) > 0, oldObj, newObj)
}

// heldReg is a registration that hears an event, of a plugin that holds an
// entry back; pending says the plugin is one of the entry's PendingPlugins.
type heldReg struct {
	reg     int32
	pending bool
}

// heldBy returns, into a scratch list valid until the next call, the
// registrations that hear ev of the plugins that hold e back (its
// pending, rejecting and gating plugins), in the order of c.regs.
// O(r·p) for r hearing registrations and p plugins of e; O(p) when ev
// and e's plugins are those of the last call, whose answer it returns
// again. No allocation once warm.
func (c *Core[K, T]) heldBy(e *entry[K, T], ev Event) []heldReg {
	k := &c.heldFor
	if k.set && k.ev == ev && k.gating == e.GatedBy &&
		sameList(e.WaitingOn, k.lastPending, k.pending, k.inMove) &&
		sameList(e.RejectedBy, k.lastUnsched, k.unsched, k.inMove) {
		k.lastPending, k.lastUnsched = e.WaitingOn, e.RejectedBy
		return c.held // a move's candidates mostly share their plugins
	}
	k.lastPending, k.lastUnsched = e.WaitingOn, e.RejectedBy
	k.set, k.ev, k.gating = true, ev, e.GatedBy
	k.pending = append(k.pending[:0], e.WaitingOn...)
	k.unsched = append(k.unsched[:0], e.RejectedBy...)
	out := c.held[:0]
	for _, i := range c.hears(ev) {
		plugin := c.regs[i].plugin
		pending := slices.Contains(e.WaitingOn, plugin)
		if pending || plugin == e.GatedBy || slices.Contains(e.RejectedBy, plugin) {
			out = append(out, heldReg{reg: i, pending: pending})
		}
	}
	c.held = out
	return out
}

// heldKey is what heldBy's last answer depends on: the event and the
// entry's plugins (copies, so that a later change to an entry's lists
// cannot make a stale answer look current).
//
// Within a move request (inMove), in which nothing changes an item's
// lists, lists at the address of the last call's (lastPending,
// lastUnsched: shared, see pluginLists) are equal to them without a look.
type heldKey struct {
	set                      bool
	inMove                   bool
	ev                       Event
	gating                   string
	pending, unsched         []string
	lastPending, lastUnsched []string
}

// askHints asks the hints of regs about item, in order: a Queue from a
// pending plugin means at once; from another plugin, after backoff (at
// once, if the entry has no pending plugin that could make it sooner);
// no Queue, stay. A registration without a hint, or with hints disabled,
// answers Queue; a hint error counts as Queue. Within a move request
// and with Config.HintClass, a hint's answer for the item's class is
// taken from the memo if an item of that class was asked already.
func (c *Core[K, T]) askHints(regs []heldReg, item T, class uint64, label string, anyPending bool, oldObj, newObj any) strategy {
	s := stayParked
	for _, h := range regs {
		r := &c.regs[h.reg]
		if r.fn != nil && !c.cfg.DisableQueueingHints && c.skips(h.reg, r, item, class, label, oldObj, newObj) {
			continue
		}
		if h.pending {
			return immediately
		}
		if !anyPending {
			return afterBackoff
		}
		s = afterBackoff
	}
	return s
}

// skips asks registration r's hint about item, or the move request's
// memo about item's class, and reports whether the answer is Skip.
func (c *Core[K, T]) skips(i int32, r *registration[T], item T, class uint64, label string, oldObj, newObj any) bool {
	slot := c.memo.slot(i, class)
	if slot != nil && slot.valid(c.memo.gen, i, class) {
		return slot.skip
	}
	tok := c.rec.HintStart()
	v, err := r.fn(item, oldObj, newObj)
	c.rec.HintDone(tok, r.plugin, label, v, err)
	skip := err == nil && v == HintSkip
	if slot != nil {
		slot.set(c.memo.gen, i, class, skip)
	}
	return skip
}

// gatingMatches reports whether ev may lift e's gate: the gating plugin
// registered for a matching event. Wildcard events always may.
func (c *Core[K, T]) gatingMatches(e *entry[K, T], ev Event) bool {
	if ev.wildcard() {
		return true
	}
	for _, i := range c.hears(ev) {
		if c.regs[i].plugin == e.GatedBy {
			return true
		}
	}
	return false
}

// hearing is the registrations that hear one event, decided once for it.
type hearing struct {
	ev   Event
	set  bool
	regs []int32 // indexes into Core.regs, in their order
}

// hears returns the indexes of the registrations that hear ev, in the
// order of c.regs. It decides once per event: a move request asks it for
// every item it examines, and the answer depends only on the event, since
// Config.Match is pure. O(r) for r registrations when ev differs from the
// last event asked about, else O(1); no allocation once warm.
func (c *Core[K, T]) hears(ev Event) []int32 {
	h := &c.hearing
	if h.set && h.ev == ev {
		return h.regs
	}
	h.regs = h.regs[:0]
	for i := range c.regs {
		if c.matches(c.regs[i].event, ev) {
			h.regs = append(h.regs, int32(i))
		}
	}
	h.ev, h.set = ev, true
	return h.regs
}
