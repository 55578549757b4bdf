package heap

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func checkSlots(t *testing.T, h *SlotHeap[int]) {
	t.Helper()
	for i := 1; i < h.Len(); i++ {
		if h.Less(i, Parent(i)) {
			t.Fatalf("slot heap order broken at %d", i)
		}
	}
}

// slotOrder is the SlotHeap order as a comparison, for the model.
func slotOrder(a, b Slot[int]) int {
	return cmp.Or(cmp.Compare(b.Prio(), a.Prio()), cmp.Compare(a.TS(), b.TS()), cmp.Compare(a.Gen(), b.Gen()))
}

var (
	prios  = []int32{math.MinInt32, -7, -1, 0, 1, 2, 3, 4, math.MaxInt32}
	stamps = []int64{math.MinInt64, -1 << 40, -1, 0, 1, 2, 49, 1 << 32, 1<<32 + 1, 1 << 62, math.MaxInt64}
)

// TestSlotKeys: a slot gives back the keys it was made with, a new
// generation leaves the others alone, and slots order as their keys do.
func TestSlotKeys(t *testing.T) {
	var all []Slot[int]
	for _, p := range prios {
		for _, ts := range stamps {
			for _, g := range []uint32{0, 1, math.MaxUint32} {
				s := NewSlot(p, ts, g, 0)
				if s.Prio() != p || s.TS() != ts || s.Gen() != g {
					t.Fatalf("NewSlot(%d, %d, %d) gives back %d, %d, %d", p, ts, g, s.Prio(), s.TS(), s.Gen())
				}
				s.SetGen(7)
				if s.Prio() != p || s.TS() != ts || s.Gen() != 7 {
					t.Fatalf("SetGen(7) on (%d, %d, %d) gives %d, %d, %d", p, ts, g, s.Prio(), s.TS(), s.Gen())
				}
				s.SetGen(g)
				all = append(all, s)
			}
		}
	}
	for _, a := range all {
		for _, b := range all {
			if got, want := a.Before(&b), slotOrder(a, b) < 0; got != want {
				t.Fatalf("(%d, %d, %d) before (%d, %d, %d): %v, want %v", a.Prio(), a.TS(), a.Gen(), b.Prio(), b.TS(), b.Gen(), got, want)
			}
		}
	}
}

// TestSlotHeapRandomOps checks SlotHeap against a sorted slice: Pop gives
// the highest priority, then the earliest timestamp, then the lowest Gen
// (so ties pop in push order), and Filter keeps exactly what it is told
// to, in order.
func TestSlotHeapRandomOps(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var h SlotHeap[int]
	var model []Slot[int]
	for step := range 20000 {
		switch op := r.IntN(8); {
		case op < 4 || len(model) == 0:
			// Few priorities and timestamps, so that ties are common,
			// and the extremes of each key.
			s := NewSlot(prios[r.IntN(len(prios))], stamps[r.IntN(len(stamps))], uint32(step), step)
			h.Push(s)
			model = append(model, s)
		case op < 7:
			want := slices.MinFunc(model, slotOrder)
			got, ok := h.Pop()
			if !ok || got.Ref != want.Ref {
				t.Fatalf("step %d: Pop %+v, want prio %d ts %d", step, got, want.Prio(), want.TS())
			}
			model = slices.DeleteFunc(model, func(s Slot[int]) bool { return s.Ref == got.Ref })
		default:
			odd := func(s Slot[int]) bool { return s.Ref%2 == 1 }
			h.Filter(odd)
			model = slices.DeleteFunc(model, func(s Slot[int]) bool { return !odd(s) })
			if !slices.IsSortedFunc(h.items, slotOrder) {
				t.Fatalf("step %d: Filter left the slots unsorted", step)
			}
		}
		checkSlots(t, &h)
		if h.Len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, h.Len(), len(model))
		}
	}
	for len(model) > 0 {
		want := slices.MinFunc(model, slotOrder)
		got, _ := h.Pop()
		if got.Ref != want.Ref {
			t.Fatalf("drain: Pop %+v, want %+v", got, want)
		}
		model = slices.DeleteFunc(model, func(s Slot[int]) bool { return s.Ref == got.Ref })
	}
	if _, ok := h.Pop(); ok {
		t.Fatal("Pop on an empty slot heap")
	}
}

func TestSlotHeapShrinks(t *testing.T) {
	var h SlotHeap[int]
	for i := range 10000 {
		h.Push(NewSlot(0, int64(i), 0, 0))
	}
	for range 9990 {
		h.Pop()
	}
	h.Filter(func(Slot[int]) bool { return true })
	if c := cap(h.items); c > 4096 {
		t.Fatalf("capacity %d kept after draining", c)
	}
	checkSlots(t, &h)
}

// TestSlotHeapInit: a heap built from slots in any order pops them in
// the SlotHeap order, for sizes around each level of the 4-ary tree, and
// Release hands back the slots not popped.
func TestSlotHeapInit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 4, 5, 6, 20, 21, 22, 85, 86, 300} {
		items := make([]Slot[int], n)
		for i := range items {
			items[i] = NewSlot(prios[r.IntN(len(prios))], stamps[r.IntN(len(stamps))], uint32(r.IntN(5)), i)
		}
		want := slices.Clone(items)
		slices.SortStableFunc(want, slotOrder)
		var h SlotHeap[int]
		h.Init(items)
		checkSlots(t, &h)
		for i := range n / 2 {
			got, ok := h.Pop()
			if !ok || slotOrder(got, want[i]) != 0 {
				t.Fatalf("n=%d: pop %d gave %v, want %v", n, i, got, want[i])
			}
			checkSlots(t, &h)
		}
		if rest := h.Release(); len(rest) != n-n/2 || h.Len() != 0 {
			t.Fatalf("n=%d: Release gave %d slots and left %d, want %d and 0", n, len(rest), h.Len(), n-n/2)
		}
	}
}
