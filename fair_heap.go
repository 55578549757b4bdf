package schedq

// fairSlot is an item in its tenant's heap: the item's sort keys, copied so
// that the default order compares without touching the entry, and the
// stamp that says whether the slot is still the entry's live one (stamps
// are unique for the queue's life, so a stale slot can never look live).
type fairSlot[K comparable, T any] struct {
	prio  int32
	ts    int64
	stamp uint64
	e     *entry[K, T]
}

// live reports whether s is its entry's current place in activeQ.
func (s *fairSlot[K, T]) live() bool {
	return s.e.loc == locActive && s.e.more.fair.stamp == s.stamp
}

// slotHeap is a 4-ary min-heap of one tenant's slots. With custom nil it
// orders by the default order (higher prio, earlier ts, lower stamp),
// compiled in, and removal is lazy (see fairActive). With custom set it
// orders by custom, then stamp; since custom reads the entries, whose
// items change, a stale slot could compare differently over time, so
// removal is eager instead: each entry records its index (entry.idx). Not
// safe for concurrent use.
type slotHeap[K comparable, T any] struct {
	items  []fairSlot[K, T]
	custom func(a, b *entry[K, T]) bool
}

// before reports whether a orders before b.
func (h *slotHeap[K, T]) before(a, b *fairSlot[K, T]) bool {
	if h.custom != nil {
		if h.custom(a.e, b.e) {
			return true
		}
		return !h.custom(b.e, a.e) && a.stamp < b.stamp
	}
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	return a.stamp < b.stamp
}

func (h *slotHeap[K, T]) len() int { return len(h.items) }

// push adds s. O(log n).
func (h *slotHeap[K, T]) push(s fairSlot[K, T]) {
	h.items = append(h.items, s)
	h.up(len(h.items)-1, s)
}

// pop removes the first slot. O(log n).
func (h *slotHeap[K, T]) pop() fairSlot[K, T] {
	n := len(h.items) - 1
	top, last := h.items[0], h.items[n]
	h.items[n] = fairSlot[K, T]{}
	h.items = h.items[:n]
	if n > 0 {
		h.down(0, last)
	}
	return top
}

// removeAt removes the slot at index i (custom order only, where entries
// know their index). O(log n).
func (h *slotHeap[K, T]) removeAt(i int) {
	n := len(h.items) - 1
	last := h.items[n]
	h.items[n] = fairSlot[K, T]{}
	h.items = h.items[:n]
	if i == n {
		return
	}
	if j := h.down(i, last); j == i {
		h.up(i, last)
	}
}

// place records slot i's index in its entry, under a custom order.
func (h *slotHeap[K, T]) place(i int) {
	if h.custom != nil {
		h.items[i].e.idx = int32(i)
	}
}

// up places x at the hole i and lets it rise.
func (h *slotHeap[K, T]) up(i int, x fairSlot[K, T]) {
	for i > 0 {
		p := (i - 1) / 4
		if !h.before(&x, &h.items[p]) {
			break
		}
		h.items[i] = h.items[p]
		h.place(i)
		i = p
	}
	h.items[i] = x
	h.place(i)
}

// down places x at the hole i and lets it sink; it returns where x went.
func (h *slotHeap[K, T]) down(i int, x fairSlot[K, T]) int {
	n := len(h.items)
	for {
		first := 4*i + 1
		if first >= n {
			break
		}
		j := first
		for c := first + 1; c < first+4 && c < n; c++ {
			if h.before(&h.items[c], &h.items[j]) {
				j = c
			}
		}
		if !h.before(&h.items[j], &x) {
			break
		}
		h.items[i] = h.items[j]
		h.place(i)
		i = j
	}
	h.items[i] = x
	h.place(i)
	return i
}

// filter keeps the live slots and restores the heap order. O(n).
func (h *slotHeap[K, T]) filter() {
	kept := h.items[:0]
	for _, s := range h.items {
		if s.live() {
			kept = append(kept, s)
		}
	}
	clear(h.items[len(kept):])
	h.items = kept
	for i := len(kept)/4 + 1; i >= 0; i-- {
		if i < len(kept) {
			h.down(i, kept[i])
		}
	}
}

// tenantBefore returns the order of the tenants with items in activeQ:
// by their head items' priority (unless beforePriority), then usage over
// weight, then the head items' order.
func tenantBefore[K comparable, T any](beforePriority bool) func(a, b *fairTenant[K, T]) bool {
	return func(a, b *fairTenant[K, T]) bool {
		if !beforePriority && a.head.prio != b.head.prio {
			return a.head.prio > b.head.prio
		}
		if a.norm != b.norm {
			return a.norm < b.norm
		}
		return a.h.before(&a.head, &b.head)
	}
}
