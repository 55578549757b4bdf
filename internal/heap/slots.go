package heap

import "slices"

// Slot is an element of a SlotHeap: the sort keys of an item, copied so
// that comparisons never leave the heap's array, and a reference to the
// item that the heap carries but never reads.
type Slot[R any] struct {
	Prio int32
	Gen  uint32 // the last tie-breaker (schedq: the slot's generation, in push order)
	TS   int64
	Ref  R
}

// before is the SlotHeap order: higher Prio first, then earlier TS, then
// lower Gen.
func (a *Slot[R]) before(b *Slot[R]) bool {
	if a.Prio != b.Prio {
		return a.Prio > b.Prio
	}
	if a.TS != b.TS {
		return a.TS < b.TS
	}
	return a.Gen < b.Gen
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
func (h *SlotHeap[R]) Less(i, j int) bool { return h.items[i].before(&h.items[j]) }

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

// up places x at the hole i and lets it rise.
func (h *SlotHeap[R]) up(i int, x Slot[R]) {
	items := h.items
	for i > 0 {
		p := (i - 1) / arity
		if !x.before(&items[p]) {
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
		case a.before(&b):
			return -1
		case b.before(&a):
			return 1
		}
		return 0
	})
	h.items = shrunk(kept)
}

// bestChild returns the index of i's child that orders first, if i has
// children.
func (h *SlotHeap[R]) bestChild(i int) (int, bool) {
	items := h.items
	first := arity*i + 1
	if first >= len(items) {
		return 0, false
	}
	j := first
	for c := first + 1; c < first+arity && c < len(items); c++ {
		if items[c].before(&items[j]) {
			j = c
		}
	}
	return j, true
}
