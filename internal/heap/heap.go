// Package heap is schedq's one 4-ary heap, in two forms: SlotHeap, whose
// order (higher priority, earlier timestamp, lower generation) is
// compiled in over keys packed into its 24-byte slots, and Heap, ordered
// by any function, whose elements may record their own position. Both
// are 4-ary min-heaps with the same costs: Push, Pop, Remove and Fix
// O(log n); Len, At and Peek O(1); Filter, Heapify and SlotHeap's Init
// O(n) (SlotHeap's Filter sorts, O(n log n)). Neither is safe for
// concurrent use.
//
// There are two forms because a type parameter's method is called through
// a dictionary and never inlined: one generic heap for all orders made
// the default activeQ order, the queue's hottest path, a third to twice
// as slow. SlotHeap serves activeQ and each tenant's items under
// fairness in the default order, and the wake budget's deferred items in
// pop order (ClassBudget); Heap serves a caller's Less there, the backoff
// heaps and the heap of tenants.
//
// Heap is the ordered half of schedq's keyed heap: the queue keeps one
// map from key to element, and each element stores the index the heap
// gives it, so that lookup is O(1) through the map and Fix and Remove are
// O(log n) without a second map.
package heap

// Heap is a 4-ary min-heap under Less: the element for which Less is true against
// every other element is at the top. The zero value is not usable; call New.
type Heap[E any] struct {
	items    []E
	less     func(a, b E) bool
	setIndex func(e E, i int)
}

// New returns an empty heap ordered by less. setIndex, if not nil, is called
// whenever an element moves, with its new index, and with -1 when it leaves
// the heap.
func New[E any](less func(a, b E) bool, setIndex func(e E, i int)) *Heap[E] {
	return &Heap[E]{less: less, setIndex: setIndex}
}

// place tells an element its index, if the heap was asked to.
func (h *Heap[E]) place(e E, i int) {
	if h.setIndex != nil {
		h.setIndex(e, i)
	}
}

// Filter keeps only the elements for which keep is true and restores the
// heap order. O(n).
func (h *Heap[E]) Filter(keep func(E) bool) {
	kept := h.items[:0]
	for _, e := range h.items {
		if keep(e) {
			kept = append(kept, e)
		} else {
			h.place(e, -1)
		}
	}
	var zero E
	for i := len(kept); i < len(h.items); i++ {
		h.items[i] = zero
	}
	h.items = kept
	for i, e := range h.items {
		h.place(e, i)
	}
	h.Heapify()
	h.shrink()
}

// Heapify restores the heap order after the keys of any number of
// elements changed. O(n).
func (h *Heap[E]) Heapify() {
	for i := len(h.items)/arity + 1; i >= 0; i-- {
		if i < len(h.items) {
			h.down(i)
		}
	}
}

// Len returns the number of elements. O(1).
func (h *Heap[E]) Len() int { return len(h.items) }

// At returns the element at index i, in heap (not sorted) order. O(1).
func (h *Heap[E]) At(i int) E { return h.items[i] }

// Peek returns the top element without removing it. O(1).
func (h *Heap[E]) Peek() (E, bool) {
	if len(h.items) == 0 {
		var zero E
		return zero, false
	}
	return h.items[0], true
}

// Push adds e. O(log n).
func (h *Heap[E]) Push(e E) {
	h.items = append(h.items, e)
	i := len(h.items) - 1
	h.place(e, i)
	h.up(i)
}

// Pop removes and returns the top element. O(log n).
func (h *Heap[E]) Pop() (E, bool) {
	if len(h.items) == 0 {
		var zero E
		return zero, false
	}
	return h.Remove(0), true
}

// Remove removes and returns the element at index i. O(log n).
func (h *Heap[E]) Remove(i int) E {
	n := len(h.items) - 1
	e := h.items[i]
	last := h.items[n]
	var zero E
	h.items[n] = zero
	h.items = h.items[:n]
	if i != n {
		if i == 0 {
			h.fillRoot(last)
		} else {
			h.items[i] = last
			h.place(last, i)
			if !h.down(i) {
				h.up(i)
			}
		}
	}
	h.place(e, -1)
	return e
}

// fillRoot places x into the empty root. Like bottom-up heapsort, it first
// walks the hole down along the best children to a leaf, comparing only
// children with each other, then lets x rise from there: x came from the
// bottom, so it rarely rises far, and this saves a comparison per level.
func (h *Heap[E]) fillRoot(x E) {
	i := 0
	for {
		j, ok := h.bestChild(i)
		if !ok {
			break
		}
		h.items[i] = h.items[j]
		h.place(h.items[i], i)
		i = j
	}
	h.rise(i, x)
}

// Replace puts e at i in place of the element there, without restoring
// the order: call Fix(i) next if the order may have changed. O(1).
func (h *Heap[E]) Replace(i int, e E) {
	h.items[i] = e
	h.place(e, i)
}

// Fix restores the order after the element at index i changed. O(log n).
func (h *Heap[E]) Fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

// Less reports whether the element at i orders before the element at j.
func (h *Heap[E]) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }

// shrink releases the backing array when the heap holds less than a quarter
// of its capacity, so that a burst does not pin its peak memory for ever.
// Only Filter calls it: shrinking on Pop would reallocate at every cycle of
// a queue that fills and drains.
func (h *Heap[E]) shrink() { h.items = shrunk(h.items) }

// shrunk returns items, in a smaller array if it fills less than a quarter
// of its capacity.
func shrunk[E any](items []E) []E {
	if c := cap(items); c > 1024 && len(items) < c/4 {
		return append(make([]E, 0, max(2*len(items), 64)), items...)
	}
	return items
}

// The heap is 4-ary: half the depth of a binary heap, so fewer swaps, each
// of which touches an element's memory to record its index.
const arity = 4

func (h *Heap[E]) up(j int) { h.rise(j, h.items[j]) }

// rise places x at the hole j and lets it rise.
func (h *Heap[E]) rise(j int, x E) {
	for j > 0 {
		i := (j - 1) / arity
		if !h.less(x, h.items[i]) {
			break
		}
		h.items[j] = h.items[i]
		h.place(h.items[j], j)
		j = i
	}
	h.items[j] = x
	h.place(x, j)
}

// down sifts the element at i0 down and reports whether it moved.
func (h *Heap[E]) down(i0 int) bool {
	x := h.items[i0]
	i := i0
	for {
		j, ok := h.bestChild(i)
		if !ok || !h.less(h.items[j], x) {
			break
		}
		h.items[i] = h.items[j]
		h.place(h.items[i], i)
		i = j
	}
	h.items[i] = x
	h.place(x, i)
	return i > i0
}

// bestChild returns the index of i's child that orders first, if i has
// children.
func (h *Heap[E]) bestChild(i int) (int, bool) {
	n := len(h.items)
	first := arity*i + 1
	if first >= n || first < 0 {
		return 0, false
	}
	j := first
	for c := first + 1; c < first+arity && c < n; c++ {
		if h.less(h.items[c], h.items[j]) {
			j = c
		}
	}
	return j, true
}

// Parent returns the index of i's parent; i must be positive.
func Parent(i int) int { return (i - 1) / arity }
