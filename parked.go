package schedq

// parked is the unschedulable area: items waiting for an event, and gated
// items. Besides a dense list of all of them (for the leftover flush and
// wildcard events) it keeps an index from plugin name to the items that
// plugin holds back, so that a move request looks only at the items that
// the event's interested plugins rejected. Lists are dense slices with
// swap-remove: O(1) add and remove, and an iteration order that depends only
// on the sequence of operations, never on map order.
//
// With Config.HintClass (byClass) the lone items are also filed in
// cohorts (parked_cohort.go), and each bucket lists the cohorts of its
// items, so that a move request judges a cohort once.
type parked[K comparable, T any] struct {
	all     []*entry[K, T]
	buckets map[string]*bucket[K, T]
	gated   int
	byClass bool
	byKey   map[cohortKey]*cohort[K, T]
	// ordered: the cohorts keep their members in pop order, for a wake
	// budget by class with the default order (cohort_order.go).
	ordered bool
	// seq numbers the budget groups as they are made; an item that
	// joins a cohort, or whose deferrals are cleared, notes it
	// (cohort_defer.go).
	seq uint64
}

// bucket is the set of parked items one plugin holds back. cohs is
// beside items: the cohort of the item at each place, nil for an item in
// none (loose, as a group entity), so that a move request reads an
// item's cohort without loading the item. cohorts lists the cohorts of
// its items, each once; loose counts the items in none.
type bucket[K comparable, T any] struct {
	plugin  string
	items   []*entry[K, T]
	cohs    []*cohort[K, T]
	cohorts []*cohort[K, T]
	loose   int
}

// slot is an entry's place in one bucket.
type slot[K comparable, T any] struct {
	b   *bucket[K, T]
	pos int
}

func (p *parked[K, T]) len() int { return len(p.all) }

// add parks e. Gated items are indexed under their gating plugin only;
// others under each plugin that rejected them. The first time an entry
// is parked it allocates its index slots (entryMore).
func (p *parked[K, T]) add(e *entry[K, T]) {
	e.gen = 0 // no mark from an earlier epoch (Core.nextEpoch)
	e.idx = int32(len(p.all))
	p.all = append(p.all, e)
	co := p.cohortFor(e)
	fresh := false
	if co != nil {
		fresh = len(co.members) == 0
		p.join(co, e)
	}
	if e.GatedBy != "" {
		e.loc = locGated
		p.gated++
		p.index(e, e.GatedBy, co, fresh)
		return
	}
	e.loc = locParked
	for _, name := range e.RejectedBy {
		p.index(e, name, co, fresh)
	}
	for _, name := range e.WaitingOn {
		p.index(e, name, co, fresh)
	}
}

// index files e under plugin, in its cohort co (nil: none), which e
// has just made anew if fresh.
func (p *parked[K, T]) index(e *entry[K, T], plugin string, co *cohort[K, T], fresh bool) {
	for _, s := range e.slotList() {
		if s.b.plugin == plugin {
			return // named twice
		}
	}
	b := p.buckets[plugin]
	if b == nil {
		if p.buckets == nil {
			p.buckets = map[string]*bucket[K, T]{}
		}
		b = &bucket[K, T]{plugin: plugin}
		p.buckets[plugin] = b
	}
	m := e.ext()
	m.slots = append(m.slots, slot[K, T]{b: b, pos: len(b.items)})
	b.items = append(b.items, e)
	b.cohs = append(b.cohs, co)
	switch {
	case co == nil:
		b.loose++
	case fresh:
		co.enter(b)
	}
}

// remove unparks e.
func (p *parked[K, T]) remove(e *entry[K, T]) {
	last := p.all[len(p.all)-1]
	p.all[e.idx] = last
	last.idx = e.idx
	p.all[len(p.all)-1] = nil
	p.all = p.all[:len(p.all)-1]
	if e.loc == locGated {
		p.gated--
	}
	loose := e.cohortOf() == nil
	for _, s := range e.slotList() {
		b := s.b
		n := len(b.items) - 1
		moved := b.items[n]
		b.items[s.pos] = moved
		b.cohs[s.pos] = b.cohs[n]
		for j, ms := range moved.more.slots {
			if ms.b == b {
				moved.more.slots[j].pos = s.pos
				break
			}
		}
		b.items[n], b.cohs[n] = nil, nil
		b.items, b.cohs = b.items[:n], b.cohs[:n]
		if loose {
			b.loose--
		}
	}
	p.leave(e, false)
	if m := e.more; m != nil {
		clear(m.slots)
		m.slots = m.slots[:0]
	}
	e.idx = -1
	e.loc = locNone
}
