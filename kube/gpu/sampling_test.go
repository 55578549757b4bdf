package gpu

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestArtifactSequence: SampleArtifact keeps every pod of the list, then
// appends draws while the requests, counted by a drawn pod's share of one
// GPU, stay within the demand, so that a pod of two whole GPUs, counted
// as one, can take them past it; a list past the demand loses pods.
func TestArtifactSequence(t *testing.T) {
	one := Request{CPU: 1000, Count: 1, Share: Milli}
	two := Request{CPU: 1000, Count: 2, Share: Milli}
	cl := newClasses([]Request{one, two})
	for _, tc := range []struct {
		name   string
		target int64
		totals []int64 // the totals a sequence may end at
		length int
	}{
		{name: "up: one draw, counted as one GPU", target: 4000, totals: []int64{4000, 5000}, length: 3},
		{name: "down: pods taken out until within", target: 1500, totals: []int64{0, 1000}, length: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[int64]bool{}
			for seed := range uint64(40) {
				seq := artifactSequence(cl, tc.target, rand.New(rand.NewPCG(seed, 1)))
				var total int64
				for _, id := range seq {
					total += cl.reqs[id].GPU()
				}
				if !slices.Contains(tc.totals, total) || tc.length >= 0 && len(seq) != tc.length {
					t.Fatalf("seed %d: %d pods of %d thousandths, want one of %v (%d pods)", seed, len(seq), total, tc.totals, tc.length)
				}
				if tc.length >= 0 && (!slices.Contains(seq, cl.ids[0]) || !slices.Contains(seq, cl.ids[1])) {
					t.Fatalf("seed %d: the list's pods are not all kept: %v", seed, seq)
				}
				seen[total] = true
			}
			for _, want := range tc.totals {
				if !seen[want] {
					t.Errorf("no seed ended at %d", want)
				}
			}
		})
	}
}
