package schedq

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PendingOptions selects and pages what Pending lists.
type PendingOptions[T any] struct {
	// Tenant, if set, lists only that tenant's items (Config.Fairness;
	// without fairness nothing has a tenant, and nothing matches).
	Tenant string
	// Match, if set, lists only the items it accepts. It runs under the
	// lock, once per queued item, and must be pure and fast.
	Match func(item T) bool
	// Offset skips that many items of the listing; Limit caps the page
	// (0: 100).
	Offset, Limit int
	// Unexplained lists the page's items without explaining them: each
	// has its Rank, Key, Location (where it was listed), Tenant and, in
	// activeQ, Position.Ahead (with a stamp of the activeQ entry it was
	// listed at), and nothing else (no Reason). The page then costs no
	// explanation: a caller that keeps a long listing and shows a part of
	// it at a time explains that part with ExplainListed, which keeps
	// Position.Ahead only for the items still at their listed entry.
	Unexplained bool
}

// PendingPage is one page of the queued items, in the order they wait:
// activeQ in pop order, then backoffQ by the end of the backoff, then the
// unschedulable and the gated items, each in the queue's order.
type PendingPage[K comparable] struct {
	Time time.Time `json:"time"`
	// Total is how many items matched, on all pages.
	Total  int              `json:"total"`
	Offset int              `json:"offset"`
	Items  []PendingItem[K] `json:"items"`
}

// PendingItem is one listed item. It is the caller's own: unlike
// Get's Info and the explanations of Explain and Dump, whose lists
// (RejectedBy, WaitingOn, Reasons) are the queue's, read-only, its lists
// are copies, which the caller may change.
type PendingItem[K comparable] struct {
	// Rank is the item's place in the listing of the matching items,
	// from 0.
	Rank int `json:"rank"`
	// Explanation is the item's, as Explain gives it but without the
	// queue-wide counts of Position: for an item in activeQ, Position
	// holds only Ahead, its place among all of activeQ's items when it was
	// listed. An item that left its place between the listing and the
	// explanation (see Queue.Pending) is explained where it is now; one
	// that left activeQ and entered it again in between has no Position
	// (see Core.ExplainListed).
	Explanation[K]
	// listedAt is the stamp (entry.seq) of the activeQ entry the item was
	// listed at, 0 if it was listed elsewhere: its Position.Ahead is kept
	// only while it is still at that entry. Copies of the item carry it;
	// an item decoded from JSON has none, and so no Position once
	// explained.
	listedAt uint64
}

// MarshalJSON implements json.Marshaler: Rank, the explanation's fields
// (whose own MarshalJSON would otherwise drop Rank), then the position as
// far as the listing knows it: {"ahead": N}, not the queue-wide counts it
// leaves at zero, which would read as facts.
func (it PendingItem[K]) MarshalJSON() ([]byte, error) {
	x := it.Explanation
	pos := x.Position
	x.Position = nil
	b, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	out := append(fmt.Appendf(nil, `{"rank":%d,`, it.Rank), b[1:len(b)-1]...)
	if pos != nil {
		out = fmt.Appendf(out, `,"position":{"ahead":%d}`, pos.Ahead)
	}
	return append(out, '}'), nil
}

// Pending lists the queued items in the order they wait (see
// PendingPage), filtered and paged by o. Under fairness the order of
// activeQ is the order the items would pop in if nothing arrived and the
// pops happened at now. O(n log n) for n queued items; the concurrent
// Queue sorts outside its lock. The page is the caller's own, its items'
// lists included (PendingItem).
func (c *Core[K, T]) Pending(o PendingOptions[T], now time.Time) PendingPage[K] {
	s := c.snapshot(o, now)
	s.sort()
	return c.page(s, o, now)
}

// pendingRef is what the listing keeps of one item: its key, and what
// sorting it needs, copied so that the sort reads no queue state.
type pendingRef[K comparable, T any] struct {
	key    K
	loc    loc
	match  bool // selected by the options (all of activeQ is kept, to rank)
	prio   int32
	ts     int64
	tie    uint64
	expiry int64 // the end of its backoff (Unix ns)
	tenant string
	cost   float64
	info   *Info[T] // a copy, under a caller's Less only
	key2   float64  // under fairness: its tenant's usage when it heads it
	ahead  int      // in activeQ: its place among all of activeQ
	stamp  uint64   // in activeQ: its entry's seq (a group's: its entity's)
}

// pendingSnap is a copy of what the listing needs, taken under the lock.
type pendingSnap[K comparable, T any] struct {
	refs           []pendingRef[K, T]
	less           func(a, b *Info[T]) bool // a caller's Less, or nil
	fair           bool
	beforePriority bool
	scale          float64
	usage          map[string][2]float64 // tenant: stored usage, weight
}

// snapshot copies every item of activeQ (the order of all of them is needed
// to rank the matching ones) and the matching items elsewhere. O(n).
func (c *Core[K, T]) snapshot(o PendingOptions[T], now time.Time) *pendingSnap[K, T] {
	s := &pendingSnap[K, T]{refs: make([]pendingRef[K, T], 0, c.queued)}
	if c.cfg.Priority == nil {
		s.less = c.cfg.Less
	}
	if f := c.fair; f != nil {
		s.fair, s.beforePriority, s.scale = true, f.cfg.BeforePriority, 1
		if f.decay.started {
			s.scale = f.decay.scale(now.UnixNano())
		}
		s.usage = make(map[string][2]float64, len(f.tenants))
		for name, t := range f.tenants {
			s.usage[name] = [2]float64{t.usage, t.weight}
		}
	}
	add := func(e *entry[K, T]) {
		r := pendingRef[K, T]{key: e.key, loc: e.loc, match: c.selects(e, o)}
		if e.kind == kindGroup {
			if e.grp == nil || e.grp.rep == nil {
				r.match = false
			} else {
				r.key = e.grp.rep.key // a group is listed as the member it carries
			}
		}
		if !r.match && e.loc != locActive {
			return
		}
		k := c.keysOf(e)
		r.prio, r.ts, r.tie, r.expiry = k.prio, k.ts, k.tie, c.backoffDone(e.BackoffExpiry).UnixNano()
		if c.fair != nil {
			r.tenant, r.cost = c.fair.cfg.Tenant(e.Item), c.fair.cfg.cost(e.Item)
		}
		if s.less != nil {
			info := e.Info
			r.info = &info
		}
		if e.loc != locActive {
			r.tie = e.seq
		} else {
			r.stamp = e.seq // a group's entity, not the member it is listed as
		}
		s.refs = append(s.refs, r)
	}
	c.active.Each(add)
	c.backoffU.Each(add)
	c.backoffE.Each(add)
	for _, e := range c.parked.all {
		add(e)
	}
	return s
}

// selects reports whether o selects e.
func (c *Core[K, T]) selects(e *entry[K, T], o PendingOptions[T]) bool {
	if o.Tenant != "" && (c.fair == nil || c.fair.cfg.Tenant(e.Item) != o.Tenant) {
		return false
	}
	return o.Match == nil || o.Match(e.Item)
}

// sort puts the refs in listing order and ranks activeQ's. It reads only
// s, so the concurrent Queue runs it outside its lock. O(n log n).
func (s *pendingSnap[K, T]) sort() {
	if s.fair {
		s.fairKeys()
	}
	slices.SortFunc(s.refs, s.compare)
	for i := range s.refs {
		if s.refs[i].loc == locActive {
			s.refs[i].ahead = i
		}
	}
}

// placeOf orders the places: activeQ, backoffQ, unschedulable, gated.
func placeOf(l loc) int {
	switch l {
	case locActive:
		return 0
	case locBackoffUnsched, locBackoffError:
		return 1
	case locParked:
		return 2
	}
	return 3
}

// compare is the listing order.
func (s *pendingSnap[K, T]) compare(a, b pendingRef[K, T]) int {
	if c := cmp.Compare(placeOf(a.loc), placeOf(b.loc)); c != 0 {
		return c
	}
	if a.loc == locActive && s.fair {
		if !s.beforePriority && a.prio != b.prio {
			return cmp.Compare(b.prio, a.prio)
		}
		if c := cmp.Compare(a.key2, b.key2); c != 0 {
			return c
		}
	}
	if placeOf(a.loc) == 1 && a.expiry != b.expiry {
		return cmp.Compare(a.expiry, b.expiry)
	}
	return s.order(&a, &b)
}

// order is the queue's order of two items, ties by their entry order.
func (s *pendingSnap[K, T]) order(a, b *pendingRef[K, T]) int {
	if s.less != nil {
		switch {
		case s.less(a.info, b.info):
			return -1
		case s.less(b.info, a.info):
			return 1
		}
		return cmp.Compare(a.tie, b.tie)
	}
	return cmp.Or(cmp.Compare(b.prio, a.prio), cmp.Compare(a.ts, b.ts), cmp.Compare(a.tie, b.tie))
}

// fairKeys gives each item in activeQ its key under fairness: the usage
// over weight its tenant will have when the item is its tenant's head, if
// the items ahead of it in its tenant pop first, at the snapshot's time.
// Sorting by priority (unless BeforePriority), then that key, then the
// items' order, merges the tenants as Pop would. O(n log n).
func (s *pendingSnap[K, T]) fairKeys() {
	var active []*pendingRef[K, T]
	for i := range s.refs {
		if s.refs[i].loc == locActive {
			active = append(active, &s.refs[i])
		}
	}
	slices.SortFunc(active, func(a, b *pendingRef[K, T]) int {
		return cmp.Or(cmp.Compare(a.tenant, b.tenant), s.order(a, b))
	})
	for i := 0; i < len(active); {
		name := active[i].tenant
		u, w := 0.0, 1.0
		if uw, ok := s.usage[name]; ok {
			u, w = uw[0], uw[1]
		}
		for ; i < len(active) && active[i].tenant == name; i++ {
			active[i].key2 = u / w
			u += active[i].cost * s.scale
		}
	}
}

// page explains the page's items as they are now. O(page · r).
func (c *Core[K, T]) page(s *pendingSnap[K, T], o PendingOptions[T], now time.Time) PendingPage[K] {
	limit := o.Limit
	if limit <= 0 {
		limit = 100
	}
	// Sized once: a long unexplained listing (a copy of the whole order)
	// grown by appends copied its items, hundreds of bytes each, over and
	// over under the lock.
	p := PendingPage[K]{Time: now, Offset: max(o.Offset, 0), Items: make([]PendingItem[K], 0, min(limit, max(len(s.refs)-max(o.Offset, 0), 0)))}
	var positions []Position
	for _, r := range s.refs {
		if !r.match {
			continue
		}
		rank := p.Total
		p.Total++
		if rank < p.Offset || len(p.Items) >= limit {
			continue
		}
		it := PendingItem[K]{Rank: rank, Explanation: Explanation[K]{Key: r.key, Location: r.loc.location(), Tenant: r.tenant}, listedAt: r.stamp}
		if r.loc == locActive {
			if len(positions) == cap(positions) { // the page's positions, in one allocation
				positions = make([]Position, 0, cap(p.Items)-len(p.Items))
			}
			positions = append(positions, Position{Ahead: r.ahead})
			it.Position = &positions[len(positions)-1]
		}
		if !o.Unexplained {
			c.explainListed(&it, now)
		}
		p.Items = append(p.Items, it)
	}
	return p
}

// leftSinceListed is the reason of a listed item no longer queued.
const leftSinceListed = "left the queue since it was listed"

// explainListed explains it, an item as Pending lists it unexplained, as
// it is now: where it is now (an item that moved since is explained
// there), with its rank, its tenant if it left, and its place in
// activeQ as listed (Position.Ahead) kept while it is still at the
// activeQ entry it was listed at (stillListed). O(r) for r hint
// registrations.
func (c *Core[K, T]) explainListed(it *PendingItem[K], now time.Time) {
	pos, tenant := it.Position, it.Tenant
	e := c.queuedEntry(it.Key)
	if e == nil {
		it.Explanation = Explanation[K]{Key: it.Key, Reason: leftSinceListed, Tenant: tenant}
		return
	}
	it.Explanation = c.explain(e, now)
	it.Status.detach()
	if c.stillListed(e, it.listedAt) {
		it.Position = pos
	}
}

// stillListed reports whether queued entry e is still the activeQ entry
// stamped at when it was listed: in activeQ, and neither left nor moved
// within it since, which every entry into activeQ (toActive), every
// re-sort under a caller's Less (resorted) and every move under
// Config.Priority (fixActive) would have stamped anew. A member stands
// where its group's entity does, and the entity is what the listing
// stamped (its representative member's own seq is its order of arrival).
// O(1).
func (c *Core[K, T]) stillListed(e *entry[K, T], stamp uint64) bool {
	if e.kind == kindMember {
		if e.loc != locMember || e.grp == nil || e.grp.ent == nil {
			return false
		}
		e = e.grp.ent
	}
	return stamp != 0 && e.loc == locActive && e.seq == stamp
}

// ExplainListed explains items, listed by Pending with
// PendingOptions.Unexplained, as they are now, in place: each as Pending
// would have explained it (an item that moved since the listing is
// explained where it is now, one that left the queue says so and keeps
// its tenant), its Rank that of the listing. An item keeps the listing's
// Position.Ahead only while it is still at the activeQ entry it was
// listed at: one that left activeQ and entered it again since (deleted
// and added again, tried and back from backoffQ or from the
// unschedulable items, activated), or that an update moved within it (a
// new priority, a group's new GroupSpec.Priority, a new order under a
// caller's Less), whatever its place now, has no Position, as an item
// outside activeQ has none (but for an update that changes only an
// item's tenant under fairness with a caller's Less, which keeps its
// stamp, since there the stamp breaks ties of the pop order: such an
// item keeps its listed place, at most the listing's age old): its
// listed place is no longer its, and its
// place now would cost O(n) for each such item (Explain gives it), which
// a listing explained a part at a time, however long, would pay for
// every item that moved. O(len(items) · r) for r hint registrations: no
// position in line is computed.
func (c *Core[K, T]) ExplainListed(items []PendingItem[K], now time.Time) {
	for i := range items {
		c.explainListed(&items[i], now)
	}
}

// Pending lists the queued items in the order they wait (see
// Core.Pending). It holds the lock to copy what the order needs (O(n)),
// sorts outside it, and takes it again to explain the page's items
// (O(page)); an item that moved in between is explained where it is, and
// one that left activeQ and entered it again in between has no Position
// (see Core.ExplainListed).
// With Config.Less set, the sort calls Less outside the lock, on copies
// of the items' Info: the one callback that runs outside it.
func (q *Queue[K, T]) Pending(o PendingOptions[T]) PendingPage[K] {
	q.mu.Lock()
	s := q.core.snapshot(o, q.clock.Now())
	q.mu.Unlock()
	s.sort()
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.page(s, o, q.clock.Now())
}

// ExplainListed explains items, listed by Pending with
// PendingOptions.Unexplained, as they are now (see Core.ExplainListed),
// under the lock once. O(len(items) · r).
func (q *Queue[K, T]) ExplainListed(items []PendingItem[K]) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.core.ExplainListed(items, q.clock.Now())
}

// String renders the page for people: one line an item, with its rank,
// place, key, tenant if any, and reason; a page from past the end says
// so.
func (p PendingPage[K]) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d pending at %s", p.Total, p.Time.Format(time.RFC3339Nano))
	switch {
	case len(p.Items) > 0:
		fmt.Fprintf(&b, ", %d to %d:", p.Items[0].Rank+1, p.Items[len(p.Items)-1].Rank+1)
	case p.Offset > 0 && p.Offset >= p.Total:
		fmt.Fprintf(&b, "; none from offset %d: past the end", p.Offset)
	}
	b.WriteByte('\n')
	for _, it := range p.Items {
		fmt.Fprintf(&b, "%5d %-13s %v", it.Rank+1, it.Location, it.Key)
		if it.Tenant != "" {
			fmt.Fprintf(&b, " [%s]", it.Tenant)
		}
		fmt.Fprintf(&b, ": %s\n", it.Reason)
	}
	if rest := p.Total - p.Offset - len(p.Items); rest > 0 && len(p.Items) > 0 {
		fmt.Fprintf(&b, "... %d more: offset %d\n", rest, p.Offset+len(p.Items))
	}
	return b.String()
}
