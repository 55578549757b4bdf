package scheduler

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
)

// cacheMark is the cache as Mark found it: copies of what pod writes
// change, and the nodes written since (touched), which Rollback restores.
type cacheMark struct {
	nodes      map[string]*v1.Node             // the node objects
	pods       map[string][]*framework.PodInfo // each node's pods, in order
	requested  map[string]framework.Resource
	podNode    map[types.NamespacedName]string
	assumed    map[types.NamespacedName]*assumption
	orphans    map[string]map[types.NamespacedName]*framework.PodInfo
	namespaces map[string]labels.Set
	fp         fingerprints
	groups     groupCounts
	touched    map[string]struct{}
}

// Mark records the cache's state so that Rollback can bring it back: a
// cache built once (nodes and bound pods) then serves many forward runs,
// each rolled back after it (the forecast's what-if runs do so). Only pod
// writes are undone: Rollback fails if a node or namespace changed.
// Marking a marked cache replaces the mark. O(nodes + pods) copies of
// references, no pod is converted again. Safe for concurrent use, but a
// rollback undoes every writer's changes since the mark.
func (c *Cache) Mark() {
	c.lock()
	defer c.unlock()
	m := &cacheMark{nodes: make(map[string]*v1.Node, len(c.nodes)), pods: make(map[string][]*framework.PodInfo, len(c.nodes)),
		requested: make(map[string]framework.Resource, len(c.nodes)),
		podNode:   maps.Clone(c.podNode), assumed: maps.Clone(c.assumed),
		orphans: map[string]map[types.NamespacedName]*framework.PodInfo{}, namespaces: maps.Clone(c.namespaces),
		fp:     fingerprints{nodes: c.fp.nodes.clone(), pods: c.fp.pods.clone()},
		groups: groupCounts{of: maps.Clone(c.groups.of), count: maps.Clone(c.groups.count)}, touched: map[string]struct{}{}}
	for name, ni := range c.nodes {
		m.nodes[name] = ni.Node
		m.pods[name] = slices.Clone(ni.Pods)
		r := ni.Requested
		r.Scalar = maps.Clone(r.Scalar)
		m.requested[name] = r
	}
	for name, o := range c.orphans {
		m.orphans[name] = maps.Clone(o)
	}
	c.mark = m
}

// Rollback brings the cache back to its state at the last Mark, and
// keeps the mark for the next rollback. Assumed pods since the mark are
// dropped without their bindings' aborts. kube-scheduler's cache (see
// TrackUpstream) gets the pods of every node written since the mark
// again, in the mark's order, so that it holds what it would have held
// had the cache been built up to the mark and no further. It fails,
// changing nothing, without a mark or if a node or namespace changed
// since. O(nodes + pods) copies, plus upstream's work for the pods of the
// nodes written since the mark. Safe for concurrent use.
func (c *Cache) Rollback() error {
	c.lock()
	defer c.unlock()
	m := c.mark
	if m == nil {
		return errors.New("cache rollback: no mark")
	}
	if !m.sameNodes(c) || !maps.EqualFunc(m.namespaces, c.namespaces, labels.Equals) {
		return errors.New("cache rollback: a node or namespace changed since the mark")
	}
	for name := range m.touched {
		if c.nodes[name] == nil {
			return fmt.Errorf("cache rollback: a pod on node %q, which the cache does not know, changed since the mark", name)
		}
	}
	var gone []*framework.PodInfo // upstream's pods of the touched nodes
	for name := range m.touched {
		ni := c.nodes[name]
		gone = append(gone, ni.Pods...)
		ni.Pods = slices.Clone(m.pods[name])
		r := m.requested[name]
		r.Scalar = maps.Clone(r.Scalar)
		ni.Requested = r
	}
	for key := range c.podNode {
		if _, ok := m.podNode[key]; !ok {
			c.dirty.pods[key] = struct{}{} // placed since: the room index forgets it
		}
	}
	c.podNode = maps.Clone(m.podNode)
	c.assumed = maps.Clone(m.assumed)
	c.orphans = map[string]map[types.NamespacedName]*framework.PodInfo{}
	for name, o := range m.orphans {
		c.orphans[name] = maps.Clone(o)
	}
	c.fp = fingerprints{nodes: m.fp.nodes.clone(), pods: m.fp.pods.clone()}
	c.groups = groupCounts{of: maps.Clone(m.groups.of), count: maps.Clone(m.groups.count)}
	if c.up != nil {
		c.up.reload(c, gone, m.touched)
	}
	for name := range m.touched {
		c.dirty.nodes[name] = struct{}{}
		for _, pi := range c.nodes[name].Pods {
			c.dirty.pods[framework.Key(pi.Pod)] = struct{}{}
		}
	}
	for _, pi := range gone {
		c.dirty.pods[framework.Key(pi.Pod)] = struct{}{}
	}
	clear(m.touched)
	return nil
}

// sameNodes reports whether c has the mark's nodes, with the same objects.
func (m *cacheMark) sameNodes(c *Cache) bool {
	if len(c.nodes) != len(m.nodes) {
		return false
	}
	for name, ni := range c.nodes {
		if n, ok := m.nodes[name]; !ok || n != ni.Node {
			return false
		}
	}
	return true
}

// markTouched notes a node written since the mark.
func (c *Cache) markTouched(node string) {
	if c.mark != nil {
		c.mark.touched[node] = struct{}{}
	}
}

// reload takes the pods gone from upstream's cache and gives it the pods
// of the touched nodes again, in the nodes' order. The caller holds c's
// write lock.
func (m *upstreamMirror) reload(c *Cache, gone []*framework.PodInfo, touched map[string]struct{}) {
	for _, pi := range gone {
		key := framework.Key(pi.Pod)
		if old, had := m.pods[key]; had {
			if old.assumed {
				m.record(m.c.ForgetPod(m.logger, old.given))
			} else {
				m.record(m.c.RemovePod(m.logger, old.given))
			}
			delete(m.pods, key)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(touched)) {
		for _, pi := range c.nodes[name].Pods {
			m.syncPod(c, framework.Key(pi.Pod))
		}
	}
}

// clone returns a copy that shares no map or slice with x.
func (x *timeIndex[K]) clone() timeIndex[K] {
	y := *x
	y.entries = maps.Clone(x.entries)
	y.buckets = slices.Clone(x.buckets)
	for i := range y.buckets {
		y.buckets[i].keys = maps.Clone(y.buckets[i].keys)
	}
	return y
}
