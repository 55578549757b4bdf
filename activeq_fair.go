package schedq

import (
	"fmt"

	"github.com/schedq/schedq/internal/heap"
)

// fairLink is an entry's place under fairness: its tenant (its live slot
// is entry.gen's, as in lazyActive).
type fairLink[K comparable, T any] struct {
	t *fairTenant[K, T]
}

// fairTenant is one tenant: its items in activeQ, in their own heap, and
// its usage.
type fairTenant[K comparable, T any] struct {
	name   string
	weight float64
	usage  float64 // stored scaled (see decay)
	norm   float64 // usage / weight, the key tenants are compared by
	h      fairItems[K, T]
	head   fairSlot[K, T] // h's top, which is always live, while live > 0
	live   int
	stale  int
	idx    int   // in fairActive.order, -1 when it has nothing in activeQ
	pops   int64 // pops charged, for metrics
}

// fairActive is activeQ under fairness (Config.Fairness). Each tenant
// keeps its items in a heap of its own, in the queue's order; the tenants
// with items wait in a heap ordered by their head item's priority, then
// their weighted usage, then their head item's arrival (or usage first,
// with BeforePriority). Pop takes the first tenant's head: O(log tenants
// + log items-in-tenant). Like lazyActive, removal is lazy: a removed or
// re-keyed item leaves a stale slot in its tenant's heap, dropped when it
// comes to the top or when stale slots outnumber live ones, and each
// tenant's top slot is kept live, so that the tenant heap orders by live
// heads. Tenants and their usage stay after their items leave, so that a
// tenant cannot shed its history by emptying its queue; a tenant with
// nothing in activeQ and almost no usage left is forgotten once forgotten
// ones could outnumber the rest.
type fairActive[K comparable, T any] struct {
	cfg     Fairness[T]
	custom  func(a, b *entry[K, T]) bool // the caller's Less, or nil
	tenants map[string]*fairTenant[K, T]
	order   *heap.Heap[*fairTenant[K, T]] // tenants with items in activeQ (tenantBefore)
	live    int
	gen     uint32 // the latest entry.gen given (see renumber)
	pushes  uint32 // since the last renumber
	decay   decay
	lastNow int64             // of the latest charge, for forgetting tenants
	pruneAt int               // tenant count that triggers forgetting
	rec     Recorder          // hears of pops; or nil
	popped  *entry[K, T]      // by the latest Pop, for charge
	refix   *fairTenant[K, T] // whose place Pop left for charge to fix

	scaleAt int64 // the decay step scaleOf last computed at
	scaled  float64
}

func newFairActive[K comparable, T any](cfg Fairness[T], custom func(a, b *entry[K, T]) bool) *fairActive[K, T] {
	f := &fairActive[K, T]{
		cfg:     cfg,
		custom:  custom,
		tenants: map[string]*fairTenant[K, T]{},
		decay:   decay{halfLife: float64(cfg.HalfLife)},
		pruneAt: 64,
	}
	f.order = heap.New(tenantBefore(cfg.BeforePriority, custom), func(t *fairTenant[K, T], i int) { t.idx = i })
	return f
}

// tenant returns the tenant called name, creating it if new.
func (f *fairActive[K, T]) tenant(name string) *fairTenant[K, T] {
	if t := f.tenants[name]; t != nil {
		return t
	}
	if len(f.tenants) >= f.pruneAt {
		f.prune()
	}
	t := &fairTenant[K, T]{name: name, weight: f.cfg.weight(name), idx: -1}
	if f.custom != nil {
		t.h.byLess = heap.New(byLessOrder(f.custom), func(e *entry[K, T], i int) { e.idx = int32(i) })
	}
	f.tenants[name] = t
	return t
}

// prune forgets the tenants that have nothing in activeQ and whose usage
// has decayed below a hundredth of a pop, and sets the next tenant count
// to prune at to twice what is left, so pruning costs O(1) amortized.
func (f *fairActive[K, T]) prune() {
	for name, t := range f.tenants {
		if t.live == 0 && f.usageAt(t, f.lastNow) < 0.01 {
			delete(f.tenants, name)
		}
	}
	f.pruneAt = 2*len(f.tenants) + 64
}

func (f *fairActive[K, T]) Len() int { return f.live }

// Push adds e to its tenant's heap. O(log items-in-tenant + log tenants).
func (f *fairActive[K, T]) Push(e *entry[K, T]) {
	t := f.tenant(f.cfg.Tenant(e.Item))
	f.gen++ // from 1: 0 is no slot's
	e.gen = f.gen
	e.ext().fair = fairLink[K, T]{t: t}
	s := heap.NewSlot(e.prio, e.ts, f.gen, e)
	t.h.push(s)
	t.live++
	f.live++
	if t.live == 1 || t.h.isTop(e) {
		t.head = s
		f.place(t)
	}
	if f.pushes++; f.pushes == 1<<31 {
		f.renumber()
	}
}

// place puts t in the tenant heap, or fixes its place there.
func (f *fairActive[K, T]) place(t *fairTenant[K, T]) {
	if t.idx < 0 {
		f.order.Push(t)
	} else {
		f.order.Fix(t.idx)
	}
}

// settle drops t's stale top slots so its top is live again, then fixes
// t's place in the tenant heap, or takes t out of it if it has nothing
// left in activeQ.
func (f *fairActive[K, T]) settle(t *fairTenant[K, T]) {
	if t.live == 0 {
		if t.stale > 0 {
			t.h.filter()
		}
		t.stale = 0
		t.head = fairSlot[K, T]{}
		if t.idx >= 0 {
			f.order.Remove(t.idx)
		}
		return
	}
	t.dropStale()
	t.head = t.h.at(0)
	f.place(t)
}

// Pop takes the head of the first tenant. O(log tenants + log items).
func (f *fairActive[K, T]) Pop() (*entry[K, T], bool) {
	if f.order.Len() == 0 {
		return nil, false
	}
	t := f.order.At(0)
	e := t.h.pop()
	e.gen = 0
	t.live--
	f.live--
	f.popped = e
	if t.live == 0 {
		f.settle(t)
		return e, true
	}
	// Core.Pop charges the tenant at once, which moves it anyway: settle
	// its head now, and leave its one fix to charge.
	t.dropStale()
	t.head = t.h.at(0)
	f.refix = t
	return e, true
}

// Remove leaves e's slot stale. O(log) amortized.
func (f *fairActive[K, T]) Remove(e *entry[K, T]) {
	t := e.more.fair.t
	wasHead := t.head.Ref == e // the head is live, and so is e's slot
	t.live--
	f.live--
	if t.h.byLess != nil {
		t.h.byLess.Remove(int(e.idx)) // eager under a custom order (see fairItems)
	} else {
		t.stale++
	}
	e.gen = 0
	if wasHead || t.live == 0 {
		f.settle(t)
		return
	}
	if t.stale > t.live+64 {
		t.h.filter()
		t.stale = 0
	}
}

// dropStale pops t's stale top slots, so that its top is live. O(log n)
// per slot dropped.
func (t *fairTenant[K, T]) dropStale() {
	for t.stale > 0 && !fairLive(t.h.slots.At(0)) { // no stale slots: the top is live
		t.h.pop()
		t.stale--
	}
}

// Fix moves e after its sort keys or its tenant changed: it re-enters
// behind its new equals.
func (f *fairActive[K, T]) Fix(e *entry[K, T]) {
	f.Remove(e)
	f.Push(e)
}

// WarmFront does nothing: which tenant pops next is not known in O(1).
func (f *fairActive[K, T]) WarmFront() {}

// Each calls fn for every entry in activeQ, tenant by tenant. O(n).
func (f *fairActive[K, T]) Each(fn func(*entry[K, T])) {
	for i := range f.order.Len() {
		t := f.order.At(i)
		for j := range t.h.size() {
			if s := t.h.at(j); fairLive(s) {
				fn(s.Ref)
			}
		}
	}
}

// charge charges e's tenant for popping it at now (Unix ns): the tenant
// Pop took it from, or, for an item popped from backoffQ, the tenant of
// its item. O(log tenants).
func (f *fairActive[K, T]) charge(e *entry[K, T], now int64) {
	t := e.fairOf().t
	if f.popped != e || t == nil {
		t = f.tenant(f.cfg.Tenant(e.Item))
	}
	f.popped = nil
	f.lastNow = now
	c := 1.0
	if f.cfg.Cost != nil {
		c = f.cfg.cost(e.Item)
	}
	t.usage += c * f.scaleOf(now)
	t.norm = t.usage / t.weight
	t.pops++
	if f.rec != nil {
		f.rec.Popped(t.name)
	}
	if r := f.refix; r != nil && r != t && r.idx >= 0 {
		f.order.Fix(r.idx)
	}
	f.refix = nil
	if t.idx >= 0 {
		f.order.Fix(t.idx)
	}
}

// scaleOf is decay.scale(now), computed once per decay step; past 2^64
// it rescales first (see decay).
func (f *fairActive[K, T]) scaleOf(now int64) float64 {
	if !f.decay.started {
		f.scaled = f.decay.scale(now)
		f.scaleAt = 0
		return f.scaled
	}
	if st := f.decay.step(now); st != f.scaleAt {
		if st > maxScaleExp*decaySteps {
			f.rescale(now)
			st = 0
		}
		f.scaled, f.scaleAt = f.decay.scale(now), st
	}
	return f.scaled
}

// rescale divides every stored usage by the scale at now and moves the
// decay's reference to now. Division by one factor keeps the order, but
// may turn a near-tie into a tie, so the tenant heap is rebuilt. O(tenants).
func (f *fairActive[K, T]) rescale(now int64) {
	s := f.decay.scale(now)
	for _, t := range f.tenants {
		t.usage /= s
		t.norm = t.usage / t.weight
	}
	f.decay.ref = now
	f.order.Heapify()
}

// usageAt returns t's usage decayed to now (Unix ns): what its pops cost,
// each halved per half-life since.
func (f *fairActive[K, T]) usageAt(t *fairTenant[K, T], now int64) float64 {
	if !f.decay.started {
		return 0
	}
	return t.usage / f.decay.scale(now)
}

// Check verifies the tenants' heaps, counts and heads, and the tenant heap.
func (f *fairActive[K, T]) Check() error {
	live := 0
	for name, t := range f.tenants {
		if t.name != name {
			return fmt.Errorf("fair activeQ: tenant %q filed under %q", t.name, name)
		}
		if err := f.checkTenant(t, name); err != nil {
			return err
		}
		if (t.live > 0) != (t.idx >= 0) || t.idx >= 0 && (t.idx >= f.order.Len() || f.order.At(t.idx) != t) {
			return fmt.Errorf("fair activeQ: tenant %q with %d items at index %d of the tenant heap", name, t.live, t.idx)
		}
		if t.live > 0 && (!fairLive(t.h.at(0)) || t.head != t.h.at(0)) {
			return fmt.Errorf("fair activeQ: tenant %q: its head is not its live top", name)
		}
		if t.norm != t.usage/t.weight {
			return fmt.Errorf("fair activeQ: tenant %q: key %v, usage/weight %v", name, t.norm, t.usage/t.weight)
		}
		live += t.live
	}
	if live != f.live {
		return fmt.Errorf("fair activeQ: %d live items, counted %d", live, f.live)
	}
	for i := 1; i < f.order.Len(); i++ {
		if f.order.Less(i, heap.Parent(i)) {
			return fmt.Errorf("fair activeQ: tenant heap order broken at %d", i)
		}
	}
	for i := range f.order.Len() {
		if t := f.order.At(i); f.tenants[t.name] != t {
			return fmt.Errorf("fair activeQ: tenant %q in the tenant heap is forgotten", t.name)
		}
	}
	return nil
}

// checkTenant verifies t's heap: its order, its live and stale counts,
// and that each live item is t's and has its sort keys.
func (f *fairActive[K, T]) checkTenant(t *fairTenant[K, T], name string) error {
	n := 0
	for i := range t.h.size() {
		if i > 0 && t.h.less(i, heap.Parent(i)) {
			return fmt.Errorf("fair activeQ: tenant %q: heap order broken at %d", name, i)
		}
		s := t.h.at(i)
		if !fairLive(s) {
			continue
		}
		n++
		e := s.Ref
		if f.custom != nil && int(e.idx) != i {
			return fmt.Errorf("fair activeQ: key %v at %d records index %d", e.key, i, e.idx)
		}
		if e.more.fair.t != t {
			return fmt.Errorf("fair activeQ: key %v in tenant %q's heap, linked to another", e.key, name)
		}
		if s.Prio() != e.prio || s.TS() != e.ts {
			return fmt.Errorf("fair activeQ: key %v has stale sort keys", e.key)
		}
		if want := f.cfg.Tenant(e.Item); want != name {
			return fmt.Errorf("fair activeQ: key %v of tenant %q is in tenant %q's heap", e.key, want, name)
		}
	}
	if n != t.live || t.h.size()-n != t.stale {
		return fmt.Errorf("fair activeQ: tenant %q: %d live and %d stale slots, counted %d and %d", name, n, t.h.size()-n, t.live, t.stale)
	}
	return nil
}
