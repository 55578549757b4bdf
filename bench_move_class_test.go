package schedq

import (
	"fmt"
	"testing"
	"time"
)

// usedRoom is a budget with room for n items, until an item placed in it
// uses the room (used): then it has none, as a budget that measures the
// world afresh would find.
type usedRoom struct {
	n    int
	used bool
}

func (r *usedRoom) Take(benchItem) bool {
	if r.n == 0 || r.used {
		return false
	}
	r.n--
	return true
}

func (r *usedRoom) Return(benchItem) bool {
	if r.used {
		return false
	}
	r.n++
	return true
}

// Key says the room is the event's own (Budget.Key).
func (*usedRoom) Key() string { return "" }

// BenchmarkMoveBudgetClasses is a forecast's steady state in the queue:
// n parked items of 4 hint classes (Config.HintClass, ClassBudget), and
// per op one budgeted move request whose room fits one item (a running
// item ended), the woken item placed (Done), a new item parked in its
// stead, and the backoff flush that lets the request go. The cost per op
// is what the request pays for the items it leaves parked.
func BenchmarkMoveBudgetClasses(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var last *usedRoom
			c, err := NewCore(Config[int, benchItem]{
				Key:         func(it benchItem) int { return it.id },
				Priority:    func(it benchItem) int32 { return it.prio },
				HintClass:   func(it benchItem) uint64 { return uint64(it.id % 4) },
				ClassBudget: true,
				Hints:       map[string][]EventHint[benchItem]{"Fit": {{Event: evMachineAdd}}},
				Budget: func(Event, any, any) (Budget[benchItem], bool) {
					last = &usedRoom{n: 1}
					return last, true
				},
			})
			if err != nil {
				b.Fatal(err)
			}
			now := t0
			c.Tick(now)
			parkAll(b, c, n, now)
			fail := Failure{RejectedBy: []string{"Fit"}}
			now = now.Add(time.Hour)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Move(evMachineAdd, nil, nil, nil, now)
				a, ok := c.Pop(now)
				if !ok {
					b.Fatalf("op %d: nothing woken; counts %+v", i, c.Counts())
				}
				last.used = true
				if err := c.Done(a, now); err != nil {
					b.Fatal(err)
				}
				c.Add(benchItem{id: n + i, prio: int32(i % 100)}, now)
				a, _ = c.Pop(now)
				if err := c.Requeue(a, fail, now); err != nil {
					b.Fatal(err)
				}
				now = now.Add(3 * time.Second) // past the new item's backoff
				c.Tick(now)
			}
			b.StopTimer()
			if got := c.Counts().Unschedulable; got != n {
				b.Fatalf("%d parked, want %d", got, n)
			}
		})
	}
}

// BenchmarkMoveSkipClasses: one move request over n parked items of 4
// hint classes (Config.HintClass) whose hint answers Skip for every
// class: the request judges the classes, and the items stay parked.
func BenchmarkMoveSkipClasses(b *testing.B) {
	skip := func(benchItem, any, any) (Hint, error) { return HintSkip, nil }
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c, err := NewCore(Config[int, benchItem]{
				Key:       func(it benchItem) int { return it.id },
				Priority:  func(it benchItem) int32 { return it.prio },
				HintClass: func(it benchItem) uint64 { return uint64(it.id % 4) },
				Hints:     map[string][]EventHint[benchItem]{"Fit": {{Event: evMachineAdd, Fn: skip}}},
			})
			if err != nil {
				b.Fatal(err)
			}
			parkAll(b, c, n, t0)
			later := t0.Add(time.Hour)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Move(evMachineAdd, nil, nil, nil, later)
			}
			b.StopTimer()
			if got := c.Counts().Unschedulable; got != n {
				b.Fatalf("%d parked, want %d", got, n)
			}
		})
	}
}
