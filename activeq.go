package schedq

import (
	"fmt"

	"github.com/schedq/schedq/internal/heap"
)

// activeQueue is activeQ: a priority queue of entries. Two forms exist: one
// for a caller's Less, and a faster one for the default order.
type activeQueue[K comparable, T any] interface {
	Len() int
	Push(e *entry[K, T])
	Pop() (*entry[K, T], bool)
	Remove(e *entry[K, T])
	// Fix restores the order after e's sort keys changed.
	Fix(e *entry[K, T])
	// Each calls f for every entry, in no particular order.
	Each(f func(*entry[K, T]))
	// Check verifies the structure against the entries.
	Check() error
	// WarmFront loads the entry that Pop most likely returns next
	// (entry.warm), or does nothing.
	WarmFront()
}

// indexedActive orders entries with the caller's Less. Each entry records
// its heap index, so Remove and Fix are O(log n).
type indexedActive[K comparable, T any] struct {
	h *heap.Heap[*entry[K, T]]
}

func newIndexedActive[K comparable, T any](less func(a, b *entry[K, T]) bool) *indexedActive[K, T] {
	return &indexedActive[K, T]{h: heap.New(less, func(e *entry[K, T], i int) { e.idx = int32(i) })}
}

func (a *indexedActive[K, T]) Len() int                  { return a.h.Len() }
func (a *indexedActive[K, T]) Push(e *entry[K, T])       { a.h.Push(e) }
func (a *indexedActive[K, T]) Pop() (*entry[K, T], bool) { return a.h.Pop() }
func (a *indexedActive[K, T]) Remove(e *entry[K, T])     { a.h.Remove(int(e.idx)) }
func (a *indexedActive[K, T]) Fix(e *entry[K, T])        { a.h.Fix(int(e.idx)) }

func (a *indexedActive[K, T]) WarmFront() {}
func (a *indexedActive[K, T]) Each(f func(*entry[K, T])) {
	for i := range a.h.Len() {
		f(a.h.At(i))
	}
}

func (a *indexedActive[K, T]) Check() error {
	for i := range a.h.Len() {
		e := a.h.At(i)
		if e.loc != locActive || int(e.idx) != i {
			return fmt.Errorf("activeQ[%d] key %v: loc %d idx %d", i, e.key, e.loc, e.idx)
		}
		if i > 0 && a.h.Less(i, heap.Parent(i)) {
			return fmt.Errorf("activeQ: heap order broken at %d (key %v)", i, e.key)
		}
	}
	return nil
}

// lazyActive orders entries by cached priority, then timestamp (the default
// order), in a SlotHeap: each slot holds the entry's sort keys, so that
// comparisons never touch the entry's memory, and the generation that says
// whether the slot is still the entry's live one. Removal is lazy: a
// removed or re-keyed entry leaves a stale slot behind, which Pop skips
// and a rebuild drops once stale slots outnumber live ones. Nothing is
// written into entries while the heap moves slots, which keeps Pop within
// the heap's own array.
//
// Generations are 32 bits, to keep a slot at 24 bytes, so they must never
// wrap: two slots of one entry with the same number would both look live.
// Every rebuild drops the stale slots and numbers the live ones afresh
// from 1, and a rebuild comes at least every 2^31 pushes, so the counter
// stays below live + 2^31 (the queue would need 2^31 items in activeQ to
// reach 2^32).
type lazyActive[K comparable, T any] struct {
	h      heap.SlotHeap[*entry[K, T]]
	live   int
	stale  int
	gen    uint32
	pushes uint32 // since the last full rebuild
	sink   uint64 // what WarmFront loaded, kept so that the loads are made
}

type activeSlot[K comparable, T any] = heap.Slot[*entry[K, T]]

func newLazyActive[K comparable, T any]() *lazyActive[K, T] {
	return &lazyActive[K, T]{}
}

func (a *lazyActive[K, T]) valid(s activeSlot[K, T]) bool {
	return s.Ref.loc == locActive && s.Ref.gen == s.Gen()
}

func (a *lazyActive[K, T]) Len() int { return a.live }

func (a *lazyActive[K, T]) Push(e *entry[K, T]) {
	a.gen++ // from 1: 0 is no slot's
	e.gen = a.gen
	a.h.Push(heap.NewSlot(e.prio, e.ts, a.gen, e))
	a.live++
	if a.pushes++; a.pushes == 1<<31 {
		a.rebuild()
	}
}

func (a *lazyActive[K, T]) Pop() (*entry[K, T], bool) {
	for {
		n, ok := a.h.Pop()
		if !ok {
			return nil, false
		}
		if a.valid(n) {
			a.live--
			n.Ref.gen = 0
			return n.Ref, true
		}
		a.stale--
	}
}

// WarmFront loads the entry of the front slot, if any. O(1).
func (a *lazyActive[K, T]) WarmFront() {
	if a.h.Len() > 0 {
		a.sink += a.h.At(0).Ref.warmAll()
	}
}

func (a *lazyActive[K, T]) Remove(e *entry[K, T]) {
	e.gen = 0
	a.live--
	a.stale++
	a.compact()
}

func (a *lazyActive[K, T]) Fix(e *entry[K, T]) {
	a.stale++
	a.live--
	a.Push(e)
	a.compact()
}

// compact drops the stale slots once they outnumber the live ones.
func (a *lazyActive[K, T]) compact() {
	if a.stale <= a.live+64 {
		return
	}
	a.rebuild()
}

// rebuild drops every stale slot and renumbers the live ones from 1. O(n).
func (a *lazyActive[K, T]) rebuild() {
	a.h.Filter(a.valid)
	a.gen = 0
	a.h.Each(func(s *activeSlot[K, T]) {
		a.gen++
		s.SetGen(a.gen)
		s.Ref.gen = a.gen
	})
	a.stale = 0
	a.pushes = 0
}

func (a *lazyActive[K, T]) Each(f func(*entry[K, T])) {
	for i := range a.h.Len() {
		if n := a.h.At(i); a.valid(n) {
			f(n.Ref)
		}
	}
}

func (a *lazyActive[K, T]) Check() error {
	live := 0
	for i := range a.h.Len() {
		n := a.h.At(i)
		if i > 0 && a.h.Less(i, heap.Parent(i)) {
			return fmt.Errorf("activeQ: heap order broken at %d", i)
		}
		if !a.valid(n) {
			continue
		}
		live++
		if n.Prio() != n.Ref.prio || n.TS() != n.Ref.ts {
			return fmt.Errorf("activeQ: key %v has stale sort keys", n.Ref.key)
		}
	}
	if live != a.live || a.h.Len()-live != a.stale {
		return fmt.Errorf("activeQ: %d live and %d stale slots, counted %d and %d", live, a.h.Len()-live, a.live, a.stale)
	}
	return nil
}
