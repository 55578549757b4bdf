package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"

	"github.com/schedq/schedq/bench/compare/internal/upstream"
)

// gangSize is the member count of every group in the pods-and-groups
// stream; each group needs all of them (minCount = gangSize).
const gangSize = 8

// entity is a lone pod, or a gang: its PodGroup and its members.
type entity struct {
	pod     *v1.Pod
	group   *schedulingv1beta1.PodGroup
	members []*v1.Pod
}

// name is how a peer's pop names the entity: the pod's or the group's name.
func (e *entity) name() string {
	if e.group != nil {
		return e.group.Name
	}
	return e.pod.Name
}

// groupOps is what the pods-and-groups stream needs from a peer. pop
// returns the name of the head entity (a lone pod's or a group's); fail
// and done apply to the entity popped last.
type groupOps struct {
	addGroup func(pg *schedulingv1beta1.PodGroup, members []*v1.Pod, first bool)
	add      func(*v1.Pod)
	del      func(*v1.Pod)
	pop      func() string
	fail     func(plugins []string) // no plugins: an error
	done     func()
	event    func(oldObj, newObj any) // a NodeAdd
	tick     func(d time.Duration)    // clock step and backoff flush
	leftover func()
}

// groupPool builds 2n entities, every fourth a gang of gangSize members
// (the group's priority on each member), the others lone pods; 30% of
// either wake on a NodeAdd by their labels. Deterministic.
func groupPool(n int) []*entity {
	r := rand.New(rand.NewPCG(11, 11))
	prio := priorities(2 * n)
	pool := make([]*entity, 2*n)
	for i := range pool {
		labels := map[string]string{}
		if r.IntN(10) < 3 {
			labels[upstream.LabelWake] = upstream.PluginA
		}
		if i%4 != 3 {
			pool[i] = &entity{pod: upstream.NewPod(fmt.Sprintf("gm-%d", i), prio[i], labels)}
			continue
		}
		name := fmt.Sprintf("gang-%d", i)
		e := &entity{group: upstream.NewPodGroup(name, gangSize, prio[i])}
		for m := range gangSize {
			e.members = append(e.members, upstream.NewMember(fmt.Sprintf("%s-%d", name, m), name, prio[i], labels))
		}
		pool[i] = e
	}
	return pool
}

// runGroupMixed runs the pods-and-groups stream with n entities queued
// throughout (a quarter of them gangs of 8). Each op adds an entity and
// makes one attempt on the head of the queue: 60% succeed (every pod
// bound), 30% are rejected by PluginA or PluginB, 10% fail with an error.
// A failed entity comes back, so another queued entity of its kind (lone
// pod or gang, all members) is deleted: the count and the mix stay steady,
// and the per-op cost does not drift with the run's length (deleting lone
// pods only, as an earlier version did, let parked gangs pile up until
// every queued entity was one). NodeAdd every 20 ops, a second (backoff flush) every
// 100, 30 seconds (leftover flush) every 3000. Both peers get the same
// input; what they pop may differ where their designs do (upstream backs a
// rejected group off and retries it; schedq parks it on its plugins), so
// each does its own work for the same stream. Pop never waits: the op's
// own add keeps activeQ non-empty.
func runGroupMixed(b *testing.B, n int, ops groupOps) {
	pool := groupPool(n)
	byName := make(map[string]*entity, len(pool))
	for _, e := range pool {
		byName[e.name()] = e
	}
	seen := map[string]bool{}
	add := func(e *entity) {
		if e.group == nil {
			ops.add(e.pod)
			return
		}
		ops.addGroup(e.group, e.members, !seen[e.group.Name])
		seen[e.group.Name] = true
	}
	free := slices.Clone(pool[n:])
	// queued holds the queued entities of each kind (0: lone, 1: gang).
	var queued [2]entitySet
	kind := func(e *entity) int {
		if e.group != nil {
			return 1
		}
		return 0
	}
	for _, e := range pool[:n] {
		add(e)
		queued[kind(e)].add(e)
	}
	rejectA, rejectB := []string{upstream.PluginA}, []string{upstream.PluginB}
	_, oldObj, newObj := upstream.EventArgs(upstream.NodeAdd, upstream.HintByLabel)
	r := rand.New(rand.NewPCG(12, 12))
	outcomes := make([]int, 1024)
	for i := range outcomes {
		outcomes[i] = r.IntN(10)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		if len(free) == 0 {
			b.Fatal("pods-and-groups stream: no free entity left (every queued entity is a gang)")
		}
		e := free[len(free)-1]
		free = free[:len(free)-1]
		add(e)
		queued[kind(e)].add(e)
		got := byName[ops.pop()]
		if got == nil {
			b.Fatal("popped an unknown entity")
		}
		queued[kind(got)].remove(got)
		switch o := outcomes[i%len(outcomes)]; {
		case o < 6:
			ops.done()
			free = append(free, got)
		default:
			switch {
			case o < 8:
				ops.fail(rejectA)
			case o < 9:
				ops.fail(rejectB)
			default:
				ops.fail(nil)
			}
			// It comes back, so a queued entity of its kind (not itself)
			// is deleted: the mix of lone pods and gangs stays steady.
			same := &queued[kind(got)]
			if same.len() > 0 {
				victim := same.at(i % same.len())
				same.remove(victim)
				for _, p := range victim.pods() {
					ops.del(p)
				}
				free = append(free, victim)
			}
			same.add(got)
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

// pods returns the entity's pods: the lone pod, or the gang's members.
func (e *entity) pods() []*v1.Pod {
	if e.group != nil {
		return e.members
	}
	return []*v1.Pod{e.pod}
}

// entitySet is a set of entities with O(1) add, remove and indexed pick.
type entitySet struct {
	items []*entity
	pos   map[*entity]int
}

func (s *entitySet) len() int         { return len(s.items) }
func (s *entitySet) at(i int) *entity { return s.items[i] }
func (s *entitySet) add(e *entity) {
	if s.pos == nil {
		s.pos = map[*entity]int{}
	}
	s.pos[e] = len(s.items)
	s.items = append(s.items, e)
}
func (s *entitySet) remove(e *entity) {
	i, ok := s.pos[e]
	if !ok {
		return
	}
	last := s.items[len(s.items)-1]
	s.items[i], s.pos[last] = last, i
	s.items = s.items[:len(s.items)-1]
	delete(s.pos, e)
}
