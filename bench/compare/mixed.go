package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq/bench/compare/internal/upstream"
)

// The streams' schedule (runMixed, runGroupMixed): a node joins every
// nodeEvery ops, tickStep passes every tickEvery ops (the backoff flush),
// and leftoverStep more every leftoverEvery ops (the backoff flush, then
// the leftover flush).
const (
	nodeEvery     = 20
	tickEvery     = 100
	tickStep      = time.Second
	leftoverEvery = 3000
	leftoverStep  = 30 * time.Second
)

// leftoverPeriod is the virtual time from one leftover flush of the
// streams to the next.
const leftoverPeriod = leftoverEvery/tickEvery*tickStep + leftoverStep

// mixedOps is what the mixed stream needs from a peer. pop returns the
// head; fail and done apply to the item popped last.
type mixedOps struct {
	add      func(*v1.Pod)
	del      func(*v1.Pod)
	pop      func() *v1.Pod
	fail     func(plugins []string) // no plugins: an error
	done     func()
	event    func(oldObj, newObj any) // a NodeAdd
	tick     func(d time.Duration)    // clock step and backoff flush
	leftover func()
}

// runMixed runs the mixed stream, with n pods queued throughout. Each op
// adds a pod and makes one attempt, on the head of the queue: 60% bind,
// 30% fail as unschedulable on PluginA or PluginB (a third of the pods wake
// on a NodeAdd, by their labels), 10% fail with an error. A failed pod
// comes back to the queue, so one queued pod is deleted to keep the size
// steady. Every 20 ops a node joins, every 100 ops a second passes (backoff
// flush), every 3000 ops 30 seconds pass (leftover flush). The same seed
// gives every peer the same stream. Pop never waits: the op's own add keeps
// activeQ non-empty.
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
	free := slices.Clone(pool[n:])
	var queued podSet
	for _, p := range pool[:n] {
		ops.add(p)
		queued.add(p)
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
		p := free[len(free)-1]
		free = free[:len(free)-1]
		ops.add(p)
		queued.add(p)
		p = ops.pop()
		queued.remove(p)
		switch o := outcomes[i%len(outcomes)]; {
		case o < 6:
			ops.done()
			free = append(free, p)
		default:
			switch {
			case o < 8:
				ops.fail(rejectA)
			case o < 9:
				ops.fail(rejectB)
			default:
				ops.fail(nil)
			}
			queued.add(p)
			victim := queued.at(i % queued.len())
			queued.remove(victim)
			ops.del(victim)
			free = append(free, victim)
		}
		if i%nodeEvery == 0 {
			ops.event(oldObj, newObj)
		}
		if i%tickEvery == 0 {
			ops.tick(tickStep)
		}
		if i%leftoverEvery == 0 {
			ops.tick(leftoverStep)
			ops.leftover()
		}
	}
}

// podSet is a set of pods with O(1) add, remove and indexing.
type podSet struct {
	pods []*v1.Pod
	pos  map[*v1.Pod]int
}

func (s *podSet) len() int         { return len(s.pods) }
func (s *podSet) at(i int) *v1.Pod { return s.pods[i] }
func (s *podSet) add(p *v1.Pod) {
	if s.pos == nil {
		s.pos = map[*v1.Pod]int{}
	}
	s.pos[p] = len(s.pods)
	s.pods = append(s.pods, p)
}
func (s *podSet) remove(p *v1.Pod) {
	i := s.pos[p]
	last := s.pods[len(s.pods)-1]
	s.pods[i], s.pos[last] = last, i
	s.pods = s.pods[:len(s.pods)-1]
	delete(s.pos, p)
}
