package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/plugins"
)

// memberTally counts the members of each pod group that the scheduler
// knows, as kube-scheduler v1.37.2's cache does for GangScheduling's
// PreEnqueue (AllPodsCount): the pending members of ours the pod
// handlers handed to the queue (queued, pending on an attempt, in
// flight, held for a retry) and the members bound or assumed (the
// cache's groupCounts), a pod counted once whichever it is. Members
// being deleted are not counted, as groupCounts does not count them:
// the gate then holds back exactly the groups whose attempt would find
// too few members (ReasonGroupTooFew). It also keeps the minCount of
// each PodGroup the handlers gave the queue. Its lock is a leaf, taken
// under the cache's lock (placements), the queue's (the gate) or the
// pod events' lock, never the other way. Safe for concurrent use. O(1)
// per operation.
type memberTally struct {
	mu       sync.Mutex
	known    map[types.NamespacedName]tallied
	count    map[string]int // members known, by group
	minCount map[string]int // by group, of the PodGroups the queue took
}

// tallied is one member known: its group, and how.
type tallied struct {
	group           string
	pending, placed bool
}

func newMemberTally() *memberTally {
	return &memberTally{known: map[types.NamespacedName]tallied{}, count: map[string]int{}, minCount: map[string]int{}}
}

// set changes how the member key of group is known; a member neither
// pending nor placed is no longer counted. Nil-safe.
func (t *memberTally) set(key types.NamespacedName, group string, pending, placed *bool) {
	if t == nil || group == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e, had := t.known[key]
	if had && e.group != group { // a pod of that name in another group: the old one is gone
		t.drop(key, e.group)
		e, had = tallied{}, false
	}
	e.group = group
	if pending != nil {
		e.pending = *pending
	}
	if placed != nil {
		e.placed = *placed
	}
	switch {
	case e.pending || e.placed:
		t.known[key] = e
		if !had {
			t.count[group]++
		}
	case had:
		t.drop(key, group)
	}
}

// drop uncounts key of group; the caller holds mu.
func (t *memberTally) drop(key types.NamespacedName, group string) {
	delete(t.known, key)
	if t.count[group]--; t.count[group] <= 0 {
		delete(t.count, group)
	}
}

// pending records whether p, a member, is a pending pod of ours.
func (t *memberTally) pending(p *v1.Pod, on bool) {
	t.set(framework.Key(p), framework.GroupName(p), &on, nil)
}

// placed records whether the member key of group is bound or assumed.
func (t *memberTally) placed(key types.NamespacedName, group string, on bool) {
	t.set(key, group, nil, &on)
}

// setMinCount records group's minCount (its PodGroup's, as the queue has
// it); forget drops it with the PodGroup. Nil-safe.
func (t *memberTally) setMinCount(group string, n int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.minCount[group] = n
}

func (t *memberTally) forget(group string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.minCount, group)
}

// of returns how many members of group are known and its minCount (ok
// false if its PodGroup is not known).
func (t *memberTally) of(group string) (known, minCount int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	minCount, ok = t.minCount[group]
	return t.count[group], minCount, ok
}

// clone copies t for a cache mark; restore brings a copy back.
func (t *memberTally) clone() *memberTally {
	t.mu.Lock()
	defer t.mu.Unlock()
	return &memberTally{known: maps.Clone(t.known), count: maps.Clone(t.count), minCount: maps.Clone(t.minCount)}
}

func (t *memberTally) restore(m *memberTally) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.known, t.count, t.minCount = maps.Clone(m.known), maps.Clone(m.count), maps.Clone(m.minCount)
}

// GangGateReason says why the gang gate holds back pod's group, or ""
// if it does not. O(1).
func (c *Cache) GangGateReason(pod *v1.Pod) string {
	g := framework.GroupName(pod)
	if g == "" {
		return ""
	}
	known, min, ok := c.members.of(g)
	if !ok || known >= min {
		return ""
	}
	return fmt.Sprintf("group %s has %d of minCount %d members; it is not tried until more arrive", g, known, min)
}

// UseGangGate makes cfg (a QueueConfig) hold back, as kube-scheduler
// v1.37.2's GangScheduling does at PreEnqueue, the members of a pod
// group with fewer members known to c (pending, bound or assumed, not
// being deleted) than its PodGroup's minCount: such a group is gated, not
// tried (an attempt would fail with ReasonGroupTooFew), until a member
// arrives or its minCount is lowered, which GangScheduling's hints hear.
// The gate is named GangScheduling, so that those hints lift it. Call it
// with the cache the handlers feed, before the queue is built. O(1) per
// check.
func UseGangGate(cfg *schedq.Config[types.NamespacedName, *v1.Pod], c *Cache) {
	gate := schedq.PreEnqueue[*v1.Pod]{Name: plugins.GangSchedulingName, Admit: func(p *v1.Pod) bool { return c.GangGateReason(p) == "" }}
	gates := slices.DeleteFunc(slices.Clone(cfg.PreEnqueue), func(g schedq.PreEnqueue[*v1.Pod]) bool { return g.Name == gate.Name })
	cfg.PreEnqueue = append(gates, gate)
}
