package schedq

import (
	"fmt"
	"testing"
	"time"
)

// manyRegs are hint registrations in the manner of a scheduler's: plugins
// P0..P7, each registered for three events of machines and placed items.
// Every hint answers Skip, so parked items stay parked and a benchmark can
// repeat its move request.
func manyRegs() map[string][]EventHint[benchItem] {
	skip := func(benchItem, any, any) (Hint, error) { return HintSkip, nil }
	hints := map[string][]EventHint[benchItem]{}
	for p := range 8 {
		hints[fmt.Sprintf("P%d", p)] = []EventHint[benchItem]{
			{Event: evMachineAdd, Fn: skip}, {Event: evMachineTaint, Fn: skip}, {Event: evPlacedAdd, Fn: skip},
		}
	}
	return hints
}

// BenchmarkMoveSkipManyRegs: one move request over n lone items parked on
// four of the eight plugins of manyRegs, every hint answering Skip: the
// cost of deciding, per item, which registrations hear the event.
func BenchmarkMoveSkipManyRegs(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c := benchCore(b, manyRegs())
			now := t0
			for i := range n {
				c.Add(benchItem{id: i, prio: int32(i % 100)}, now)
			}
			fail := Failure{RejectedBy: []string{"P1", "P3", "P5", "P7"}}
			for range n {
				a, _ := c.Pop(now)
				c.Requeue(a, fail, now)
			}
			later := now.Add(time.Hour)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Move(evMachineTaint, nil, nil, nil, later)
			}
			b.StopTimer()
			if got := c.Counts().Unschedulable; got != n {
				b.Fatalf("%d parked, want %d", got, n)
			}
		})
	}
}

// BenchmarkMoveGroups: one move request over g parked groups of 8
// members, rejected by four of the eight plugins of manyRegs, every hint
// answering Skip, so each member's hints are asked.
func BenchmarkMoveGroups(b *testing.B) {
	const size = 8
	for _, g := range []int{100, 1_000} {
		b.Run(fmt.Sprint(g), func(b *testing.B) {
			c, err := NewCore(Config[int, benchItem]{
				Key:      func(it benchItem) int { return it.id },
				Priority: func(it benchItem) int32 { return it.prio },
				Group:    func(it benchItem) string { return fmt.Sprint("g", it.id/size) },
				Hints:    manyRegs(),
			})
			if err != nil {
				b.Fatal(err)
			}
			now := t0
			for i := range g {
				if err := c.SetGroup(fmt.Sprint("g", i), GroupSpec{MinCount: size}, now); err != nil {
					b.Fatal(err)
				}
			}
			for i := range g * size {
				c.Add(benchItem{id: i, prio: int32(i % 100)}, now)
			}
			fail := Failure{RejectedBy: []string{"P1", "P3", "P5", "P7"}}
			for range g {
				a, _ := c.Pop(now)
				if err := c.Requeue(a, fail, now); err != nil {
					b.Fatal(err)
				}
			}
			later := now.Add(time.Hour)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Move(evMachineTaint, nil, nil, nil, later)
			}
			b.StopTimer()
			if got := c.Stats().Entities.Groups.Unschedulable; got != g {
				b.Fatalf("%d groups parked, want %d", got, g)
			}
		})
	}
}
