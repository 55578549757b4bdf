package scheduler

import (
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
)

// groupCounts counts the cached pods (bound or assumed) of each pod group,
// so that a group attempt counts the members earlier attempts placed
// towards its minCount. A pod being deleted (deletionTimestamp set) is not
// counted: it is going, and a gang that counted it would be below its
// minCount once it is gone (a released gang's members terminate for their
// grace period while the gang's recreated members are tried). Not safe for
// concurrent use: the Cache's lock guards it. O(1) per operation.
type groupCounts struct {
	of    map[types.NamespacedName]string // the group of each counted pod
	count map[string]int
	// tally, if not nil, hears each pod counted or uncounted (the gang
	// gate's count of members known).
	tally *memberTally
}

func newGroupCounts(tally *memberTally) groupCounts {
	return groupCounts{of: map[types.NamespacedName]string{}, count: map[string]int{}, tally: tally}
}

// add counts p if it is a group member, not being deleted, and not
// counted yet.
func (g groupCounts) add(p *v1.Pod) {
	name := framework.GroupName(p)
	if name == "" || p.DeletionTimestamp != nil {
		return
	}
	key := framework.Key(p)
	if _, ok := g.of[key]; ok {
		return
	}
	g.of[key] = name
	g.count[name]++
	g.tally.placed(key, name, true)
}

// remove uncounts the pod key, if counted.
func (g groupCounts) remove(key types.NamespacedName) {
	name, ok := g.of[key]
	if !ok {
		return
	}
	delete(g.of, key)
	if g.count[name]--; g.count[name] == 0 {
		delete(g.count, name)
	}
	g.tally.placed(key, name, false)
}

// GroupPlaced returns how many pods of the pod group name (namespace/name)
// are bound or assumed. O(1).
func (c *Cache) GroupPlaced(name string) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.groups.count[name]
}

// Trial is a group attempt's trial placements in the cache, made under the
// cache's write lock (see Cache.Trial). Not safe for concurrent use.
type Trial struct {
	c      *Cache
	placed []trialPlacement
}

type trialPlacement struct {
	pi   *framework.PodInfo
	node string
	b    *pendingBinding
}

// Place places pi on node for the rest of the trial, so that the next
// members' filters see it. It fails, placing nothing, if the pod is on a
// node already or the node is unknown. O(1) plus the NodeInfo's update.
func (t *Trial) Place(pi *framework.PodInfo, node string, b *pendingBinding) bool {
	key := framework.Key(pi.Pod)
	if _, ok := t.c.podNode[key]; ok {
		return false
	}
	if _, ok := t.c.nodes[node]; !ok {
		return false
	}
	t.c.placeLocked(pi, node)
	t.placed = append(t.placed, trialPlacement{pi: pi, node: node, b: b})
	return true
}

// Placed returns how many pods of the pod group name are bound, assumed or
// placed in this trial. O(1).
func (t *Trial) Placed(name string) int { return t.c.groups.count[name] }

// Trial runs f holding the cache's write lock, with the cache as a
// snapshot that f extends with trial placements (t.Place). If f returns
// true the placements become assumptions, each with its binding, exactly
// as Assume makes them; otherwise they are all undone and the cache is as
// before. Either way no other reader sees a trial placement. f must not
// call the Cache's methods (they would deadlock). The lock is held for the
// whole of f: O(members x nodes) for a group attempt. If f panics, the
// placements are undone and the panic goes on.
func (c *Cache) Trial(f func(snap framework.Snapshot, t *Trial) bool) {
	c.lock()
	defer c.unlock()
	t := &Trial{c: c}
	keep := false
	// Deferred, so that a panic in f (a plugin's) undoes the placements
	// before the lock is released.
	defer func() {
		for _, p := range t.placed {
			key := framework.Key(p.pi.Pod)
			if keep {
				c.assumed[key] = &assumption{uid: p.pi.Pod.UID, node: p.node, b: p.b}
			} else {
				c.removeLocked(key)
			}
		}
	}()
	keep = f(snapshot{c}, t)
}

// GroupMembers returns the bound pods of the pod group name, and how many
// of its members are assumed (their bindings under way); the members
// being deleted are in neither (see groupCounts). O(pods counted in any
// group).
func (c *Cache) GroupMembers(name string) (bound []*v1.Pod, assumed int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for key, g := range c.groups.of {
		if g != name {
			continue
		}
		if _, ok := c.assumed[key]; ok {
			assumed++
			continue
		}
		if p := c.podLocked(key); p != nil {
			bound = append(bound, p)
		}
	}
	return bound, assumed
}

// podLocked returns the cached pod key, on a known node or an orphan; nil
// if not cached. The caller holds the lock. O(pods on its node).
func (c *Cache) podLocked(key types.NamespacedName) *v1.Pod {
	if pi := c.podInfoLocked(key); pi != nil {
		return pi.Pod
	}
	return nil
}

// podInfoLocked is podLocked's PodInfo. The caller holds the lock (read
// or write). O(pods on its node).
func (c *Cache) podInfoLocked(key types.NamespacedName) *framework.PodInfo {
	node, ok := c.podNode[key]
	if !ok {
		return nil
	}
	if n := c.nodes[node]; n != nil {
		for _, pi := range n.Pods {
			if framework.Key(pi.Pod) == key {
				return pi
			}
		}
	}
	return c.orphans[node][key]
}

// retryHold is a group member held as retrying (Cache.retrying): its UID
// and the tally of the group attempt that gives it back. The tally tells
// an attempt of an ended term, whose bindings end late, from one of the
// next term that retries the same pod.
type retryHold struct {
	uid types.UID
	by  *gangBinds
	// latest is the newest version of the member the informer showed
	// while it was held (Cache.seenPending), nil if none: the version
	// given back (takeRetry).
	latest *v1.Pod
}

// holds reports whether h holds pod (its UID) for the tally by.
func (h retryHold) holds(pod *v1.Pod, by *gangBinds) bool {
	return h.by != nil && h.uid == pod.UID && h.by == by
}

// takeRetry reports whether pod (this UID) is still held as retrying for
// the tally by, and stops holding it: a member to give back to the queue,
// as latest if the informer showed a newer version of it meanwhile (nil
// if not). False if a pod handler dropped it meanwhile (unretry). O(1).
func (c *Cache) takeRetry(pod *v1.Pod, by *gangBinds) (latest *v1.Pod, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := framework.Key(pod)
	h := c.retrying[key]
	if !h.holds(pod, by) {
		return nil, false
	}
	c.markWritten(key)
	delete(c.retrying, key)
	return h.latest, true
}

// retryHeld reports whether pod (this UID) is held as retrying for the
// tally by. O(1).
func (c *Cache) retryHeld(pod *v1.Pod, by *gangBinds) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.retrying[framework.Key(pod)].holds(pod, by)
}

// unretry stops holding pod (this UID) as retrying: it was deleted,
// replaced, bound, or is no longer ours to place. O(1).
func (c *Cache) unretry(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := framework.Key(pod)
	if h, ok := c.retrying[key]; ok && h.uid == pod.UID {
		c.markWritten(key)
		delete(c.retrying, key)
	}
}

// HeldApart says why the cache holds the pod of key, pending, where its
// queue may not: a group member whose binding failed, held until the
// other bindings of its group attempt have ended (then it goes back to
// the queue with its group), or a pod assumed on a node whose binding is
// under way (a group member's attempt ends in the queue as its bindings
// start). A binding in doubt is InDoubtOn's. False if none of these.
// O(1).
func (c *Cache) HeldApart(key types.NamespacedName) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if _, ok := c.retrying[key]; ok {
		return "its binding failed; it goes back to the queue with its group once the other bindings of its group's attempt have ended", true
	}
	if a, ok := c.assumed[key]; ok && !a.doubt {
		return fmt.Sprintf("it is assumed on node %s while its binding is under way", a.node), true
	}
	return "", false
}

// noteMinCount records that the minCount of the pod group name changed
// from old to next (a PodGroup update): a raise while its pods bound or
// assumed reach old is a workload scaled up (see scaledUp). O(1).
func (c *Cache) noteMinCount(name string, old, next int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.scaled[name]; ok || next <= old || c.groups.count[name] < old {
		return
	}
	c.scaled[name] = old
}

// forgetMinCount forgets what noteMinCount recorded of the pod group
// name, whose PodGroup was deleted. O(1).
func (c *Cache) forgetMinCount(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.scaled, name)
}

// forgetRelease forgets what gang release keeps of the pod group name,
// whose PodGroup was deleted: the release of the scheduler that enabled
// it last on this cache (EnableGangRelease), until Release. Called after
// the queue deleted the group (see Scheduler.forgetIfDeleted), with no
// lock held. O(1).
func (c *Cache) forgetRelease(name string) {
	c.release.Load().forget(name)
}

// scaledUp reports whether the pod group name is a gang scaled up whose
// placed members (bound or assumed) still reach the minCount it had
// before the raise. The API applies a raised minCount to the pods
// scheduled from then on only, never to those already scheduled: such a
// gang is short of its minCount because of the raise alone, and gang
// release leaves it alone. O(1).
func (c *Cache) scaledUp(name string, placed int) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	from, ok := c.scaled[name]
	return ok && placed >= from
}

// goneCap is how many deleted group members Cache.gone remembers: far
// more than a group attempt sees deleted while it runs.
const goneCap = 4096

// goneRing is a set of the last goneCap UIDs added, the oldest forgotten
// first. O(1) per operation; goneCap UIDs of memory once used.
type goneRing struct {
	set  map[types.UID]struct{}
	ring []types.UID
	next int
}

func (r *goneRing) add(uid types.UID) {
	if r.set == nil {
		r.set, r.ring = map[types.UID]struct{}{}, make([]types.UID, goneCap)
	}
	if _, ok := r.set[uid]; ok {
		return
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.set, old)
	}
	r.ring[r.next] = uid
	r.set[uid] = struct{}{}
	r.next = (r.next + 1) % len(r.ring)
}

// clone is a copy of r that shares nothing with it. O(goneCap).
func (r *goneRing) clone() goneRing {
	return goneRing{set: maps.Clone(r.set), ring: slices.Clone(r.ring), next: r.next}
}

// buryLocked adds uid to c.gone, first keeping c.gone as it was in the
// mark, if there is one and it has not kept it yet, for Rollback: a
// forward run's deletions must not outlive it. The caller holds c.mu.
// O(1), O(goneCap) once per mark or rollback.
func (c *Cache) buryLocked(uid types.UID) {
	if m := c.mark; m != nil && m.gone == nil && !c.gone.has(uid) {
		g := c.gone.clone()
		m.gone = &g
	}
	c.gone.add(uid)
}

func (r *goneRing) has(uid types.UID) bool {
	_, ok := r.set[uid]
	return ok
}

// buryMember notes that the pod handlers saw p deleted or being deleted,
// if it is a group member: an attempt of its group under way no longer
// counts it (Trial.Gone). O(1).
func (c *Cache) buryMember(p *v1.Pod) {
	if framework.GroupName(p) == "" || p.UID == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buryLocked(p.UID)
}

// buryDeleting notes that the pod handlers saw p's deletion start, for
// any pod of ours, not only a group member: from then on Assume refuses
// it, since the API server binds no pod being deleted and a
// deletionTimestamp is never removed. The update that shows it frees an
// assumption made before (Handlers.release); this stops one made after,
// by a cycle under way, that no update would free. O(1).
func (c *Cache) buryDeleting(p *v1.Pod) {
	if p.UID == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buryLocked(p.UID)
}

// Gone reports whether the pod handlers saw the group member of uid
// deleted or being deleted (one of the last goneCap). O(1).
func (t *Trial) Gone(uid types.UID) bool { return t.c.gone.has(uid) }
