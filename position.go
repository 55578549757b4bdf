package schedq

import (
	"fmt"
	"math"
	"time"
)

// Position says where a queued item stands in line and, as an estimate,
// when it will next be tried. Explain fills it in (Dump does not: it
// would cost O(n) per item).
type Position struct {
	// Ahead is how many items in activeQ pop before this one if nothing
	// new arrives. For an item in activeQ it is exact (under fairness,
	// taking the pops ahead of it to happen now, so that usage moves only
	// by their charges); for an item elsewhere, it is where the item would
	// stand if it entered activeQ now.
	Ahead int `json:"ahead"`
	// Active is how many items activeQ holds.
	Active int `json:"active"`
	// BackoffAhead and ParkedAhead count apart the items backing off, and
	// parked (unschedulable or gated), that the queue's order puts before
	// this one: they pop first if they come back before its turn.
	BackoffAhead int `json:"backoffAhead"`
	ParkedAhead  int `json:"parkedAhead"`
	// PopRate is the recent pop rate, per second, over the latest pops;
	// 0 if too few pops were seen to tell.
	PopRate float64 `json:"popRate,omitempty"`
	// Estimated is true when EstimatedWait holds an estimate. There is
	// none for a parked item, which waits for an event, nor without a
	// pop rate (unless the item is next in line).
	Estimated bool `json:"estimated"`
	// EstimatedWait is an estimate, not a promise, of the time until the
	// item's next attempt: the items ahead of it at the recent pop rate,
	// and no less than the rest of its backoff. Arrivals ahead of it,
	// changes in the pop rate and events all move it.
	EstimatedWait time.Duration `json:"estimatedWait,omitempty"`
}

// String renders the position in one line, for people.
func (p *Position) String() string {
	s := fmt.Sprintf("%d ahead of %d in activeQ (and %d backing off, %d parked, ahead in order)",
		p.Ahead, p.Active, p.BackoffAhead, p.ParkedAhead)
	if p.Estimated {
		s += fmt.Sprintf("; next attempt in about %v (estimate", p.EstimatedWait.Round(time.Millisecond))
		if p.PopRate > 0 {
			s += fmt.Sprintf(", at %.3g pops/s", p.PopRate)
		}
		s += ")"
	}
	return s
}

// locate returns e's position at now, or nil for an item in flight.
// O(n) for n queued items, and O(1) memory.
func (c *Core[K, T]) locate(e *entry[K, T], now time.Time) *Position {
	if e.kind == kindMember { // a member stands where its group's entity does
		if e.loc != locMember || e.grp == nil || e.grp.ent == nil {
			return nil
		}
		e = e.grp.ent
	}
	if e.loc == locFlight || e.loc == locNone {
		return nil
	}
	p := &Position{Active: c.active.Len()}
	p.Ahead = c.activeAhead(e, now)
	c.othersAhead(e, p)
	rate, ok := c.rate.perSecond(now)
	if ok {
		p.PopRate = rate
	}
	c.estimate(e, p, now)
	return p
}

// estimate fills in the estimated wait of e at position p.
func (c *Core[K, T]) estimate(e *entry[K, T], p *Position, now time.Time) {
	var wait time.Duration
	switch {
	case e.loc == locParked || e.loc == locGated:
		return
	case p.Ahead == 0:
	case p.PopRate > 0:
		wait = time.Duration(math.Min(float64(p.Ahead)/p.PopRate*float64(time.Second), math.MaxInt64/2))
	default:
		return
	}
	if e.loc == locBackoffUnsched || e.loc == locBackoffError {
		wait = max(wait, c.backoffDone(e.BackoffExpiry).Sub(now))
	}
	p.Estimated, p.EstimatedWait = true, max(wait, 0)
}

// othersAhead counts the items backing off and parked that the queue's
// order puts before e. O(n).
func (c *Core[K, T]) othersAhead(e *entry[K, T], p *Position) {
	before := c.aheadOf(e)
	ahead := func(y *entry[K, T]) {
		if before(y) {
			p.BackoffAhead++
		}
	}
	c.backoffU.Each(ahead)
	c.backoffE.Each(ahead)
	for _, y := range c.parked.all {
		if before(y) {
			p.ParkedAhead++
		}
	}
}

// aheadOf returns whether an entry outside activeQ pops before e in the
// queue's order: under a caller's Less, by Less; under Config.Priority, by
// the sort keys, in which a group entity stands at its GroupSpec.Priority
// (byPriority would read the priority of the member it carries).
func (c *Core[K, T]) aheadOf(e *entry[K, T]) func(y *entry[K, T]) bool {
	if c.cfg.Priority == nil {
		return func(y *entry[K, T]) bool { return y != e && c.cfg.Less(&y.Info, &e.Info) }
	}
	ek := c.keysOf(e)
	return func(y *entry[K, T]) bool {
		if y == e {
			return false
		}
		yk := c.keysOf(y)
		return yk.prio > ek.prio || yk.prio == ek.prio && yk.ts < ek.ts
	}
}

// activeAhead counts the items in activeQ that pop before e, or would if
// e entered activeQ now (behind its equals). O(n).
func (c *Core[K, T]) activeAhead(e *entry[K, T], now time.Time) int {
	switch a := c.active.(type) {
	case *lazyActive[K, T]:
		return a.ahead(c.keysOf(e))
	case *indexedActive[K, T]:
		return a.ahead(e, c.cfg.Less)
	case *fairActive[K, T]:
		return a.ahead(e, c.keysOf(e), now.UnixNano())
	}
	return 0
}

// sortKeysOf is an entry's place in the default order, wherever it is:
// for an entry outside activeQ, the place it would take if it entered now.
type sortKeysOf struct {
	prio   int32
	ts     int64
	tie    uint64 // its generation or stamp in activeQ; past all others outside
	queued bool   // in activeQ
}

// keysOf returns e's sort keys (fresh for an entry outside activeQ).
func (c *Core[K, T]) keysOf(e *entry[K, T]) sortKeysOf {
	k := sortKeysOf{prio: e.prio, ts: e.ts, tie: math.MaxUint64}
	if e.loc == locActive {
		k.queued = true
		switch {
		case c.fair != nil:
			k.tie = uint64(e.gen)
		case c.cfg.Priority == nil:
			k.tie = e.seq
		default:
			k.tie = uint64(e.gen)
		}
		return k
	}
	if c.cfg.Priority != nil {
		k.prio, k.ts = c.cfg.Priority(e.Item), e.Timestamp.UnixNano()
		if e.kind == kindGroup {
			k.prio = e.grp.spec.Priority // not its item's: a member's
		}
	}
	return k
}

// ahead counts the live slots before k. O(n).
func (a *lazyActive[K, T]) ahead(k sortKeysOf) int {
	n := 0
	all := a.stale == 0 // then every slot is live, without reading its entry
	for i := range a.h.Len() {
		s := a.h.At(i)
		if p, ts := s.Prio(), s.TS(); (p > k.prio || p == k.prio && (ts < k.ts || ts == k.ts && uint64(s.Gen()) < k.tie)) && (all || a.valid(s)) {
			n++
		}
	}
	return n
}

// ahead counts the entries before e under less, ties by entry order. O(n).
func (a *indexedActive[K, T]) ahead(e *entry[K, T], less func(a, b *Info[T]) bool) int {
	n := 0
	for i := range a.h.Len() {
		y := a.h.At(i)
		if y == e {
			continue
		}
		if less(&y.Info, &e.Info) || !less(&e.Info, &y.Info) && (e.loc != locActive || y.seq < e.seq) {
			n++
		}
	}
	return n
}
