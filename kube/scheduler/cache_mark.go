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
// change, and the nodes and pods written since (touched, pods), which
// Rollback restores.
type cacheMark struct {
	nodes      map[string]*v1.Node             // the node objects
	infos      map[string]*framework.NodeInfo  // and their NodeInfos
	pods       map[string][]*framework.PodInfo // each node's pods, in order
	requested  map[string]framework.Resource
	podNode    map[types.NamespacedName]string
	assumed    map[types.NamespacedName]*assumption
	retrying   map[types.NamespacedName]retryHold
	namespaces map[string]labels.Set
	fp         timeIndex[types.NamespacedName] // the pods' fingerprints
	groups     groupCounts
	members    *memberTally // a copy of the gang gate's tally
	touched    map[string]struct{}
	written    map[types.NamespacedName]struct{}
	// scaled is the cache's scaled, release its gang release state.
	scaled  map[string]int
	release *gangRelease
	// upErr is the error kube-scheduler's cache had recorded (nil if
	// none, or if the cache does not track it), for UpdateSnapshot.
	upErr error
	// gone is the cache's gone as it was at the mark, kept at the first
	// pod buried since (buryLocked); nil while none was.
	gone *goneRing
}

// Mark records the cache's state so that Rollback can bring it back: a
// cache built once (nodes and bound pods) then serves many forward runs,
// each rolled back after it (the forecast's what-if runs do so). Only pod
// writes are undone: Rollback fails if a node or namespace changed.
// An assumption marked comes back with its node, UID and doubt, and its
// binding; that binding is the scheduler's, not the cache's: whether it
// started or was aborted since is not undone (a forecast's base holds
// no assumption). Marking a marked cache replaces the mark. O(nodes +
// pods) copies of references, no pod is converted again. Safe for concurrent use, but a
// rollback undoes every writer's changes since the mark.
func (c *Cache) Mark() {
	c.lock()
	defer c.unlock()
	m := &cacheMark{nodes: make(map[string]*v1.Node, len(c.nodes)), infos: maps.Clone(c.nodes), pods: make(map[string][]*framework.PodInfo, len(c.nodes)),
		requested: make(map[string]framework.Resource, len(c.nodes)),
		podNode:   maps.Clone(c.podNode), assumed: make(map[types.NamespacedName]*assumption, len(c.assumed)), retrying: maps.Clone(c.retrying), namespaces: maps.Clone(c.namespaces),
		fp:      c.fp.pods.clone(),
		groups:  groupCounts{of: maps.Clone(c.groups.of), count: maps.Clone(c.groups.count)},
		members: c.members.clone(),
		touched: map[string]struct{}{}, written: map[types.NamespacedName]struct{}{},
		scaled: maps.Clone(c.scaled), release: c.release.Load()}
	if c.up != nil {
		m.upErr = c.up.peekErr()
	}
	for key, a := range c.assumed { // copies: a binding in doubt changes its own
		cp := *a
		m.assumed[key] = &cp
	}
	for name, ni := range c.nodes {
		m.nodes[name] = ni.Node
		m.pods[name] = slices.Clone(ni.Pods)
		r := ni.Requested
		r.Scalar = maps.Clone(r.Scalar)
		m.requested[name] = r
	}
	c.mark = m
}

// Rollback brings the cache back to its state at the last Mark, and
// keeps the mark for the next rollback. Assumed pods since the mark are
// dropped without their bindings' aborts, and the pods the handlers saw
// deleted or being deleted since are forgotten (Assume refuses them, a
// group's attempt does not count them), so that a run from the mark
// that gives a pod such a UID again is not refused it. The assumptions
// and retrying holds, the scaled groups, the gang release state and the
// error kube-scheduler's cache had recorded come back as marked (a
// forward run's scheduler that turned gang release on is not kept
// alive). kube-scheduler's cache (see
// TrackUpstream) gets the pods of every node written since the mark
// again, in the mark's order, so that it holds what it would have held
// had the cache been built up to the mark and no further. It fails,
// changing nothing, without a mark or if a node or namespace changed
// since (a node removed and added back as the same object included), a
// pod on a node the cache does not know, or a write kube-scheduler's
// cache refused; and, after the rollback, if that cache refused the
// reload: the cache must then be built again. StateDump shows every
// field it restores. O(nodes and pods
// written since), plus upstream's work for the pods of those nodes. Safe
// for concurrent use.
func (c *Cache) Rollback() error {
	c.lock()
	defer c.unlock()
	m := c.mark
	if m == nil {
		return errors.New("cache rollback: no mark")
	}
	if err := m.check(c); err != nil {
		return err
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
	for key := range m.written {
		m.restorePod(c, key)
		c.dirty.pods[key] = struct{}{}
	}
	c.fp.pods.latest = m.fp.latest
	c.members.restore(m.members) // the members placed and pending, as marked
	if m.gone != nil {           // the pods seen deleted since are forgotten
		c.gone, m.gone = *m.gone, nil
	}
	if !maps.Equal(c.scaled, m.scaled) { // PodGroups' minCounts raised or deleted since
		c.scaled = maps.Clone(m.scaled)
	}
	c.release.Store(m.release) // a forward run's scheduler's, if it turned gang release on
	var reloadErr error
	if c.up != nil {
		c.up.takeErr() // nil or the mark's (check), given back below
		c.up.reload(c, gone, m.touched)
		// The error the mark found is given to the next UpdateSnapshot
		// again, as the cache built to the mark gives it; one of the
		// reload's says upstream's cache is not the mark's.
		if err := c.up.takeErr(); err != nil {
			reloadErr = fmt.Errorf("cache rollback: %w", err)
		}
		c.up.setErr(m.upErr)
	}
	for name := range m.touched {
		c.dirty.nodes[name] = struct{}{}
	}
	clear(m.touched)
	clear(m.written)
	return reloadErr
}

// check refuses a rollback whose writes it cannot undo: a node or
// namespace changed, a pod written on a node the cache does not know, or
// a write kube-scheduler's cache refused (its state is then unknown).
// O(nodes written + namespaces).
func (m *cacheMark) check(c *Cache) error {
	if c.up != nil {
		if err := c.up.peekErr(); err != nil && err != m.upErr {
			return fmt.Errorf("cache rollback: since the mark, %w", err)
		}
	}
	if !maps.EqualFunc(m.namespaces, c.namespaces, labels.Equals) {
		return errors.New("cache rollback: a namespace changed since the mark")
	}
	if len(c.nodes) != len(m.nodes) {
		return errors.New("cache rollback: a node was added or removed since the mark")
	}
	for name := range m.touched {
		ni, was := c.nodes[name], m.nodes[name]
		switch {
		case ni == nil && was == nil:
			return fmt.Errorf("cache rollback: a pod on node %q, which the cache does not know, changed since the mark", name)
		case ni == nil || ni.Node != was || ni != m.infos[name]:
			// A node removed and added again, even as the same object,
			// is a new NodeInfo at the end of the nodes' order.
			return fmt.Errorf("cache rollback: node %q changed since the mark", name)
		}
	}
	return nil
}

// restorePod gives the pod key the node, assumption, fingerprint and
// group count it had at the mark. The caller holds c's write lock. O(1)
// besides the fingerprint's bucket.
func (m *cacheMark) restorePod(c *Cache, key types.NamespacedName) {
	if node, ok := m.podNode[key]; ok {
		c.podNode[key] = node
	} else {
		delete(c.podNode, key)
	}
	if a, ok := m.assumed[key]; ok {
		cp := *a // the mark's stays as marked for the next rollback
		c.assumed[key] = &cp
	} else {
		delete(c.assumed, key)
	}
	if h, ok := m.retrying[key]; ok {
		c.retrying[key] = h
	} else {
		delete(c.retrying, key)
	}
	c.fp.pods.remove(key)
	if e, ok := m.fp.entries[key]; ok {
		c.fp.pods.set(key, e.hash, e.at, e.obj)
	}
	c.groups.remove(key)
	if name, ok := m.groups.of[key]; ok {
		c.groups.of[key] = name
		c.groups.count[name]++
	}
}

// markTouched notes a node written since the mark.
func (c *Cache) markTouched(node string) {
	if c.mark != nil {
		c.mark.touched[node] = struct{}{}
	}
}

// markWritten notes a pod written since the mark.
func (c *Cache) markWritten(key types.NamespacedName) {
	if c.mark != nil {
		c.mark.written[key] = struct{}{}
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
