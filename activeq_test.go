package schedq

import (
	"math"
	"testing"
)

func activeEntry(key string, prio int32, ts int64) *entry[string, pod] {
	return &entry[string, pod]{key: key, prio: prio, ts: ts, loc: locActive}
}

// TestLazyActiveGenerationsWrap: 32-bit generations wrap, and a full
// rebuild every 2^31 pushes keeps a stale slot from living long enough to
// meet its entry's generation again.
func TestLazyActiveGenerationsWrap(t *testing.T) {
	a := newLazyActive[string, pod]()
	a.gen = math.MaxUint32 - 1
	x, y := activeEntry("x", 1, 1), activeEntry("y", 2, 2)
	a.Push(x) // gen MaxUint32
	a.Push(y) // wraps past 0, to 1
	if x.gen != math.MaxUint32 || y.gen != 1 {
		t.Fatalf("generations %d and %d", x.gen, y.gen)
	}
	y.prio = 0
	a.Fix(y) // leaves a stale slot
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	if a.stale != 1 {
		t.Fatalf("%d stale slots, want 1", a.stale)
	}
	a.pushes = 1<<31 - 1
	a.Push(activeEntry("z", 0, 3))
	if a.stale != 0 || a.h.Len() != 3 || a.pushes != 0 {
		t.Fatalf("after 2^31 pushes: %d stale, %d slots, %d pushes; want a rebuild", a.stale, a.h.Len(), a.pushes)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"x", "y", "z"} {
		e, ok := a.Pop()
		if !ok || e.key != want {
			t.Fatalf("Pop %v, want %s", e, want)
		}
		e.loc = locFlight
	}
}
