package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
)

// Cache is the scheduler's view of the cluster: nodes, the pods bound to
// them, and the pods it assumed on a node while their binding is under
// way, so that the next cycle already counts them. It is safe for
// concurrent use; a scheduling cycle holds it with View.
//
// Lock order. Three locks meet here: the cache's (mu), the queue's, and
// the room index's (room.mu, what the wake budget reads), besides two
// leaves of kube-scheduler's. The rules:
//
//   - No goroutine holding mu calls the queue: the cycle reads the queue's
//     nominations before View and writes them after; handlers update the
//     cache, release it, then call the queue; functions that View, Trial
//     and the writers run (plugins, aborts) never call the queue either
//     (RemoveNode calls the aborts after unlocking).
//
//   - No goroutine holding the queue's lock takes mu: the wake budget
//     reads the room index (NodeRoom, Placed) instead.
//
//   - room.mu is a leaf: taken under mu (by every writer, as it unlocks)
//     or under the queue's lock, never the other way round, and nothing
//     is locked while it is held.
//
//   - kube-scheduler's cache (up, see TrackUpstream) has its own lock, a
//     leaf too: taken under mu (by every writer as it unlocks, and by
//     UpdateSnapshot under the read lock), never the other way round. The
//     snapshot UpdateSnapshot fills is read with no lock at all: a cycle on
//     the upstream framework runs its plugins holding nothing.
//
//   - The DRA manager's DeviceClass cache (read by the wake budget through
//     profile.Framework.FitSkips) has its own lock, a leaf: taken under the
//     queue's lock, and by that cache's informer handler alone, which
//     calls nothing while it holds it.
//
//   - The pod events' lock (events) serializes the pod handlers of
//     Handlers (AddPod, UpdatePod, DeletePod, as the informer calls them)
//     with SettleInDoubt, which runs on a term's goroutine, with the
//     give-back of a group's members whose bindings failed
//     (gangBinds.giveBack, on a binding's goroutine), with the end in
//     the queue of a group attempt that placed members (bindGroup: their
//     updates the queue recorded pass to their bindings, and none reaches
//     the queue after it has forgotten them, where it would queue them),
//     with the forgetting of a lone pod's assumption, by its cycle or its
//     binding (Scheduler.unassume) or by its node's deletion
//     (RemoveNode), up to the hand-over of the update its binding holds
//     to the queue (pendingBinding.handOver: no update reaches the queue
//     in between, where it would be newer than the one handed over), and
//     with the
//     nominations a cycle writes or clears for its pod after it ends
//     (nominateFor, unnominateAs, retryPreemptor: the pod must still be
//     the one of its UID, not deleted and created again): each holds it for
//     its whole run, so that a pod the settling forgets and queues, or a
//     member given back, is not queued after the informer's handler has
//     taken it out of the queue (deleted, or bound). It is taken before
//     mu and before the queue's lock (the switch queue's too), never
//     under either: Handlers.AddPods, which a queue rebuild calls holding
//     the switch queue's lock, does not take it. The scheduling loop
//     takes it holding no lock of schedq's (after UpdateSnapshot has
//     released mu, outside Cache.Trial, with no plugin running), and an
//     eviction's goroutine (retryPreemptor, from the Evictor's callback)
//     holding none either; under it they call the queue only (and the
//     cache, to forget an assumption), as the handlers do (its Move runs
//     the plugins' hints and the wake budget under the queue's lock). No holder waits for the loop, a binding or
//     an eviction: the loop waits for the holder and those queued before
//     it (a channel serves its waiting senders in turn), so a slow handler
//     (a Move whose hints visit many parked pods) delays the loop by its
//     length, once per nomination written or cleared and per assumption
//     of a lone pod forgotten (a rejection at Reserve or Permit), and cannot
//     deadlock it (TestLockOrderNominationWaitsOnlyForTheHandler).
//
//   - Gang release's lock (gangRelease.mu) is a leaf, taken with no other
//     lock held: by the scheduling loop, a release's end, and the PodGroup
//     handler, which frees a deleted group's entries (forgetRelease) after
//     it has released mu and the queue's lock.
//
//   - The gang gate's tally (members.mu) is a leaf: taken under mu (a
//     member placed or unplaced), under the queue's lock (the gate's
//     check), under the pod events' lock or under none (the handlers).
//
// In all: events -> mu; events -> queue's lock; queue's lock -> room.mu;
// queue's lock -> the DeviceClass cache's lock; mu -> room.mu; mu -> up's
// lock; events, mu and the queue's lock -> members.mu.
//
// With a writer waiting on mu (which blocks new readers), breaking either
// of the first two rules deadlocks the cycle, the queue and the writer.
type Cache struct {
	mu      sync.RWMutex
	nodes   map[string]*framework.NodeInfo
	order   []*framework.NodeInfo // stable: insertion order
	podNode map[types.NamespacedName]string
	assumed map[types.NamespacedName]*assumption // assumed pods, by key
	// orphans are pods on nodes the cache does not know (not seen yet, or
	// deleted before their pods), by node name.
	orphans    map[string]map[types.NamespacedName]*framework.PodInfo
	namespaces map[string]labels.Set
	fp         fingerprints
	groups     groupCounts // pods bound or assumed per pod group
	// members counts the members each pod group has (gang_gate.go), for
	// the gang gate: those of groups, and the pending ones the pod
	// handlers queued. Its lock is a leaf.
	members *memberTally
	// retrying holds the group members whose binding failed, by key, from
	// the failure until they are given back to the queue (gangBinds): out
	// of every queue meanwhile. The pod handlers drop a member that stops
	// being a pending pod of ours (unretry), so that it is not given back.
	retrying map[types.NamespacedName]retryHold
	// scaled holds, for each pod group whose minCount was raised while its
	// pods bound or assumed reached the old minCount, that old minCount,
	// until the PodGroup is deleted (see Cache.scaledUp).
	scaled map[string]int
	// gone holds the UIDs of the last group members the pod handlers saw
	// deleted or being deleted, so that a group attempt under way does
	// not count such a member towards its minCount (Trial.Gone), and of
	// the last pods they saw being deleted, which Assume refuses.
	gone goneRing

	// room is what the wake budget reads, published by every write
	// (unlock) from what it changed (dirty).
	room  roomIndex
	dirty dirty
	// up, if not nil, is kube-scheduler's cache kept equal to this one,
	// fed with dirty as room is (see TrackUpstream).
	up *upstreamMirror
	// mark, if not nil, is the state Rollback restores (cache_mark.go).
	mark *cacheMark
	// release is the gang release state of the scheduler that turned it
	// on last (EnableGangRelease) until its Release: the PodGroup handler
	// frees its entries of deleted groups (forgetRelease).
	release atomic.Pointer[gangRelease]
	// events is the pod events' lock (see the lock order above): a
	// channel of one slot rather than a sync.Mutex, so that a goroutine
	// that waits for it is durably blocked for testing/synctest.
	events chan struct{}
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	members := newMemberTally()
	return &Cache{
		members:    members,
		nodes:      map[string]*framework.NodeInfo{},
		podNode:    map[types.NamespacedName]string{},
		assumed:    map[types.NamespacedName]*assumption{},
		orphans:    map[string]map[types.NamespacedName]*framework.PodInfo{},
		namespaces: map[string]labels.Set{},
		fp:         newFingerprints(),
		groups:     newGroupCounts(members),
		retrying:   map[types.NamespacedName]retryHold{},
		scaled:     map[string]int{},
		room:       newRoomIndex(),
		dirty:      dirty{nodes: map[string]struct{}{}, pods: map[types.NamespacedName]struct{}{}},
		events:     make(chan struct{}, 1),
	}
}

// lockEvents takes the pod events' lock; unlockEvents releases it.
func (c *Cache) lockEvents()   { c.events <- struct{}{} }
func (c *Cache) unlockEvents() { <-c.events }

// AddNode adds or replaces a node.
func (c *Cache) AddNode(n *v1.Node) {
	c.lock()
	defer c.unlock()
	c.fp.setNode(n)
	c.touchNode(n.Name)
	if ni, ok := c.nodes[n.Name]; ok {
		ni.SetNode(n)
		return
	}
	ni := framework.NewNodeInfo(n)
	for _, pi := range c.orphans[n.Name] {
		ni.AddPod(pi)
	}
	delete(c.orphans, n.Name)
	c.nodes[n.Name] = ni
	c.order = append(c.order, ni)
}

// RemoveNode removes a node. Its pods are kept until they are removed
// themselves (a node may be deleted before its pods), and count again if a
// node of that name comes back. Pods assumed on it whose binding has not
// started are forgotten, and their abort functions called once it has
// released its locks. If a lone pod is among them, it holds the pod
// events' lock (taken first) from before it forgets them to their
// bindings' hand-over (pendingBinding.handOver), so that no pod handler's
// update reaches the queue in between; else it does not take it (a
// group's bindings need no hand-over, and the node handler then waits
// for no pod handler).
func (c *Cache) RemoveNode(name string) {
	var aborted []*pendingBinding
	events := false
	defer func() {
		for _, b := range aborted {
			if b.handOver != nil {
				b.handOver()
			}
		}
		if events {
			c.unlockEvents()
		}
		for _, b := range aborted {
			if b.abort != nil {
				b.abort()
			}
		}
	}()
	for {
		c.lock()
		if events || !c.handsOverOnLocked(name) {
			break
		}
		c.unlock()
		c.lockEvents()
		events = true
	}
	defer c.unlock()
	ni, ok := c.nodes[name]
	if !ok {
		return
	}
	c.fp.removeNode(name)
	c.touchNode(name)
	delete(c.nodes, name)
	c.order = slices.DeleteFunc(c.order, func(x *framework.NodeInfo) bool { return x == ni })
	for _, p := range ni.Pods {
		c.orphan(p, name)
	}
	aborted = c.abortOnLocked(name)
}

func (c *Cache) orphan(pi *framework.PodInfo, node string) {
	m := c.orphans[node]
	if m == nil {
		m = map[types.NamespacedName]*framework.PodInfo{}
		c.orphans[node] = m
	}
	m[framework.Key(pi.Pod)] = pi
}

// AddPod accounts a pod bound to a node (from the API server). If the pod
// was assumed, the assumption is confirmed; when the bound pod is the
// assumed one with spec.nodeName set and nothing else changed
// (SameButNode), its scheduling data are kept rather than computed again.
func (c *Cache) AddPod(p *v1.Pod) error {
	pi := c.confirmedInfo(p)
	if pi == nil {
		var err error
		if pi, err = framework.NewPodInfo(p); err != nil {
			return err
		}
	}
	c.lock()
	defer c.unlock()
	key := framework.Key(p)
	c.removeLocked(key)
	delete(c.assumed, key)
	c.placeLocked(pi, p.Spec.NodeName)
	c.fp.setPod(key, p)
	return nil
}

// confirmedInfo returns p's PodInfo copied from the one its assumption
// holds, if p is bound to the node it was assumed on and is otherwise that
// pod unchanged; nil if not. A PodInfo depends on the pod's content only,
// so the copy is p's whatever the cache does meanwhile. O(pods on the
// node), plus a comparison that stops at the first difference and skips
// the maps and slices the two objects share.
func (c *Cache) confirmedInfo(p *v1.Pod) *framework.PodInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	key := framework.Key(p)
	a, ok := c.assumed[key]
	if !ok || a.uid != p.UID || a.node != p.Spec.NodeName {
		return nil
	}
	old := c.podInfoLocked(key)
	if old == nil || !SameButNode(old.Pod, p) {
		return nil
	}
	pi := *old
	pi.Pod = p
	return &pi
}

// SameButNode reports whether pods a and b are equal but for
// spec.nodeName: exactly equal (reflect.DeepEqual), which maps and slices
// the two share pass at once. A shallow copy with spec.nodeName set (the
// assumed pod) is recognised without reflection: its bytes are a's.
// Objects from an API server differ at least in their resourceVersion,
// an early field. O(size of a Pod) for a shallow copy, else O(the pods'
// fields not shared).
func SameButNode(a, b *v1.Pod) bool {
	if a == b || sameBytesButNode(a, b) {
		return true
	}
	if a.TypeMeta != b.TypeMeta || !reflect.DeepEqual(&a.ObjectMeta, &b.ObjectMeta) {
		return false
	}
	spec := a.Spec
	spec.NodeName = b.Spec.NodeName
	return reflect.DeepEqual(&spec, &b.Spec) && reflect.DeepEqual(&a.Status, &b.Status)
}

// sameBytesButNode reports whether b's memory is a's with b's
// spec.nodeName: every field the same bits, every pointer, map and slice
// the same, so the two are equal. False says nothing (padding may differ):
// SameButNode then compares their values.
func sameBytesButNode(a, b *v1.Pod) bool {
	cp := *a
	cp.Spec.NodeName = b.Spec.NodeName
	size := unsafe.Sizeof(cp)
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(&cp)), size), unsafe.Slice((*byte)(unsafe.Pointer(b)), size))
}

// sameBytes reports whether *a and *b have the same bytes: every field
// the same bits, every pointer, map and slice the same, so that the two
// are equal (for types without floating-point fields, as the pod's
// parts). False says nothing: padding may differ.
func sameBytes[T any](a, b *T) bool {
	size := unsafe.Sizeof(*a)
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(a)), size), unsafe.Slice((*byte)(unsafe.Pointer(b)), size))
}

// errDeletionStarted is Assume's refusal of a pod whose deletion the pod
// handlers saw start during its cycle (Cache.buryDeleting).
var errDeletionStarted = errors.New("its deletion has started")

// RemovePod forgets a bound or assumed pod.
func (c *Cache) RemovePod(key types.NamespacedName) {
	c.lock()
	defer c.unlock()
	c.fp.removePod(key)
	c.removeLocked(key)
	delete(c.assumed, key)
}

// Assume accounts pod on node before its binding is confirmed. The node
// must still be in the cache: a pod is never assumed on a node whose
// deletion was seen; nor is a pod whose deletion the pod handlers saw
// start (errDeletionStarted): the API server never binds it. If b is not nil and the node is deleted before the
// binding starts (see StartBinding), the pod is forgotten and b aborted.
func (c *Cache) Assume(pi *framework.PodInfo, node string, b *pendingBinding) error {
	c.lock()
	defer c.unlock()
	key := framework.Key(pi.Pod)
	if _, ok := c.podNode[key]; ok {
		return fmt.Errorf("pod %s is already on a node", key)
	}
	if _, ok := c.nodes[node]; !ok {
		return fmt.Errorf("node %s was deleted", node)
	}
	if c.gone.has(pi.Pod.UID) {
		return fmt.Errorf("pod %s: %w", key, errDeletionStarted)
	}
	c.placeLocked(pi, node)
	c.assumed[key] = &assumption{uid: pi.Pod.UID, node: node, b: b}
	return nil
}

// Forget undoes Assume after a failed binding. A pod already confirmed by
// the API server, or another pod of the same name assumed since (a
// recreated pod has a new UID), is left alone.
func (c *Cache) Forget(pod *v1.Pod) { c.forget(pod, nil) }

// forget is Forget; with retry (the tally of the pod's group attempt), a
// pod it forgets is also held as retrying for it (see Cache.retrying), in
// the same step. It reports whether it forgot pod: false if the cache no
// longer held its assumption (the informer showed it bound, deleted, or
// replaced by a pod of another UID).
func (c *Cache) forget(pod *v1.Pod, retry *gangBinds) bool {
	c.lock()
	defer c.unlock()
	key := framework.Key(pod)
	a, ok := c.assumed[key]
	if !ok || a.uid != pod.UID {
		return false
	}
	c.removeLocked(key)
	delete(c.assumed, key)
	if retry != nil {
		c.retrying[key] = retryHold{uid: pod.UID, by: retry}
	}
	return true
}

// IsAssumed reports whether a pod is assumed and not yet confirmed.
func (c *Cache) IsAssumed(key types.NamespacedName) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.assumed[key]
	return ok
}

// SetNamespace records a namespace's labels, for affinity namespace
// selectors.
func (c *Cache) SetNamespace(ns *v1.Namespace) {
	c.lock()
	defer c.unlock()
	c.namespaces[ns.Name] = labels.Set(ns.Labels)
}

// RemoveNamespace forgets a namespace.
func (c *Cache) RemoveNamespace(name string) {
	c.lock()
	defer c.unlock()
	delete(c.namespaces, name)
}

// NodeCount returns the number of nodes.
func (c *Cache) NodeCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.order)
}

// NodeOf returns the node a pod is bound or assumed on.
func (c *Cache) NodeOf(key types.NamespacedName) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.podNode[key]
	return n, ok
}

// View runs f with the cache as a read-only snapshot, holding the read
// lock, so that a scheduling cycle sees one consistent cluster.
func (c *Cache) View(f func(framework.Snapshot)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	f(snapshot{c})
}

func (c *Cache) placeLocked(pi *framework.PodInfo, node string) {
	c.podNode[framework.Key(pi.Pod)] = node
	c.touchPod(framework.Key(pi.Pod), node)
	c.groups.add(pi.Pod)
	if ni, ok := c.nodes[node]; ok {
		ni.AddPod(pi)
	} else {
		c.orphan(pi, node)
	}
}

func (c *Cache) removeLocked(key types.NamespacedName) {
	node, ok := c.podNode[key]
	if !ok {
		return
	}
	delete(c.podNode, key)
	c.touchPod(key, node)
	c.groups.remove(key)
	if ni, ok := c.nodes[node]; ok {
		ni.RemovePod(key)
	} else if m := c.orphans[node]; m != nil {
		delete(m, key)
		if len(m) == 0 {
			delete(c.orphans, node)
		}
	}
}

// snapshot is the Cache seen through framework.Snapshot, under its lock.
type snapshot struct{ c *Cache }

func (s snapshot) Nodes() []*framework.NodeInfo { return s.c.order }

func (s snapshot) Node(name string) (*framework.NodeInfo, bool) {
	n, ok := s.c.nodes[name]
	return n, ok
}

func (s snapshot) NamespaceLabels(ns string) labels.Set { return s.c.namespaces[ns] }
