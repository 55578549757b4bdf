package schedq

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchFairCore is benchCore with fairness between 10 tenants (by id).
func benchFairCore(b *testing.B) *Core[int, benchItem] {
	c, err := NewCore(Config[int, benchItem]{
		Key:      func(it benchItem) int { return it.id },
		Priority: func(it benchItem) int32 { return it.prio },
		Fairness: &Fairness[benchItem]{Tenant: func(it benchItem) string { return benchTenants[it.id%len(benchTenants)] }},
	})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkAddPopDoneFair is BenchmarkAddPopDone with fairness on, over
// 10 tenants: compare it with BenchmarkAddPopDone.
func BenchmarkAddPopDoneFair(b *testing.B) { benchAddPopDone(b, benchFairCore) }

// BenchmarkExplainPosition: Explain, with the position, of an item in the
// middle of 100k items in activeQ; fairness off and on.
func BenchmarkExplainPosition(b *testing.B) {
	for _, fair := range []bool{false, true} {
		b.Run(fmt.Sprintf("fair=%v/100000", fair), func(b *testing.B) {
			c := benchCore(b, nil)
			if fair {
				c = benchFairCore(b)
			}
			r := rand.New(rand.NewPCG(1, 1))
			now := t0
			for i := range 100_000 {
				c.Add(benchItem{id: i, prio: int32(r.IntN(100))}, now)
			}
			for range 1000 { // some usage, and a pop rate
				now = now.Add(time.Millisecond)
				a, _ := c.Pop(now)
				c.Done(a, now)
				c.Add(a.Item, now)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				x, err := c.Explain(50_000+i%1000, now)
				if err != nil || x.Position == nil {
					b.Fatal(err)
				}
			}
		})
	}
}
