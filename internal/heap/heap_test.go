package heap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type elem struct {
	v   int
	idx int
}

func newIntHeap() *Heap[*elem] {
	return New(func(a, b *elem) bool { return a.v < b.v }, func(e *elem, i int) { e.idx = i })
}

func check(t *testing.T, h *Heap[*elem]) {
	t.Helper()
	for i := range h.Len() {
		if h.At(i).idx != i {
			t.Fatalf("element at %d records index %d", i, h.At(i).idx)
		}
		if i > 0 && h.Less(i, Parent(i)) {
			t.Fatalf("heap order broken at %d", i)
		}
	}
}

func TestHeapRandomOps(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := newIntHeap()
	var live []*elem
	for step := range 20000 {
		switch op := r.IntN(4); {
		case op == 0 || len(live) == 0:
			e := &elem{v: r.IntN(1000)}
			h.Push(e)
			live = append(live, e)
		case op == 1:
			min := slices.MinFunc(live, func(a, b *elem) int { return a.v - b.v })
			e, ok := h.Pop()
			if !ok || e.v != min.v || e.idx != -1 {
				t.Fatalf("step %d: Pop %v (idx %d), want value %d", step, e.v, e.idx, min.v)
			}
			live = slices.DeleteFunc(live, func(x *elem) bool { return x == e })
		case op == 2:
			i := r.IntN(len(live))
			e := live[i]
			if got := h.Remove(e.idx); got != e || e.idx != -1 {
				t.Fatalf("step %d: Remove returned another element", step)
			}
			live = slices.Delete(live, i, i+1)
		default:
			e := live[r.IntN(len(live))]
			e.v = r.IntN(1000)
			h.Fix(e.idx)
		}
		check(t, h)
		if h.Len() != len(live) {
			t.Fatalf("len %d, want %d", h.Len(), len(live))
		}
	}
}

func TestHeapEmpty(t *testing.T) {
	h := newIntHeap()
	if _, ok := h.Pop(); ok {
		t.Fatal("Pop on empty heap")
	}
	if _, ok := h.Peek(); ok {
		t.Fatal("Peek on empty heap")
	}
}

func TestHeapShrinks(t *testing.T) {
	h := newIntHeap()
	for i := range 10000 {
		h.Push(&elem{v: i})
	}
	for range 9990 {
		h.Pop()
	}
	h.Filter(func(*elem) bool { return true })
	if c := cap(h.items); c > 4096 {
		t.Fatalf("capacity %d kept after draining", c)
	}
	check(t, h)
}
