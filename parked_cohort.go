package schedq

// cohort is the parked lone items that every hint judges alike for any
// event (Config.HintClass): one hint class, the same gating plugin and the
// same lists of checks (RejectedBy, WaitingOn, compared by address: the
// queue shares equal lists, see pluginLists, and two unshared copies of
// one list only split a cohort in two). Its items are indexed under the
// same plugins, so a move request judges a cohort once, with any of its
// items, and looks at no item of a cohort that stays parked
// (Core.judgeBucket).
type cohort[K comparable, T any] struct {
	key     cohortKey
	members []*entry[K, T] // dense, swap-remove; entryMore.cpos is the place
	// at is the cohort's place in the cohort list of each bucket that
	// indexes its items.
	at []cohortAt[K, T]
	// A move request's judgement: in epoch, the first of the event's
	// buckets that holds the cohort, and what the hints said.
	epoch   uint32
	first   *bucket[K, T]
	verdict strategy
	// Deferral by cohort (cohort_defer.go): the live groups that defer
	// the cohort's members that joined before them, the last group that
	// did (for Explain; it may have ended since), and the last instant
	// such a group's event made room for others, with the group's seq.
	// mark is deferLazily's scratch.
	lazy     []*roomGroup[K, T]
	lastG    *roomGroup[K, T]
	flushAt  int64
	flushSeq uint64
	mark     int
	// ord is its members in pop order (cohort_order.go); nil when
	// dropped, to be built anew, and for good once tied: two members
	// with the same priority and timestamp. strat is the strategy the
	// last move request that took from ord gave its members, at
	// stratSeq (its group's seq): it overrides an older one of theirs
	// (strategyOf).
	ord      *cohortOrder[K, T]
	tied     bool
	strat    strategy
	stratSeq uint64
}

// cohortKey is what the hints' answer to a lone item depends on, besides
// the event.
type cohortKey struct {
	class       uint64
	gate        string
	rej, wait   *string
	nrej, nwait int
}

// cohortAt is a cohort's place in one bucket's cohort list.
type cohortAt[K comparable, T any] struct {
	b   *bucket[K, T]
	pos int32
}

// keyOf returns e's cohort key.
func keyOf[K comparable, T any](e *entry[K, T]) cohortKey {
	k := cohortKey{class: e.hclass, gate: e.GatedBy, nrej: len(e.RejectedBy), nwait: len(e.WaitingOn)}
	if k.nrej > 0 {
		k.rej = &e.RejectedBy[0]
	}
	if k.nwait > 0 {
		k.wait = &e.WaitingOn[0]
	}
	return k
}

// cohortFor returns the cohort e joins as it is parked, or nil: only lone
// items that some plugin holds back, and only with Config.HintClass.
// O(1) amortized.
func (p *parked[K, T]) cohortFor(e *entry[K, T]) *cohort[K, T] {
	if !p.byClass || e.kind != kindLone || !e.held() {
		return nil
	}
	k := keyOf(e)
	co := p.byKey[k]
	if co == nil {
		if p.byKey == nil {
			p.byKey = map[cohortKey]*cohort[K, T]{}
		}
		co = &cohort[K, T]{key: k}
		if p.ordered {
			co.ord = &cohortOrder[K, T]{}
		}
		p.byKey[k] = co
	}
	return co
}

// join adds e to co, now (parked.seq), and to co's order. O(1)
// amortized.
func (p *parked[K, T]) join(co *cohort[K, T], e *entry[K, T]) {
	m := e.ext()
	m.coh, m.cpos, m.joined = co, int32(len(co.members)), p.seq
	co.members = append(co.members, e)
	p.orderJoin(co, e)
}

// leave takes e out of its cohort, and an emptied cohort out of its
// buckets' lists and the index; moving says e stays parked, in another
// cohort (leaveDefers). O(b) for the b buckets of an emptied cohort,
// else O(1), besides leaveDefers.
func (p *parked[K, T]) leave(e *entry[K, T], moving bool) {
	m := e.more
	if m == nil || m.coh == nil {
		return
	}
	leaveDefers(e, moving)
	co := m.coh
	keepStrategy(e)
	p.orderLeave(co, e)
	last := co.members[len(co.members)-1]
	co.members[m.cpos] = last
	last.more.cpos = m.cpos
	co.members[len(co.members)-1] = nil
	co.members = co.members[:len(co.members)-1]
	m.coh, m.cpos = nil, 0
	if len(co.members) > 0 {
		return
	}
	for _, a := range co.at {
		b := a.b
		moved := b.cohorts[len(b.cohorts)-1]
		b.cohorts[a.pos] = moved
		for j := range moved.at {
			if moved.at[j].b == b {
				moved.at[j].pos = a.pos
				break
			}
		}
		b.cohorts[len(b.cohorts)-1] = nil
		b.cohorts = b.cohorts[:len(b.cohorts)-1]
	}
	co.at = nil
	delete(p.byKey, co.key)
}

// enter records that the bucket b indexes co's items, when co's first
// item is indexed there. O(1) amortized.
func (co *cohort[K, T]) enter(b *bucket[K, T]) {
	co.at = append(co.at, cohortAt[K, T]{b: b, pos: int32(len(b.cohorts))})
	b.cohorts = append(b.cohorts, co)
}

// recohort files a parked item whose hint class changed (an update) in
// the cohort of its new class, in place: its buckets and its places in
// them do not change. O(b) for its b buckets.
func (p *parked[K, T]) recohort(e *entry[K, T]) {
	old := e.cohortOf()
	if old == nil || old.key == keyOf(e) {
		return
	}
	p.leave(e, true)
	co := p.cohortFor(e)
	fresh := len(co.members) == 0
	p.join(co, e)
	for _, s := range e.more.slots {
		s.b.cohs[s.pos] = co
		if fresh {
			co.enter(s.b)
		}
	}
}

// cohortOf returns the cohort of parked e, or nil.
func (e *entry[K, T]) cohortOf() *cohort[K, T] {
	if e.more == nil {
		return nil
	}
	return e.more.coh
}
