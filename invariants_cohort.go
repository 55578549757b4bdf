package schedq

// checkCohorts verifies the cohorts of the parked items (parked_cohort.go):
// with Config.HintClass every held lone item is in the cohort of its key
// and at its place there, and no other item is in one; each bucket's
// cohorts sit beside its items, its list of cohorts names each cohort of
// its items once, and its count of loose items is right. A parked lone
// item's sort keys are current. O(p) for p parked items and their index
// slots.
func (c *Core[K, T]) checkCohorts(bad func(string, ...any)) {
	members := 0
	for _, e := range c.parked.all {
		if c.cfg.Priority != nil && e.kind == kindLone && (e.ts != e.Timestamp.UnixNano() || e.prio != c.cfg.Priority(e.Item)) {
			bad("parked key %v: stale sort keys", e.key) // wakeByClass reads them
		}
		co := e.cohortOf()
		want := c.parked.byClass && e.kind == kindLone && e.held()
		switch {
		case (co != nil) != want:
			bad("parked key %v: in a cohort %v, want %v", e.key, co != nil, want)
		case co != nil && (int(e.more.cpos) >= len(co.members) || co.members[e.more.cpos] != e):
			bad("parked key %v: bad place in its cohort", e.key)
		case co != nil && (co.key != keyOf(e) || c.parked.byKey[co.key] != co):
			bad("parked key %v: in the cohort of another key", e.key)
		case co != nil && co.ord != nil:
			m := e.more
			if int(m.opos) >= len(co.ord.recs) {
				bad("parked key %v: no record in its cohort's order", e.key)
				break
			}
			if r := co.ord.recs[m.opos]; r.e != e || r.out != 0 || r.in != m.joined || r.prio != e.prio || r.ts != e.ts {
				bad("parked key %v: its record in its cohort's order is %+v", e.key, r)
			}
		}
	}
	for _, co := range c.parked.byKey {
		members += len(co.members)
		if len(co.members) == 0 {
			bad("an empty cohort is kept")
		}
		checkOrder(co, bad)
		for _, a := range co.at {
			if int(a.pos) >= len(a.b.cohorts) || a.b.cohorts[a.pos] != co {
				bad("cohort of class %#x: bad place in bucket %q", co.key.class, a.b.plugin)
			}
		}
	}
	for _, e := range c.parked.all {
		if e.cohortOf() != nil {
			members--
		}
	}
	if members != 0 {
		bad("cohorts hold %+d items more than the parked items in one", members)
	}
	for name, b := range c.parked.buckets {
		c.checkBucketCohorts(name, b, bad)
	}
}

// checkBucketCohorts is checkCohorts for one bucket.
func (c *Core[K, T]) checkBucketCohorts(name string, b *bucket[K, T], bad func(string, ...any)) {
	if len(b.cohs) != len(b.items) {
		bad("index %q: %d cohorts beside %d items", name, len(b.cohs), len(b.items))
		return
	}
	loose, listed := 0, map[*cohort[K, T]]bool{}
	for _, co := range b.cohorts {
		if listed[co] {
			bad("index %q lists a cohort twice", name)
		}
		listed[co] = true
	}
	seen := map[*cohort[K, T]]bool{}
	for i, e := range b.items {
		co := b.cohs[i]
		if co != e.cohortOf() {
			bad("index %q: key %v beside the wrong cohort", name, e.key)
		}
		if co == nil {
			loose++
			continue
		}
		seen[co] = true
		if !listed[co] {
			bad("index %q: key %v's cohort is not listed", name, e.key)
		}
	}
	if len(seen) != len(listed) {
		bad("index %q lists %d cohorts, holds items of %d", name, len(listed), len(seen))
	}
	if loose != b.loose {
		bad("index %q: %d loose items, counted %d", name, loose, b.loose)
	}
}

// checkOrder verifies a cohort's order (cohort_order.go): its records
// strictly in pop order, none left before head, dead counting those
// left, one record in for each member (checkCohorts checks each
// member's), and no order kept for a tied cohort. O(r) for r records.
func checkOrder[K comparable, T any](co *cohort[K, T], bad func(string, ...any)) {
	o := co.ord
	if o == nil {
		return
	}
	if co.tied {
		bad("cohort of class %#x: tied but kept in order", co.key.class)
	}
	in, dead := 0, 0
	for i, r := range o.recs {
		if i > 0 && !keysBefore(o.recs[i-1].prio, o.recs[i-1].ts, r.prio, r.ts) {
			bad("cohort of class %#x: records %d and %d out of order", co.key.class, i-1, i)
		}
		if r.out != 0 {
			dead++
			continue
		}
		in++
		if i < o.head {
			bad("cohort of class %#x: record %d in before head %d", co.key.class, i, o.head)
		}
	}
	if in != len(co.members) || dead != o.dead {
		bad("cohort of class %#x: %d records in and %d left (counted %d), %d members", co.key.class, in, dead, o.dead, len(co.members))
	}
}

// checkCursor verifies the tail of group g if it is a cursor into a
// cohort's order: ordN counts the candidates from cur on, and g has no
// heap beside it.
func checkCursor[K comparable, T any](g *roomGroup[K, T], bad func(string, ...any)) {
	if g.ord == nil {
		if g.ordN != 0 {
			bad("budget of %s: %d items in a tail with no cursor", g.label, g.ordN)
		}
		return
	}
	if g.tail.Len() > 0 {
		bad("budget of %s: a tail both heap and cursor", g.label)
	}
	n := 0
	for i := g.cur; i < len(g.ord.recs); i++ {
		if g.candidate(&g.ord.recs[i]) {
			n++
		}
	}
	if n != g.ordN || n == 0 {
		bad("budget of %s: its cursor has %d candidates after it, counted %d", g.label, n, g.ordN)
	}
}
