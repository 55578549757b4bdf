package schedq

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// The benchmarks below check doc.go's Cost section for the operations the
// other benchmarks do not time alone: each runs at benchSizes items, so
// that the growth with n shows the claimed complexity (docs/benchmarks.md
// has a run). Timing goals live there, never in tests.

// benchFilled is benchCore with n items in activeQ, priorities 0 to 99.
func benchFilled(b *testing.B, n int, hints map[string][]EventHint[benchItem]) (*Core[int, benchItem], time.Time) {
	c := benchCore(b, hints)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range n {
		c.Add(benchItem{id: i, prio: int32(r.IntN(100))}, t0)
	}
	return c, t0
}

// BenchmarkCostLogN: Update (a new priority, re-sorted in activeQ) and
// Delete then Add, claimed O(log n); Activate of a parked item, with the
// Pop and Requeue that park it again, all claimed O(log n).
func BenchmarkCostLogN(b *testing.B) {
	hints := map[string][]EventHint[benchItem]{"P": {{Event: Event{Kind: "K", Action: 1}}}}
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("Update/%d", n), func(b *testing.B) {
			c, now := benchFilled(b, n, nil)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := i % n
				old, _, _ := c.Get(k)
				c.Update(old.Item, benchItem{id: k, prio: int32(i % 100)}, now)
			}
		})
		b.Run(fmt.Sprintf("DeleteAdd/%d", n), func(b *testing.B) {
			c, now := benchFilled(b, n, nil)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := i % n
				if err := c.Delete(k, now); err != nil {
					b.Fatal(err)
				}
				c.Add(benchItem{id: k, prio: int32(i % 100)}, now)
			}
		})
		b.Run(fmt.Sprintf("ActivatePopRequeue/%d", n), func(b *testing.B) {
			c, now := benchFilled(b, 0, hints)
			for i := range n { // n parked items
				c.Add(benchItem{id: i, prio: int32(i % 100)}, now)
				a, _ := c.Pop(now)
				if err := c.Requeue(a, Failure{RejectedBy: []string{"P"}}, now); err != nil {
					b.Fatal(err)
				}
			}
			keys := make([]int, 1)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				keys[0] = i % n
				c.Activate(keys, now)
				a, ok := c.Pop(now)
				if !ok {
					b.Fatal("nothing to pop after Activate")
				}
				if err := c.Requeue(a, Failure{RejectedBy: []string{"P"}}, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCostConstant: Get and Counts, claimed O(1) (Counts plus O(g)
// for g groups: none here), and Nominated with one item nominated to the
// target, claimed O(items there), whatever n.
func BenchmarkCostConstant(b *testing.B) {
	for _, n := range benchSizes {
		c, now := benchFilled(b, n, nil)
		if err := c.Nominate(n/2, "t"); err != nil {
			b.Fatal(err)
		}
		_ = now
		b.Run(fmt.Sprintf("Get/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, _, ok := c.Get(i % n); !ok {
					b.Fatal("missing")
				}
			}
		})
		b.Run(fmt.Sprintf("Counts/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if c.Counts().Active != n {
					b.Fatal("wrong count")
				}
			}
		})
		b.Run(fmt.Sprintf("Nominated1/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if len(c.Nominated("t")) != 1 {
					b.Fatal("wrong nominations")
				}
			}
		})
	}
}

// BenchmarkCostListings: Pending of the first page (claimed O(n log n)),
// Dump (O(n log n)), and Nominated with all n items nominated to the
// target (O(n)).
func BenchmarkCostListings(b *testing.B) {
	for _, n := range benchSizes {
		c, now := benchFilled(b, n, nil)
		b.Run(fmt.Sprintf("Pending/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if p := c.Pending(PendingOptions[benchItem]{Limit: 10}, now); p.Total != n {
					b.Fatal("wrong total")
				}
			}
		})
		b.Run(fmt.Sprintf("Dump/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if d := c.Dump(now); len(d.Items) != n {
					b.Fatal("wrong dump")
				}
			}
		})
		for k := range n {
			if err := c.Nominate(k, "all"); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("NominatedAll/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if len(c.Nominated("all")) != n {
					b.Fatal("wrong nominations")
				}
			}
		})
	}
}

// BenchmarkFairPopTenants: Add, Pop and Done under fairness with 100k
// items in activeQ spread over t tenants, for t of 10, 1,000 and 100,000:
// doc.go claims Pop is O(log t + log m), so the time grows with log t.
func BenchmarkFairPopTenants(b *testing.B) {
	const m = 100_000
	for _, t := range []int{10, 1_000, 100_000} {
		b.Run(fmt.Sprint(t), func(b *testing.B) {
			names := make([]string, t)
			for i := range names {
				names[i] = fmt.Sprint("t", i)
			}
			c, err := NewCore(Config[int, benchItem]{
				Key:      func(it benchItem) int { return it.id },
				Priority: func(it benchItem) int32 { return it.prio },
				Fairness: &Fairness[benchItem]{Tenant: func(it benchItem) string { return names[it.id%t] }},
			})
			if err != nil {
				b.Fatal(err)
			}
			now := t0
			for i := range m {
				c.Add(benchItem{id: i}, now)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				now = now.Add(time.Microsecond)
				a, _ := c.Pop(now)
				if err := c.Done(a, now); err != nil {
					b.Fatal(err)
				}
				c.Add(a.Item, now)
			}
		})
	}
}

// BenchmarkCostDumpParked: Dump (O(n log n)) with all n items parked,
// rejected by two checks registered for three events in all, whose
// explanations each name their waking events and build a longer reason
// than activeQ's.
func BenchmarkCostDumpParked(b *testing.B) {
	hints := map[string][]EventHint[benchItem]{
		"P": {{Event: Event{Kind: "K", Action: 1, Label: "KAdd"}}, {Event: Event{Kind: "K", Action: 2, Label: "KUpdate"}}},
		"Q": {{Event: Event{Kind: "L", Action: 1, Label: "LAdd"}}},
		"R": {{Event: Event{Kind: "M", Action: 1, Label: "MAdd"}}},
	}
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c, now := benchFilled(b, 0, hints)
			for i := range n {
				c.Add(benchItem{id: i, prio: int32(i % 100)}, now)
				a, _ := c.Pop(now)
				if err := c.Requeue(a, Failure{RejectedBy: []string{"P", "Q"}}, now); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if d := c.Dump(now); len(d.Items) != n || d.Summary[InUnschedulable-1].Count != n {
					b.Fatal("wrong dump")
				}
			}
		})
	}
}
