package schedq

import (
	"cmp"
	"slices"

	"github.com/schedq/schedq/internal/heap"
)

// fairSlot is an item in its tenant's heap, in internal/heap's packed
// form: the item's priority and timestamp, and its entry's generation
// (entry.gen, from fairActive's counter), the last tie-breaker and what
// says whether the slot is still the entry's live one.
type fairSlot[K comparable, T any] = heap.Slot[*entry[K, T]]

// fairLive reports whether s is its entry's current place in activeQ.
func fairLive[K comparable, T any](s fairSlot[K, T]) bool {
	return s.Ref.loc == locActive && s.Ref.gen == s.Gen()
}

// fairItems is one tenant's items in activeQ, in one of internal/heap's
// two heaps. In the default order (byLess nil) they are slots in a
// SlotHeap, the order compiled in, and removal is lazy (see fairActive).
// Under the caller's Less they are entries in a Heap ordered by Less,
// then generation; since Less reads the entries, whose items change, a
// stale slot could compare differently over time, so removal is eager
// instead: each entry records its index (entry.idx). Not safe for
// concurrent use.
type fairItems[K comparable, T any] struct {
	slots  heap.SlotHeap[*entry[K, T]]
	byLess *heap.Heap[*entry[K, T]]
}

// size returns the number of slots, stale ones included. O(1).
func (h *fairItems[K, T]) size() int {
	if h.byLess != nil {
		return h.byLess.Len()
	}
	return h.slots.Len()
}

// at returns the slot at index i, in heap order. O(1).
func (h *fairItems[K, T]) at(i int) fairSlot[K, T] {
	if h.byLess != nil {
		e := h.byLess.At(i)
		return heap.NewSlot(e.prio, e.ts, e.gen, e)
	}
	return h.slots.At(i)
}

// push adds s. O(log n).
func (h *fairItems[K, T]) push(s fairSlot[K, T]) {
	if h.byLess != nil {
		h.byLess.Push(s.Ref)
		return
	}
	h.slots.Push(s)
}

// pop removes the first slot and returns its entry. O(log n).
func (h *fairItems[K, T]) pop() *entry[K, T] {
	if h.byLess != nil {
		e, _ := h.byLess.Pop()
		return e
	}
	s, _ := h.slots.Pop()
	return s.Ref
}

// isTop reports whether e's live slot is the first. O(1).
func (h *fairItems[K, T]) isTop(e *entry[K, T]) bool {
	if h.byLess != nil {
		return e.idx == 0
	}
	s := h.slots.At(0)
	return s.Ref == e && s.Gen() == e.gen
}

// less reports whether the slot at i orders before the one at j. O(1).
func (h *fairItems[K, T]) less(i, j int) bool {
	if h.byLess != nil {
		return h.byLess.Less(i, j)
	}
	return h.slots.Less(i, j)
}

// filter keeps the live slots of the default order. O(n log n).
func (h *fairItems[K, T]) filter() { h.slots.Filter(fairLive[K, T]) }

// byLessOrder is the order of a tenant's heap under the caller's Less:
// Less, then generation (entry order).
func byLessOrder[K comparable, T any](custom func(a, b *entry[K, T]) bool) func(a, b *entry[K, T]) bool {
	return func(a, b *entry[K, T]) bool {
		if custom(a, b) {
			return true
		}
		return !custom(b, a) && a.gen < b.gen
	}
}

// renumber drops every stale slot and numbers the live items afresh from
// 1, in their generations' order: every heap keeps its order, and so do
// ties between tenants' heads. It comes at least every 2^31 pushes, so
// generations, 32 bits to keep a slot at 24 bytes, never wrap (as in
// lazyActive). O(n log n).
func (f *fairActive[K, T]) renumber() {
	all := make([]*entry[K, T], 0, f.live)
	for i := range f.order.Len() {
		t := f.order.At(i)
		if t.stale > 0 {
			t.h.filter()
			t.stale = 0
		}
		for j := range t.h.size() {
			all = append(all, t.h.at(j).Ref)
		}
	}
	slices.SortFunc(all, func(a, b *entry[K, T]) int { return cmp.Compare(a.gen, b.gen) })
	for i, e := range all {
		e.gen = uint32(i + 1)
	}
	for i := range f.order.Len() {
		t := f.order.At(i)
		t.h.slots.Each(func(s *fairSlot[K, T]) { s.SetGen(s.Ref.gen) })
		t.head.SetGen(t.head.Ref.gen)
	}
	f.gen, f.pushes = uint32(len(all)), 0
}

// tenantBefore returns the order of the tenants with items in activeQ:
// by their head items' priority (unless beforePriority), then usage over
// weight, then the head items' order (custom's, if not nil).
func tenantBefore[K comparable, T any](beforePriority bool, custom func(a, b *entry[K, T]) bool) func(a, b *fairTenant[K, T]) bool {
	var less func(a, b *entry[K, T]) bool
	if custom != nil {
		less = byLessOrder(custom)
	}
	return func(a, b *fairTenant[K, T]) bool {
		if !beforePriority {
			if pa, pb := a.head.Prio(), b.head.Prio(); pa != pb {
				return pa > pb
			}
		}
		if a.norm != b.norm {
			return a.norm < b.norm
		}
		if less != nil {
			return less(a.head.Ref, b.head.Ref)
		}
		return a.head.Before(&b.head)
	}
}
