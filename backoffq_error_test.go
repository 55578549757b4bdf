package schedq

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestErrorBackoffOrder drives the error backoff with expiries mostly in
// order (the run) and some out of order (the heap), removes entries at
// the front and elsewhere (lazily), and checks after every step that the
// front is the earliest expiry left and that the structure is consistent,
// through the rebuilds that many removals cause.
func TestErrorBackoffOrder(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		q := newErrorBackoff[int, int]()
		in := map[*entry[int, int]]bool{}
		var list []*entry[int, int] // the entries in, to pick from by seed
		clock := int64(0)
		next := 0
		check := func(step int) {
			t.Helper()
			if err := q.Check(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			if q.Len() != len(in) {
				t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, q.Len(), len(in))
			}
			e, ok := q.Peek()
			if ok != (len(in) > 0) {
				t.Fatalf("seed %d step %d: Peek ok %v with %d entries", seed, step, ok, len(in))
			}
			for x := range in {
				if x.BackoffExpiry.Before(e.BackoffExpiry) {
					t.Fatalf("seed %d step %d: front expires at %v, key %d at %v", seed, step, e.BackoffExpiry, x.key, x.BackoffExpiry)
				}
			}
			seen := 0
			q.Each(func(x *entry[int, int]) {
				if !in[x] {
					t.Fatalf("seed %d step %d: Each visits key %d, not in", seed, step, x.key)
				}
				seen++
			})
			if seen != len(in) {
				t.Fatalf("seed %d step %d: Each visits %d, want %d", seed, step, seen, len(in))
			}
		}
		remove := func(e *entry[int, int]) {
			q.Remove(e)
			e.loc = locNone // as Core.unlink does
			delete(in, e)
			for i, x := range list {
				if x == e {
					list[i] = list[len(list)-1]
					list = list[:len(list)-1]
					break
				}
			}
		}
		for step := range 3000 {
			switch op := r.IntN(10); {
			case op < 5: // push, now and then out of order
				clock += int64(r.IntN(3))
				exp := clock + int64(time.Second)
				if r.IntN(4) == 0 {
					exp -= int64(r.IntN(int(time.Second)))
				}
				e := &entry[int, int]{key: next, loc: locBackoffError}
				e.BackoffExpiry = time.Unix(0, exp)
				next++
				q.Push(e)
				in[e] = true
				list = append(list, e)
			case op < 7 && len(in) > 0: // the flush takes the front
				e, _ := q.Peek()
				remove(e)
			case op == 9 && r.IntN(20) == 0: // stale slots pile up behind the front: a rebuild
				for range 150 {
					clock++
					e := &entry[int, int]{key: next, loc: locBackoffError}
					e.BackoffExpiry = time.Unix(0, clock+int64(time.Second))
					next++
					q.Push(e)
					in[e] = true
					list = append(list, e)
				}
				for range 140 {
					remove(list[len(list)-1])
					check(step)
				}
			case len(in) > 0: // a delete, anywhere
				remove(list[r.IntN(len(list))])
			}
			check(step)
		}
	}
}

// TestErrorBackoffRenumbers: the 2^31st push since the last rebuild
// numbers the live slots afresh from 1, so that generations never wrap,
// and the order and the stale slots' staleness survive it.
func TestErrorBackoffRenumbers(t *testing.T) {
	q := newErrorBackoff[int, int]()
	var es []*entry[int, int]
	for i := range 10 {
		e := &entry[int, int]{key: i, loc: locBackoffError}
		e.BackoffExpiry = time.Unix(0, int64(10-i)) // out of order after the first
		es = append(es, e)
	}
	for _, e := range es[:9] {
		q.Push(e)
	}
	q.Remove(es[3])
	es[3].loc = locNone
	q.gen, q.pushes = 1<<32-5, 1<<31-1
	q.Push(es[9])
	if q.pushes != 0 || q.gen != 9 || q.stale != 0 {
		t.Fatalf("after the rebuild: pushes %d, gen %d, stale %d; want 0, 9, 0", q.pushes, q.gen, q.stale)
	}
	if err := q.Check(); err != nil {
		t.Fatal(err)
	}
	for want := 9; want >= 0; want-- {
		if want == 3 {
			continue
		}
		e, ok := q.Peek()
		if !ok || e.key != want {
			t.Fatalf("front %v (ok %v), want key %d", e, ok, want)
		}
		q.Remove(e)
		e.loc = locNone
	}
	if q.Len() != 0 {
		t.Fatalf("Len %d after all removed", q.Len())
	}
}
