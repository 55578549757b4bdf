package heap

import (
	"math/bits"
	"slices"
)

// Slot is an element of a SlotHeap: the sort keys of an item, copied so
// that comparisons never leave the heap's array, and a reference to the
// item that the heap carries but never reads. The keys are packed into
// one 128-bit number (hi, lo) that orders as the keys do: the priority
// inverted, then the timestamp with its sign bit flipped, then the
// generation. So a comparison is one subtraction with borrow, without a
// branch, and a slot stays at 24 bytes.
type Slot[R any] struct {
	hi, lo uint64
	Ref    R
}

// NewSlot returns the slot of ref with priority prio, timestamp ts and
// generation gen (the last tie-breaker; schedq: push order).
func NewSlot[R any](prio int32, ts int64, gen uint32, ref R) Slot[R] {
	u := uint64(ts) ^ 1<<63
	return Slot[R]{
		hi:  uint64(uint32(prio)^0x7fffffff)<<32 | u>>32,
		lo:  u<<32 | uint64(gen),
		Ref: ref,
	}
}

// Prio returns the slot's priority.
func (s *Slot[R]) Prio() int32 { return int32(uint32(s.hi>>32) ^ 0x7fffffff) }

// TS returns the slot's timestamp.
func (s *Slot[R]) TS() int64 { return int64((s.hi<<32 | s.lo>>32) ^ 1<<63) }

// Gen returns the slot's generation.
func (s *Slot[R]) Gen() uint32 { return uint32(s.lo) }

// SetGen changes the slot's generation.
func (s *Slot[R]) SetGen(gen uint32) { s.lo = s.lo&^0xffffffff | uint64(gen) }

// Before is the SlotHeap order: higher priority first, then earlier
// timestamp, then lower generation; as numbers, hi:lo below the other's.
func (a *Slot[R]) Before(b *Slot[R]) bool {
	_, borrow := bits.Sub64(a.lo, b.lo, 0)
	_, borrow = bits.Sub64(a.hi, b.hi, borrow)
	return borrow != 0
}

// SlotHeap is a 4-ary heap of Slots in one fixed order, higher Prio first,
// then earlier TS, then lower Gen, compiled in rather than called through a function
// value: it is the default activeQ order, the queue's hottest path. Heap
// is the general form, for any order. The zero value is an empty heap. It
// is not safe for concurrent use.
type SlotHeap[R any] struct {
	items []Slot[R]
}

// Len returns the number of slots. O(1).
func (h *SlotHeap[R]) Len() int { return len(h.items) }

// At returns the slot at index i, in heap (not sorted) order. O(1).
func (h *SlotHeap[R]) At(i int) Slot[R] { return h.items[i] }

// Less reports whether the slot at i orders before the slot at j. O(1).
func (h *SlotHeap[R]) Less(i, j int) bool { return h.items[i].Before(&h.items[j]) }

// Init replaces the heap's slots with items, in any order, and orders
// them (Floyd's construction): O(n) for n items. The heap owns items
// afterwards.
func (h *SlotHeap[R]) Init(items []Slot[R]) {
	h.items = items
	if len(items) < 2 {
		return
	}
	for i := (len(items) - 2) / arity; i >= 0; i-- {
		h.down(i)
	}
}

// Release empties the heap and returns its slots, in heap order, so that
// the caller can reuse the array (Init). O(1).
func (h *SlotHeap[R]) Release() []Slot[R] {
	s := h.items
	h.items = nil
	return s
}

// Push adds s. O(log n).
func (h *SlotHeap[R]) Push(s Slot[R]) {
	h.items = append(h.items, s)
	h.up(len(h.items)-1, s)
}

// Pop removes and returns the first slot. O(log n).
func (h *SlotHeap[R]) Pop() (Slot[R], bool) {
	n := len(h.items) - 1
	if n < 0 {
		return Slot[R]{}, false
	}
	top, last := h.items[0], h.items[n]
	h.items[n] = Slot[R]{}
	h.items = h.items[:n]
	if n > 0 {
		h.fillRoot(last)
	}
	return top, true
}

// fillRoot places x into the empty root, as Heap.fillRoot does: the hole
// walks down along the best children to a leaf, then x rises from there.
func (h *SlotHeap[R]) fillRoot(x Slot[R]) {
	items := h.items
	i := 0
	for {
		j, ok := h.bestChild(i)
		if !ok {
			break
		}
		items[i] = items[j]
		i = j
	}
	h.up(i, x)
}

// down lets the slot at i sink below the children that order before it.
func (h *SlotHeap[R]) down(i int) {
	items := h.items
	x := items[i]
	for {
		j, ok := h.bestChild(i)
		if !ok || !items[j].Before(&x) {
			break
		}
		items[i] = items[j]
		i = j
	}
	items[i] = x
}

// up places x at the hole i and lets it rise.
func (h *SlotHeap[R]) up(i int, x Slot[R]) {
	items := h.items
	for i > 0 {
		p := (i - 1) / arity
		if !x.Before(&items[p]) {
			break
		}
		items[i] = items[p]
		i = p
	}
	items[i] = x
}

// Each calls f on every slot, in heap (not sorted) order; after Filter,
// that is sorted order. f may change a slot's Ref, and its Gen only in a
// way that keeps the order of the slots (numbering them afresh in sorted
// order does). O(n).
func (h *SlotHeap[R]) Each(f func(*Slot[R])) {
	for i := range h.items {
		f(&h.items[i])
	}
}

// Filter keeps only the slots for which keep is true, and sorts them: a
// sorted array is a heap, and Each then visits the slots in order, so the
// caller can number them afresh without changing their order. It releases
// memory if most of it is now unused. O(n log n).
func (h *SlotHeap[R]) Filter(keep func(Slot[R]) bool) {
	kept := h.items[:0]
	for _, s := range h.items {
		if keep(s) {
			kept = append(kept, s)
		}
	}
	clear(h.items[len(kept):])
	slices.SortFunc(kept, func(a, b Slot[R]) int {
		switch {
		case a.Before(&b):
			return -1
		case b.Before(&a):
			return 1
		}
		return 0
	})
	h.items = shrunk(kept)
}

// bestChild returns the index of i's child that orders first, if i has
// children. With all four children, as at every level but the last, it
// picks by a tournament whose comparisons select rather than branch.
func (h *SlotHeap[R]) bestChild(i int) (int, bool) {
	items := h.items
	first := arity*i + 1
	if first+arity <= len(items) {
		c := items[first : first+arity : first+arity]
		j, k := 0, 2
		if c[1].Before(&c[0]) {
			j = 1
		}
		if c[3].Before(&c[2]) {
			k = 3
		}
		if c[k].Before(&c[j]) {
			j = k
		}
		return first + j, true
	}
	if first >= len(items) {
		return 0, false
	}
	j := first
	for c := first + 1; c < len(items); c++ {
		if items[c].Before(&items[j]) {
			j = c
		}
	}
	return j, true
}
