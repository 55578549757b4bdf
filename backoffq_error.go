package schedq

import (
	"fmt"

	"github.com/schedq/schedq/internal/heap"
)

// errorSlot is one element of the error backoff: the entry, its expiry
// (Unix ns) and the generation that says whether the slot is still the
// entry's live one.
type errorSlot[K comparable, T any] struct {
	exp int64
	gen uint32
	e   *entry[K, T]
}

// errorBackoff is the error backoff of backoffQ: entries ordered by expiry
// alone. An expiry is the failure's time plus a backoff that depends only
// on the item's count of errors, and time moves forward, so most entries
// arrive in expiry order. Those are appended to a run, a FIFO in expiry
// order, O(1) to push and to pop and read front to back; only the others
// go to a heap, O(log n). The front is the earlier of the two fronts.
//
// Removal is lazy, as in activeQ's lazyActive: a removed entry leaves its
// slot behind, stale by its generation (valid), which is dropped when it
// reaches a front, or by a rebuild once stale slots outnumber live ones.
// Removing the front drops it at once. So nothing is written into the
// entries as slots move, and a flush reads only the fronts. Generations
// share the entry's gen with activeQ's (an entry is in one place at a
// time, and validity checks the place too); a rebuild every 2^31 pushes
// numbers them afresh, so they never wrap. Not safe for concurrent use.
type errorBackoff[K comparable, T any] struct {
	run    []errorSlot[K, T] // in expiry order from head on
	head   int
	h      *heap.Heap[errorSlot[K, T]] // the slots that came out of order
	gen    uint32
	live   int
	stale  int
	pushes uint32 // since the last rebuild
	sink   uint64 // what warm loaded, kept so that the loads are made
}

func newErrorBackoff[K comparable, T any]() *errorBackoff[K, T] {
	return &errorBackoff[K, T]{h: heap.New(func(a, b errorSlot[K, T]) bool { return a.exp < b.exp }, nil)}
}

func (q *errorBackoff[K, T]) valid(s errorSlot[K, T]) bool {
	return s.e.loc == locBackoffError && s.e.gen == s.gen
}

// Len returns the number of entries. O(1).
func (q *errorBackoff[K, T]) Len() int { return q.live }

// Push adds e, whose BackoffExpiry is set. O(1) if it expires no earlier
// than the run's last slot, else O(log n).
func (q *errorBackoff[K, T]) Push(e *entry[K, T]) {
	q.gen++ // from 1: 0 is no slot's
	e.gen = q.gen
	s := errorSlot[K, T]{e.BackoffExpiry.UnixNano(), q.gen, e}
	if n := len(q.run); q.head == n || q.run[n-1].exp <= s.exp {
		q.append(s)
	} else {
		q.h.Push(s)
	}
	q.live++
	if q.pushes++; q.pushes == 1<<31 {
		q.rebuild()
	}
}

// append adds s at the run's end, first moving the run to the start of
// its array if more than half of it is popped. Amortized O(1).
func (q *errorBackoff[K, T]) append(s errorSlot[K, T]) {
	if q.head > 0 && q.head >= len(q.run)/2 {
		n := copy(q.run, q.run[q.head:])
		clear(q.run[n:])
		q.run, q.head = q.run[:n], 0
	}
	q.run = append(q.run, s)
}

// front returns the earlier of the two fronts, dropping stale slots on
// the way; fromRun says which one it is. Amortized O(log n).
func (q *errorBackoff[K, T]) front() (s errorSlot[K, T], fromRun, ok bool) {
	for {
		r, inRun := errorSlot[K, T]{}, q.head < len(q.run)
		if inRun {
			r = q.run[q.head]
		}
		t, inHeap := q.h.Peek()
		switch {
		case !inRun && !inHeap:
			return s, false, false
		case inRun && (!inHeap || r.exp <= t.exp):
			s, fromRun = r, true
		default:
			s, fromRun = t, false
		}
		if q.valid(s) {
			return s, fromRun, true
		}
		q.drop(fromRun)
		q.stale--
	}
}

// warm loads the entries of the run's next n slots (entry.warm), the
// ones a flush moves next unless the heap's front comes first. O(n).
func (q *errorBackoff[K, T]) warm(n int) {
	var x uint64
	for _, s := range q.run[q.head:min(q.head+n, len(q.run))] {
		x += s.e.warm()
	}
	q.sink += x
}

// drop removes the front of the run or of the heap.
func (q *errorBackoff[K, T]) drop(fromRun bool) {
	if !fromRun {
		q.h.Pop()
		return
	}
	q.run[q.head] = errorSlot[K, T]{}
	if q.head++; q.head == len(q.run) {
		q.run, q.head = q.run[:0], 0
	}
}

// Peek returns the entry that expires first. Amortized O(log n).
func (q *errorBackoff[K, T]) Peek() (*entry[K, T], bool) {
	s, _, ok := q.front()
	return s.e, ok
}

// Remove takes e out: at once if its slot heads the run or it is the
// front, else lazily. O(1) in the first case (a flush's), else amortized
// O(log n).
func (q *errorBackoff[K, T]) Remove(e *entry[K, T]) {
	q.live--
	if q.head < len(q.run) && q.run[q.head].e == e && q.run[q.head].gen == e.gen {
		q.drop(true) // e's live slot, wherever the front is
		return
	}
	if s, fromRun, ok := q.front(); ok && s.e == e {
		q.drop(fromRun)
		return
	}
	e.gen = 0 // its slot is stale from now on, whatever e.loc says
	q.stale++
	if q.stale > q.live+64 {
		q.rebuild()
	}
}

// rebuild drops every stale slot and numbers the live ones afresh from 1,
// keeping the run's order and restoring the heap's. O(n).
func (q *errorBackoff[K, T]) rebuild() {
	kept := q.run[:0]
	for _, s := range q.run[q.head:] {
		if q.valid(s) {
			kept = append(kept, s)
		}
	}
	clear(q.run[len(kept):])
	q.run, q.head = kept, 0
	q.h.Filter(q.valid)
	q.gen = 0
	renumber := func(s *errorSlot[K, T]) {
		q.gen++
		s.gen, s.e.gen = q.gen, q.gen
	}
	for i := range q.run {
		renumber(&q.run[i])
	}
	for i := range q.h.Len() {
		s := q.h.At(i)
		renumber(&s)
		q.h.Replace(i, s)
	}
	q.stale, q.pushes = 0, 0
}

// Each calls f for every entry, in no particular order. O(n).
func (q *errorBackoff[K, T]) Each(f func(*entry[K, T])) {
	for _, s := range q.run[q.head:] {
		if q.valid(s) {
			f(s.e)
		}
	}
	for i := range q.h.Len() {
		if s := q.h.At(i); q.valid(s) {
			f(s.e)
		}
	}
}

// Check verifies the run's order, the heap's order, the counts, and that
// each live slot holds its entry's expiry.
func (q *errorBackoff[K, T]) Check() error {
	live := 0
	check := func(where string, i int, s errorSlot[K, T]) error {
		if !q.valid(s) {
			return nil
		}
		live++
		if s.exp != s.e.BackoffExpiry.UnixNano() {
			return fmt.Errorf("backoffQ(error) %s[%d] key %v: expiry %d, the entry's %d", where, i, s.e.key, s.exp, s.e.BackoffExpiry.UnixNano())
		}
		return nil
	}
	for i := q.head; i < len(q.run); i++ {
		if i > q.head && q.run[i].exp < q.run[i-1].exp {
			return fmt.Errorf("backoffQ(error): run order broken at %d", i)
		}
		if err := check("run", i, q.run[i]); err != nil {
			return err
		}
	}
	for i := range q.h.Len() {
		if i > 0 && q.h.Less(i, heap.Parent(i)) {
			return fmt.Errorf("backoffQ(error): heap order broken at %d", i)
		}
		if err := check("heap", i, q.h.At(i)); err != nil {
			return err
		}
	}
	if total := len(q.run) - q.head + q.h.Len(); live != q.live || total-live != q.stale {
		return fmt.Errorf("backoffQ(error): %d live and %d stale slots, counted %d and %d", live, total-live, q.live, q.stale)
	}
	return nil
}
