package schedq

import (
	"github.com/schedq/schedq/internal/backoff"
	"github.com/schedq/schedq/internal/heap"
)

// backoffSlot is one element of a backoff heap: the entry, with its
// backoff expiry (Unix ns) copied beside it, so that the comparisons of
// the error heap, and the window comparisons of the unschedulable heap,
// read the heap's array and not the entries, which at 100k items are out
// of cache.
type backoffSlot[K comparable, T any] struct {
	exp int64
	e   *entry[K, T]
}

// backoffHeap is a backoffQ heap: a 4-ary heap of backoffSlots. Push, Pop,
// Remove and Fix are O(log n); Len, At and Peek O(1). Not safe for
// concurrent use.
type backoffHeap[K comparable, T any] struct {
	h *heap.Heap[backoffSlot[K, T]]
}

// newBackoffHeap orders by expiry alone (the error heap, and the
// unschedulable heap without pop-from-backoff), or, with less, by the
// 1-second window of the expiry, then less, then the expiry.
func newBackoffHeap[K comparable, T any](less func(a, b *entry[K, T]) bool) *backoffHeap[K, T] {
	set := func(s backoffSlot[K, T], i int) { s.e.idx = int32(i) }
	if less == nil {
		return &backoffHeap[K, T]{heap.New(func(a, b backoffSlot[K, T]) bool { return a.exp < b.exp }, set)}
	}
	return &backoffHeap[K, T]{heap.New(func(a, b backoffSlot[K, T]) bool {
		if wa, wb := backoff.WindowOfNs(a.exp), backoff.WindowOfNs(b.exp); wa != wb {
			return wa < wb
		}
		if less(a.e, b.e) {
			return true
		}
		if less(b.e, a.e) {
			return false
		}
		return a.exp < b.exp
	}, set)}
}

func (b *backoffHeap[K, T]) Len() int              { return b.h.Len() }
func (b *backoffHeap[K, T]) At(i int) *entry[K, T] { return b.h.At(i).e }
func (b *backoffHeap[K, T]) Push(e *entry[K, T]) {
	b.h.Push(backoffSlot[K, T]{e.BackoffExpiry.UnixNano(), e})
}

func (b *backoffHeap[K, T]) Pop() (*entry[K, T], bool) {
	s, ok := b.h.Pop()
	return s.e, ok
}

func (b *backoffHeap[K, T]) Peek() (*entry[K, T], bool) {
	s, ok := b.h.Peek()
	return s.e, ok
}

func (b *backoffHeap[K, T]) Remove(i int) { b.h.Remove(i) }

// Each calls f for every entry, in heap (not sorted) order. O(n).
func (b *backoffHeap[K, T]) Each(f func(*entry[K, T])) {
	for i := range b.h.Len() {
		f(b.h.At(i).e)
	}
}

// Less reports whether the element at i orders before the element at j.
func (b *backoffHeap[K, T]) Less(i, j int) bool { return b.h.Less(i, j) }

// Fix restores the order after the entry at i changed (its priority; its
// expiry is read again).
func (b *backoffHeap[K, T]) Fix(i int) {
	s := b.h.At(i)
	b.h.Replace(i, backoffSlot[K, T]{s.e.BackoffExpiry.UnixNano(), s.e})
	b.h.Fix(i)
}
