package schedq

import (
	"math"

	"github.com/schedq/schedq/internal/heap"
)

// fairTally is what one tenant has in activeQ, as seen from the item
// whose position is being found (x): its items of higher priority than x
// (which all pop first, in the priority-first order), its items of x's
// level (all of them, with BeforePriority), and of those, the ones its own
// order puts before x; with the costs they will be charged.
type fairTally struct {
	higher        int
	higherCost    float64
	level         int
	levelCost     float64
	before        int
	beforeCost    float64
	usage, weight float64
}

// ahead counts the items that pop before e (with sort keys k), taking the
// pops to happen at now with no arrivals. The pop order is then a merge of
// the tenants' own orders by each item's key, the usage its tenant will
// have when the item is its head; ties by the items' order. So for each
// other tenant, its items of x's level that pop before x are those whose
// key is below x's, plus, at an equal key, those its order puts first.
// The keys are computed as the charges would add them up, so that they
// are exact in floating point; with Cost set, a tenant's items are taken
// to cost their mean. O(n).
func (f *fairActive[K, T]) ahead(e *entry[K, T], k sortKeysOf, now int64) int {
	scale := 1.0
	if f.decay.started {
		scale = f.decay.scale(now)
	}
	tallies := make(map[*fairTenant[K, T]]*fairTally, f.order.Len()+1)
	for i := range f.order.Len() {
		t := f.order.At(i)
		ty := &fairTally{usage: t.usage, weight: t.weight}
		tallies[t] = ty
		// Without stale slots, every slot is live: no need to read the
		// entries, which would cost a cache miss each.
		all := t.stale == 0
		if all && f.custom == nil && f.cfg.Cost == nil {
			f.tallyPlain(ty, &t.h.slots, e, k)
			continue
		}
		for j := range t.h.size() {
			if s := t.h.at(j); s.Ref != e && (all || fairLive(s)) {
				f.tally(ty, &s, e, k)
			}
		}
	}
	name := f.cfg.Tenant(e.Item)
	var x *fairTally
	if t := f.tenants[name]; t != nil {
		x = tallies[t]
		if x == nil {
			x = &fairTally{usage: t.usage, weight: t.weight}
		}
	} else {
		x = &fairTally{weight: f.cfg.weight(name)}
	}
	uniform := f.cfg.Cost == nil
	u := x.usage
	if uniform {
		for range x.higher + x.before {
			u += scale
		}
	} else {
		u += (x.higherCost + x.beforeCost) * scale
	}
	key := u / x.weight
	n := x.before
	for _, ty := range tallies {
		n += ty.higher
		if ty != x {
			n += ty.levelAhead(key, scale, uniform)
		}
	}
	return n
}

// tallyPlain is tally over all of a tenant's slots, all live, in the
// default order with uniform costs: the common case, kept to comparisons
// of the slots' own keys. O(len(items)).
func (f *fairActive[K, T]) tallyPlain(ty *fairTally, h *heap.SlotHeap[*entry[K, T]], e *entry[K, T], k sortKeysOf) {
	higher, level, before := 0, 0, 0
	// x's keys as a slot, so that "before x" is one packed comparison. A
	// tie past 32 bits is past all generations, as is the largest one
	// (see renumber).
	x := heap.NewSlot(k.prio, k.ts, uint32(min(k.tie, math.MaxUint32)), e)
	for j := range h.Len() {
		s := h.At(j)
		if s.Ref == e {
			continue
		}
		if p := s.Prio(); !f.cfg.BeforePriority && p != k.prio {
			if p > k.prio {
				higher++
			}
			continue
		}
		level++
		if s.Before(&x) {
			before++
		}
	}
	ty.higher, ty.level, ty.before = ty.higher+higher, ty.level+level, ty.before+before
	ty.higherCost += float64(higher)
	ty.levelCost += float64(level)
	ty.beforeCost += float64(before)
}

// tally adds slot s to ty, from the point of view of e (keys k).
func (f *fairActive[K, T]) tally(ty *fairTally, s *fairSlot[K, T], e *entry[K, T], k sortKeysOf) {
	cost := 1.0
	if f.cfg.Cost != nil {
		cost = f.cfg.cost(s.Ref.Item)
	}
	p, ts, gen := s.Prio(), s.TS(), uint64(s.Gen())
	if !f.cfg.BeforePriority && p != k.prio {
		if p > k.prio {
			ty.higher++
			ty.higherCost += cost
		}
		return
	}
	ty.level++
	ty.levelCost += cost
	var first bool
	if f.custom != nil {
		first = f.custom(s.Ref, e) || !f.custom(e, s.Ref) && gen < k.tie
	} else {
		first = p > k.prio || p == k.prio && (ts < k.ts || ts == k.ts && gen < k.tie)
	}
	if first {
		ty.before++
		ty.beforeCost += cost
	}
}

// levelAhead counts the tenant's items at x's level that pop before x,
// whose key is key: the tenant's key grows by each pop's charge (scale
// per pop, with uniform costs, else the mean cost times scale), and an
// item pops before x while the key is below x's, or equal to it with the
// item first in order (the first ty.before of them). O(items counted).
func (ty *fairTally) levelAhead(key, scale float64, uniform bool) int {
	u := ty.usage
	unit := scale
	if uniform {
		for range ty.higher {
			u += scale
		}
	} else {
		u += ty.higherCost * scale
		if ty.level > 0 {
			unit = ty.levelCost / float64(ty.level) * scale
		}
	}
	n := 0
	for j := range ty.level {
		kj := u / ty.weight
		if kj > key || kj == key && j >= ty.before {
			break
		}
		n++
		u += unit
	}
	return n
}
