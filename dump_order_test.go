package schedq

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// dumpKeyName is a key type with a String method, which Dump's order
// must use (fmt.Sprint calls it) where the underlying int would sort
// otherwise.
type dumpKeyName int

func (k dumpKeyName) String() string { return fmt.Sprintf("k%03d", 999-int(k)) }

// dumpKeyPair is a struct key, which only fmt can write.
type dumpKeyPair struct{ a, b int }

// TestDumpOrderIsByPlaceThenKeyText: Dump's sort writes each key's text
// its own way (strings and built-in integers without fmt) and moves the
// explanations in place; the order must be what sorting by place, then
// fmt.Sprint(key), gives, for every kind of key, and the summary must
// count each place. Keys are chosen so that the text's order is not the
// numbers' (10 before 9, -1 before -2).
func TestDumpOrderIsByPlaceThenKeyText(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, r *rand.Rand)
	}{
		{"int", func(t *testing.T, r *rand.Rand) { checkDumpOrder(t, r, func(i int) int { return i - 150 }) }},
		{"int64", func(t *testing.T, r *rand.Rand) {
			checkDumpOrder(t, r, func(i int) int64 { return int64(i)*7919 - 1e6 })
		}},
		{"int32", func(t *testing.T, r *rand.Rand) { checkDumpOrder(t, r, func(i int) int32 { return int32(i) - 30 }) }},
		{"uint", func(t *testing.T, r *rand.Rand) { checkDumpOrder(t, r, func(i int) uint { return uint(i) * 13 }) }},
		{"uint64", func(t *testing.T, r *rand.Rand) { checkDumpOrder(t, r, func(i int) uint64 { return uint64(i) << 40 }) }},
		{"uint32", func(t *testing.T, r *rand.Rand) { checkDumpOrder(t, r, func(i int) uint32 { return uint32(i) * 101 }) }},
		{"int16 through fmt", func(t *testing.T, r *rand.Rand) { checkDumpOrder(t, r, func(i int) int16 { return int16(i) - 100 }) }},
		{"string", func(t *testing.T, r *rand.Rand) {
			checkDumpOrder(t, r, func(i int) string { return fmt.Sprint("ns/pod-", i) })
		}},
		{"empty and long strings", func(t *testing.T, r *rand.Rand) {
			checkDumpOrder(t, r, func(i int) string { return string(make([]byte, i)) })
		}},
		{"named int with String", func(t *testing.T, r *rand.Rand) {
			checkDumpOrder(t, r, func(i int) dumpKeyName { return dumpKeyName(i) })
		}},
		{"struct", func(t *testing.T, r *rand.Rand) {
			checkDumpOrder(t, r, func(i int) dumpKeyPair { return dumpKeyPair{i % 7, -i} })
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, rand.New(rand.NewPCG(7, 7)))
		})
	}
}

// checkDumpOrder fills a dump with 300 items of keys key(0..299) in a
// shuffled order, at random places, and checks finish against sorting
// by place then fmt.Sprint(key), item by item, and the summary's counts.
func checkDumpOrder[K comparable](t *testing.T, r *rand.Rand, key func(int) K) {
	t.Helper()
	const n = 300
	var d Dump[K]
	for _, i := range r.Perm(n) {
		d.Items = append(d.Items, Explanation[K]{
			Key:      key(i),
			Location: InActive + Location(r.IntN(int(InPending))),
			Since:    time.Unix(int64(r.IntN(1000)), 0),
			Reason:   fmt.Sprint("item ", i), // tells the items apart if keys move without their explanations
		})
	}
	want := slices.Clone(d.Items)
	slices.SortFunc(want, func(a, b Explanation[K]) int {
		return cmp.Or(cmp.Compare(a.Location, b.Location), cmp.Compare(fmt.Sprint(a.Key), fmt.Sprint(b.Key)))
	})
	d.finish()
	for i := range want {
		if d.Items[i].Key != want[i].Key || d.Items[i].Location != want[i].Location || d.Items[i].Reason != want[i].Reason {
			t.Fatalf("item %d: %v in %v (%s), want %v in %v (%s)", i,
				d.Items[i].Key, d.Items[i].Location, d.Items[i].Reason, want[i].Key, want[i].Location, want[i].Reason)
		}
	}
	if len(d.Summary) != int(InPending) {
		t.Fatalf("%d summaries, want one a place (%d)", len(d.Summary), InPending)
	}
	for _, s := range d.Summary {
		count, oldest := 0, time.Time{}
		for _, x := range want {
			if x.Location == s.Location {
				count++
				if oldest.IsZero() || x.Since.Before(oldest) {
					oldest = x.Since
				}
			}
		}
		if s.Count != count || !s.Oldest.Equal(oldest) {
			t.Errorf("%v: %d items, oldest %v; want %d, %v", s.Location, s.Count, s.Oldest, count, oldest)
		}
	}
}
