package main

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq/bench/compare/internal/upstream"
)

// mixedOps is what the mixed stream needs from a peer. pop returns the
// head, if any; fail and done apply to the item popped last.
type mixedOps struct {
	add      func(*v1.Pod)
	pop      func() (*v1.Pod, bool)
	fail     func(plugins []string) // no plugins: an error
	done     func()
	event    func(oldObj, newObj any) // a NodeAdd
	tick     func(d time.Duration)    // clock step and backoff flush
	leftover func()
}

// runMixed runs the mixed stream: n pods wait at the start; each op adds a
// pod and makes one attempt, which binds 60% of the time, fails as
// unschedulable on PluginA or PluginB 30% (those pods wake on a NodeAdd if
// their labels say so) and fails with an error 10%. Every 20 ops a node
// joins, every 100 ops a second passes (backoff flush), every 3000 ops 30
// seconds pass (leftover flush). The same seed gives every peer the same
// stream.
func runMixed(b *testing.B, n int, ops mixedOps) {
	r := rand.New(rand.NewPCG(7, 7))
	prio := priorities(2 * n)
	pool := make([]*v1.Pod, 2*n)
	for i := range pool {
		labels := map[string]string{}
		if r.IntN(10) < 3 {
			labels[upstream.LabelWake] = upstream.PluginA
		}
		pool[i] = upstream.NewPod(fmt.Sprintf("mixed-%d", i), prio[i], labels)
	}
	free := pool[n:]
	for _, p := range pool[:n] {
		ops.add(p)
	}
	rejectA, rejectB := []string{upstream.PluginA}, []string{upstream.PluginB}
	_, oldObj, newObj := upstream.EventArgs(upstream.NodeAdd, upstream.HintByLabel)
	outcomes := make([]int, 1024)
	for i := range outcomes {
		outcomes[i] = r.IntN(10)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		if len(free) > 0 {
			ops.add(free[len(free)-1])
			free = free[:len(free)-1]
		}
		if p, ok := ops.pop(); ok {
			switch o := outcomes[i%len(outcomes)]; {
			case o < 6:
				ops.done()
				free = append(free, p)
			case o < 8:
				ops.fail(rejectA)
			case o < 9:
				ops.fail(rejectB)
			default:
				ops.fail(nil)
			}
		}
		if i%20 == 0 {
			ops.event(oldObj, newObj)
		}
		if i%100 == 0 {
			ops.tick(time.Second)
		}
		if i%3000 == 0 {
			ops.tick(30 * time.Second)
			ops.leftover()
		}
	}
}
