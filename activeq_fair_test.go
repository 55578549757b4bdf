package schedq

import (
	"fmt"
	"testing"
)

// TestFairActiveRenumbers: a tenant's slots keep 32-bit generations, so
// at the latest after 2^31 pushes every stale slot is dropped and the live
// items are numbered afresh from 1, in their old order: ties within a
// tenant and between tenants' heads still pop in push order, in the
// default order and under a caller's Less. (The pushes alternate between
// the tenants, so the charges keep the same order.)
func TestFairActiveRenumbers(t *testing.T) {
	byPrio := func(a, b *entry[string, job]) bool { return a.prio > b.prio }
	for _, custom := range []func(a, b *entry[string, job]) bool{nil, byPrio} {
		t.Run(fmt.Sprintf("custom=%v", custom != nil), func(t *testing.T) {
			f := newFairActive(Fairness[job]{Tenant: func(p job) string { return p.label }}, custom)
			item := func(key, tenant string) *entry[string, job] {
				e := activeEntry(key, 0, 0)
				e.Item = job{name: key, label: tenant}
				return e
			}
			var want []string
			push := func(e *entry[string, job]) {
				f.Push(e)
				want = append(want, e.key)
			}
			for _, k := range []string{"a1", "b1", "a2", "b2"} {
				push(item(k, k[:1]))
			}
			x := item("x", "a")
			push(x)
			f.Fix(x) // same keys: x re-enters behind its equals (stale slot in the default order)
			// As if 2^31 pushes had gone by with the others live throughout.
			f.gen, f.pushes = 1<<31+7, 1<<31-1
			push(item("b3", "b"))
			if err := f.Check(); err != nil {
				t.Fatal(err)
			}
			if f.pushes != 0 || f.gen != 6 {
				t.Fatalf("after 2^31 pushes: %d pushes, gen %d; want a renumbering 1..6", f.pushes, f.gen)
			}
			for _, tn := range f.tenants {
				if tn.stale != 0 || tn.h.size() != tn.live {
					t.Fatalf("tenant %q: %d stale of %d slots after the renumbering", tn.name, tn.stale, tn.h.size())
				}
			}
			for i, k := range want {
				e, ok := f.Pop()
				if !ok {
					t.Fatalf("pop %d: empty, want %s", i, k)
				}
				if e.key != k || e.gen != 0 {
					t.Fatalf("pop %d: %s (gen %d), want %s (gen 0)", i, e.key, e.gen, k)
				}
				e.loc = locNone
				f.charge(e, 1e9) // tenants alternate, as pushed
				if err := f.Check(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
