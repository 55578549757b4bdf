package scheduler

import (
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
)

// roomIndex is what the wake budget's room ledger reads of the cache: each
// node's allocatable, what its pods request and how many they are, and
// which pods are placed. The cache's writers publish it, under the cache's
// write lock, as each write ends; the ledger reads it under the queue's
// lock. Its lock is a leaf: nothing else is locked while it is held, so
// the queue never waits for the cache's lock (see the lock order on
// Cache).
type roomIndex struct {
	mu     sync.Mutex
	nodes  map[string]nodeRoom
	placed map[types.NamespacedName]struct{}
}

// nodeRoom is one node's entry: copies, never shared with the cache.
type nodeRoom struct {
	alloc, used framework.Resource
	pods        int64
}

// dirty records what a write changed, for publishLocked.
type dirty struct {
	nodes map[string]struct{}
	pods  map[types.NamespacedName]struct{}
}

func newRoomIndex() roomIndex {
	return roomIndex{nodes: map[string]nodeRoom{}, placed: map[types.NamespacedName]struct{}{}}
}

// lock takes the cache's write lock; unlock publishes what the write
// changed to the room index and releases it. Every writer uses them.
func (c *Cache) lock() { c.mu.Lock() }

func (c *Cache) unlock() {
	c.publishLocked()
	c.mu.Unlock()
}

func (c *Cache) touchNode(name string) {
	c.dirty.nodes[name] = struct{}{}
	c.markTouched(name)
}

func (c *Cache) touchPod(key types.NamespacedName, node string) {
	c.dirty.pods[key] = struct{}{}
	c.markWritten(key)
	c.touchNode(node)
}

// publishLocked copies the nodes and pods the write changed into the room
// index, and into kube-scheduler's cache if the cache tracks it
// (TrackUpstream). O(changed nodes + changed pods). The caller holds the
// write lock.
func (c *Cache) publishLocked() {
	if len(c.dirty.nodes) == 0 && len(c.dirty.pods) == 0 {
		return
	}
	if c.up != nil {
		c.up.syncLocked(c)
	}
	r := &c.room
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range c.dirty.nodes {
		ni, ok := c.nodes[name]
		if !ok {
			delete(r.nodes, name)
			continue
		}
		r.nodes[name] = nodeRoom{alloc: cloneResource(ni.Allocatable), used: cloneResource(ni.Requested), pods: int64(len(ni.Pods))}
	}
	for key := range c.dirty.pods {
		if _, ok := c.podNode[key]; ok {
			r.placed[key] = struct{}{}
		} else {
			delete(r.placed, key)
		}
	}
	clear(c.dirty.nodes)
	clear(c.dirty.pods)
}

func cloneResource(r framework.Resource) framework.Resource {
	r.Scalar = maps.Clone(r.Scalar)
	return r
}

// NodeRoom returns the published allocatable of a node, what its pods
// request, and how many they are; ok is false for a node the cache does not
// know. The values are copies the caller must not change (they may be
// shared with later calls). It takes only the room index's lock, a leaf:
// it is safe to call under the queue's lock. O(1).
func (c *Cache) NodeRoom(node string) (alloc, used framework.Resource, pods int64, ok bool) {
	c.room.mu.Lock()
	defer c.room.mu.Unlock()
	n, ok := c.room.nodes[node]
	return n.alloc, n.used, n.pods, ok
}

// Placed reports whether the published cache holds the pod on a node,
// bound or assumed. Like NodeRoom, it takes only the room index's lock.
// O(1).
func (c *Cache) Placed(key types.NamespacedName) bool {
	c.room.mu.Lock()
	defer c.room.mu.Unlock()
	_, ok := c.room.placed[key]
	return ok
}
