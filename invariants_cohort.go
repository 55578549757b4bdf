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
		}
	}
	for _, co := range c.parked.byKey {
		members += len(co.members)
		if len(co.members) == 0 {
			bad("an empty cohort is kept")
		}
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
