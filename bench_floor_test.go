package schedq

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// floorItem is an item of the heap-plus-map floor: the fields a priority
// queue with keyed removal cannot do without.
type floorItem struct {
	id   int
	prio int32
	ts   int64
	seq  uint64
	idx  int
}

// floorHeap is container/heap's interface over floorItems, in the default
// order: higher priority, then earlier timestamp, then entry order.
type floorHeap []*floorItem

func (h floorHeap) Len() int { return len(h) }
func (h floorHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	return a.seq < b.seq
}
func (h floorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].idx, h[j].idx = i, j }
func (h *floorHeap) Push(x any) {
	it := x.(*floorItem)
	it.idx = len(*h)
	*h = append(*h, it)
}
func (h *floorHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}

// floorQueue is the least a keyed priority queue does: a container/heap
// and a map from key to item, with popped items recycled so that it
// allocates nothing in steady state. It has no sub-queues, backoff,
// hints or in-flight tracking.
type floorQueue struct {
	h    floorHeap
	keys map[int]*floorItem
	free []*floorItem
	seq  uint64
}

func (q *floorQueue) add(id int, prio int32, now time.Time) {
	var it *floorItem
	if n := len(q.free); n > 0 {
		it, q.free = q.free[n-1], q.free[:n-1]
	} else {
		it = &floorItem{}
	}
	q.seq++
	*it = floorItem{id: id, prio: prio, ts: now.UnixNano(), seq: q.seq}
	q.keys[id] = it
	heap.Push(&q.h, it)
}

func (q *floorQueue) pop() *floorItem { return heap.Pop(&q.h).(*floorItem) }

func (q *floorQueue) done(it *floorItem) {
	delete(q.keys, it.id)
	q.free = append(q.free, it)
}

// BenchmarkHeapMapFloor is BenchmarkAddPopDone's loop on floorQueue: the
// floor that the claim "Add+Pop+Done is at the heap-plus-map floor" is
// measured against. Run the two together:
//
//	go test -run '^$' -bench 'AddPopDone$|HeapMapFloor' .
func BenchmarkHeapMapFloor(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			q := &floorQueue{keys: map[int]*floorItem{}}
			r := rand.New(rand.NewPCG(1, 1))
			now := t0
			for i := range n {
				q.add(i, int32(r.IntN(100)), now)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				now = now.Add(time.Microsecond)
				it := q.pop()
				id := it.id
				q.done(it)
				q.add(id, int32(r.IntN(100)), now)
			}
		})
	}
}

// BenchmarkQueueProducers: several goroutines Add to a Queue while one
// consumer blocks in Pop and ends each attempt with Done. One op is one
// item through the queue; the consumer is the bottleneck, as a scheduler's
// single scheduling loop is.
func BenchmarkQueueProducers(b *testing.B) {
	for _, producers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			q, err := New(Config[int, benchItem]{
				Key:      func(it benchItem) int { return it.id },
				Priority: func(it benchItem) int32 { return it.prio },
			})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for p := range producers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := p; i < b.N; i += producers {
						q.Add(benchItem{id: i, prio: int32(i % 100)})
					}
				}()
			}
			for range b.N {
				a, err := q.Pop(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				q.Done(a)
			}
			wg.Wait()
		})
	}
}

// TestAddPopDoneAllocatesNothing: on the default path (Config.Priority,
// no hints, no fairness, no groups), one Add, Pop and Done of an item
// allocate nothing once the queue is warm, for Core and for Queue.
func TestAddPopDoneAllocatesNothing(t *testing.T) {
	cfg := Config[int, benchItem]{
		Key:      func(it benchItem) int { return it.id },
		Priority: func(it benchItem) int32 { return it.prio },
	}
	c, err := NewCore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	q, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	for i := range 1000 {
		c.Add(benchItem{id: i, prio: int32(i % 100)}, now)
		q.Add(benchItem{id: i, prio: int32(i % 100)})
	}
	next := 1000
	core := func() {
		now = now.Add(time.Microsecond)
		a, ok := c.Pop(now)
		if !ok {
			t.Fatal("Core: nothing to pop")
		}
		if err := c.Done(a, now); err != nil {
			t.Fatal(err)
		}
		c.Add(benchItem{id: next % 2000, prio: int32(next % 100)}, now)
		next++
	}
	ctx := context.Background()
	queue := func() {
		a, err := q.Pop(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Done(a); err != nil {
			t.Fatal(err)
		}
		q.Add(benchItem{id: next % 2000, prio: int32(next % 100)})
		next++
	}
	for name, f := range map[string]func(){"Core": core, "Queue": queue} {
		for range 2000 { // warm: the map, the heap and the free list at size
			f()
		}
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocations per Add+Pop+Done, want 0", name, n)
		}
	}
}
