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
// A failed entity comes back, so one queued lone pod is deleted to keep
// the count steady. NodeAdd every 20 ops, a second (backoff flush) every
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
	var lone podSet
	for _, e := range pool[:n] {
		add(e)
		if e.group == nil {
			lone.add(e.pod)
		}
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
		if e.group == nil {
			lone.add(e.pod)
		}
		got := byName[ops.pop()]
		if got == nil {
			b.Fatal("popped an unknown entity")
		}
		if got.group == nil {
			lone.remove(got.pod)
		}
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
			if got.group == nil {
				lone.add(got.pod)
			}
			if lone.len() > 0 {
				victim := lone.at(i % lone.len())
				lone.remove(victim)
				ops.del(victim)
				free = append(free, byName[victim.Name])
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
