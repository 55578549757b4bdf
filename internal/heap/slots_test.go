package heap

import (
	"cmp"
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
	return cmp.Or(cmp.Compare(b.Prio, a.Prio), cmp.Compare(a.TS, b.TS), cmp.Compare(a.Gen, b.Gen))
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
			// Few priorities and timestamps, so that ties are common.
			s := Slot[int]{Prio: int32(r.IntN(5)), TS: int64(r.IntN(50)), Gen: uint32(step), Ref: step}
			h.Push(s)
			model = append(model, s)
		case op < 7:
			want := slices.MinFunc(model, slotOrder)
			got, ok := h.Pop()
			if !ok || got.Ref != want.Ref {
				t.Fatalf("step %d: Pop %+v, want prio %d ts %d", step, got, want.Prio, want.TS)
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
		h.Push(Slot[int]{TS: int64(i)})
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
