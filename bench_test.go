package schedq

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

type benchItem struct {
	id   int
	prio int32
}

func benchCore(b *testing.B, hints map[string][]EventHint[benchItem]) *Core[int, benchItem] {
	c, err := NewCore(Config[int, benchItem]{
		Key:      func(it benchItem) int { return it.id },
		Priority: func(it benchItem) int32 { return it.prio },
		Hints:    hints,
	})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

var benchSizes = []int{1_000, 10_000, 100_000}

// BenchmarkAddPopDone: one Add, one Pop and one Done with n items already
// waiting in activeQ.
func BenchmarkAddPopDone(b *testing.B) {
	benchAddPopDone(b, func(b *testing.B) *Core[int, benchItem] { return benchCore(b, nil) })
}

// benchAddPopDone runs the AddPopDone loop on the Core that core builds,
// for each of benchSizes.
func benchAddPopDone(b *testing.B, core func(*testing.B) *Core[int, benchItem]) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c := core(b)
			r := rand.New(rand.NewPCG(1, 1))
			now := t0
			for i := range n {
				c.Add(benchItem{id: i, prio: int32(r.IntN(100))}, now)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				now = now.Add(time.Microsecond)
				info, _ := c.Pop(now)
				c.Done(info, now)
				c.Add(benchItem{id: info.Item.id, prio: int32(r.IntN(100))}, now)
			}
		})
	}
}

// BenchmarkQueueAddPopDone is BenchmarkAddPopDone through the locked
// Queue, with the wall clock.
func BenchmarkQueueAddPopDone(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			q, err := New(Config[int, benchItem]{
				Key:      func(it benchItem) int { return it.id },
				Priority: func(it benchItem) int32 { return it.prio },
			})
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 1))
			for i := range n {
				q.Add(benchItem{id: i, prio: int32(r.IntN(100))})
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				info, _ := q.Pop(ctx)
				q.Done(info)
				q.Add(benchItem{id: info.Item.id, prio: int32(r.IntN(100))})
			}
		})
	}
}

// BenchmarkRequeue: pop, fail as unschedulable, and come back through a
// move request and the backoff flush.
func BenchmarkRequeue(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c := benchCore(b, map[string][]EventHint[benchItem]{"Fit": {{Event: evMachineAdd}}})
			now := t0
			for i := range n {
				c.Add(benchItem{id: i, prio: int32(i % 100)}, now)
			}
			fail := Failure{RejectedBy: []string{"Fit"}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				now = now.Add(time.Millisecond)
				info, _ := c.Pop(now)
				c.Requeue(info, fail, now)
				c.Move(evMachineAdd, nil, nil, func(in *Info[benchItem]) bool { return in.Item.id == info.Item.id }, now)
				c.Activate([]int{info.Item.id}, now)
			}
		})
	}
}

// parkAll fills a core with n items parked on plugin "Fit".
func parkAll(b *testing.B, c *Core[int, benchItem], n int, now time.Time) {
	for i := range n {
		c.Add(benchItem{id: i, prio: int32(i % 100)}, now)
	}
	fail := Failure{RejectedBy: []string{"Fit"}}
	for range n {
		info, _ := c.Pop(now)
		c.Requeue(info, fail, now)
	}
	if c.Counts().Unschedulable != n {
		b.Fatalf("parked %d, want %d", c.Counts().Unschedulable, n)
	}
}

// BenchmarkMoveAll measures one move request over n parked items:
//   - SkipIndexed: the event's plugins rejected none of them (the index
//     answers without looking at any item);
//   - SkipHint: every item was rejected by the event's plugin, whose hint
//     answers QueueSkip for each;
//   - AllMove: every item moves to activeQ.
func BenchmarkMoveAll(b *testing.B) {
	skip := func(benchItem, any, any) (Hint, error) { return HintSkip, nil }
	hints := map[string][]EventHint[benchItem]{
		"Fit":    {{Event: evMachineAdd}, {Event: evMachineLabel, Fn: skip}},
		"Volume": {{Event: evVolumeAdd}},
	}
	cases := []struct {
		name  string
		event Event
		moves bool
	}{
		{"SkipIndexed", evVolumeAdd, false},
		{"SkipHint", evMachineLabel, false},
		{"AllMove", evMachineAdd, true},
	}
	for _, tc := range cases {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", tc.name, n), func(b *testing.B) {
				c := benchCore(b, hints)
				now := t0
				parkAll(b, c, n, now)
				later := now.Add(time.Hour) // every backoff is over
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if tc.moves && i > 0 {
						b.StopTimer()
						c = benchCore(b, hints)
						parkAll(b, c, n, now)
						runtime.GC()
						b.StartTimer()
					}
					c.Move(tc.event, nil, nil, nil, later)
				}
				b.StopTimer()
				if got := c.Counts().Active; tc.moves && got != n || !tc.moves && got != 0 {
					b.Fatalf("%d moved", got)
				}
			})
		}
	}
}

// BenchmarkMemoryPerItem reports the heap bytes each queued item costs,
// in activeQ and parked.
func BenchmarkMemoryPerItem(b *testing.B) {
	const n = 100_000
	for _, parked := range []bool{false, true} {
		name := "active"
		if parked {
			name = "parked"
		}
		b.Run(name, func(b *testing.B) {
			var bytes float64
			for i := 0; i < b.N; i++ {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				c := benchCore(b, map[string][]EventHint[benchItem]{"Fit": {{Event: evMachineAdd}}})
				if parked {
					parkAll(b, c, n, t0)
				} else {
					for j := range n {
						c.Add(benchItem{id: j, prio: int32(j % 100)}, t0)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				bytes = float64(after.HeapAlloc-before.HeapAlloc) / n
				runtime.KeepAlive(c)
			}
			b.ReportMetric(bytes, "B/item")
		})
	}
}

// benchRoom is a budget with room for n items.
type benchRoom struct{ n int }

func (r *benchRoom) Take(benchItem) bool {
	if r.n == 0 {
		return false
	}
	r.n--
	return true
}

func (r *benchRoom) Return(benchItem) bool { r.n++; return true }

// Key says the room is the event's own (Budget.Key).
func (*benchRoom) Key() string { return "" }

// BenchmarkMoveBudget is BenchmarkMoveAll's AllMove with a wake budget
// (Config.Budget): the event's room holds every parked item (All: the
// budget's own cost, sorting the candidates into pop order), or 100 of
// them (Some: the rest are deferred). Compare with MoveAll/AllMove.
func BenchmarkMoveBudget(b *testing.B) {
	for _, tc := range []struct {
		name string
		room func(n int) int
	}{{"All", func(n int) int { return n }}, {"Some", func(int) int { return 100 }}} {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", tc.name, n), func(b *testing.B) {
				newCore := func() *Core[int, benchItem] {
					c, err := NewCore(Config[int, benchItem]{
						Key:      func(it benchItem) int { return it.id },
						Priority: func(it benchItem) int32 { return it.prio },
						Hints:    map[string][]EventHint[benchItem]{"Fit": {{Event: evMachineAdd}}},
						Budget: func(Event, any, any) (Budget[benchItem], bool) {
							return &benchRoom{n: tc.room(n)}, true
						},
					})
					if err != nil {
						b.Fatal(err)
					}
					parkAll(b, c, n, t0)
					return c
				}
				later := t0.Add(time.Hour)
				c := newCore()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if i > 0 {
						b.StopTimer()
						c = newCore()
						runtime.GC()
						b.StartTimer()
					}
					c.Move(evMachineAdd, nil, nil, nil, later)
				}
				b.StopTimer()
				if got, want := c.Counts().Active, tc.room(n); got != want {
					b.Fatalf("%d woken, want %d", got, want)
				}
			})
		}
	}
}

// BenchmarkGroupPopRequeue: Pop of one group of n members, then Requeue
// of its attempt as an error, which (backoff off) sends it straight back
// to activeQ. The goal is O(members) per round and no allocation per
// member: a round allocates the popped Members slice, nothing else.
func BenchmarkGroupPopRequeue(b *testing.B) {
	for _, n := range []int{10, 1_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c, err := NewCore(Config[int, benchItem]{
				Key:            func(it benchItem) int { return it.id },
				Priority:       func(it benchItem) int32 { return it.prio },
				Group:          func(it benchItem) string { return "g" },
				DisableBackoff: true,
			})
			if err != nil {
				b.Fatal(err)
			}
			now := t0
			if err := c.SetGroup("g", GroupSpec{MinCount: n}, now); err != nil {
				b.Fatal(err)
			}
			for i := range n {
				c.Add(benchItem{id: i, prio: int32(i % 7)}, now)
			}
			f := Failure{Message: "no room"}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				now = now.Add(time.Microsecond)
				a, ok := c.Pop(now)
				if !ok || len(a.Members) != n {
					b.Fatalf("popped %d members, want %d", len(a.Members), n)
				}
				if err := c.Requeue(a, f, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFailRequeue: pop the head and fail it with an error, with n
// items queued; once all n are in error backoff, the clock steps a second
// at a time and Tick's backoff flush brings them back (bench/compare's
// fail+requeue(backoff) on Core, with int keys).
func BenchmarkFailRequeue(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c := benchCore(b, nil)
			r := rand.New(rand.NewPCG(1, 1))
			now := t0
			for i := range n {
				c.Add(benchItem{id: i, prio: int32(r.IntN(100))}, now)
			}
			popped := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for popped == n && !c.Poppable() {
					now = now.Add(time.Second)
					c.Tick(now) // the backoff flush
				}
				if popped == n {
					popped = 0
				}
				a, ok := c.Pop(now)
				if !ok {
					b.Fatal("nothing to pop")
				}
				if err := c.Requeue(a, Failure{}, now); err != nil {
					b.Fatal(err)
				}
				popped++
			}
		})
	}
}
