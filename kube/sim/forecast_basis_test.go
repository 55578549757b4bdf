package sim

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestBasisCountsTheEndsUpTo: the prefix counts give, for any instant,
// the counts per source of the ends at or before it, as counting them
// one by one does; ties at the instant count, an unlisted source does
// not, and nothing gives nil.
func TestBasisCountsTheEndsUpTo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	srcs := append([]string{"other"}, sources...)
	for round := range 50 {
		var ends []sourcedEnd
		at := epoch
		for range r.IntN(40) {
			at = at.Add(time.Duration(r.IntN(3)) * time.Minute) // ties too
			ends = append(ends, sourcedEnd{at, srcs[r.IntN(len(srcs))]})
		}
		b := newBasis(ends)
		for q := range 20 {
			when := epoch.Add(time.Duration(r.IntN(90)-5) * time.Minute)
			m := map[string]int{}
			for _, e := range ends {
				if !e.at.After(when) {
					m[e.source]++
				}
			}
			if got, want := b.upTo(when), counts(m); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, query %d at %v: got %v, want %v", round, q, when.Sub(epoch), got, want)
			}
		}
	}
}
