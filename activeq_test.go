package schedq

import (
	"testing"
)

func activeEntry(key string, prio int32, ts int64) *entry[string, job] {
	return &entry[string, job]{key: key, prio: prio, ts: ts, loc: locActive}
}

// TestLazyActiveRenumbers: generations are 32 bits, so every rebuild (at
// the latest after 2^31 pushes) drops the stale slots and renumbers the
// live ones from 1; the counter never wraps, and a slot that stayed live
// through many pushes cannot meet its entry's next generation.
func TestLazyActiveRenumbers(t *testing.T) {
	a := newLazyActive[string, job]()
	x, y := activeEntry("x", 1, 1), activeEntry("y", 2, 2)
	a.Push(x)
	a.Push(y)
	y.prio = 0
	a.Fix(y) // leaves a stale slot
	if a.stale != 1 {
		t.Fatalf("%d stale slots, want 1", a.stale)
	}
	// As if 2^31 pushes had gone by with x live throughout.
	a.gen, a.pushes = 1<<31+7, 1<<31-1
	z := activeEntry("z", 0, 3)
	a.Push(z)
	if a.stale != 0 || a.h.Len() != 3 || a.pushes != 0 || a.gen != 3 {
		t.Fatalf("after 2^31 pushes: %d stale, %d slots, %d pushes, gen %d; want a rebuild numbering 1..3", a.stale, a.h.Len(), a.pushes, a.gen)
	}
	seen := map[uint32]bool{}
	for _, e := range []*entry[string, job]{x, y, z} {
		if e.gen < 1 || e.gen > 3 || seen[e.gen] {
			t.Fatalf("generation %d of %s after the rebuild", e.gen, e.key)
		}
		seen[e.gen] = true
	}
	// x's slot kept its place; re-keying it now leaves a stale slot that
	// no later generation can revive.
	x.prio = -1
	a.Fix(x)
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"y", "z", "x"} {
		e, ok := a.Pop()
		if !ok || e.key != want {
			t.Fatalf("Pop %v, want %s", e, want)
		}
		e.loc = locFlight
	}
	if _, ok := a.Pop(); ok {
		t.Fatal("popped a stale slot")
	}
}
