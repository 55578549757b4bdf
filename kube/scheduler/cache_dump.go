package scheduler

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/schedq/schedq/kube/framework"
)

// StateDump returns every field of the cache as canonical text: the
// nodes and their pods in order, the assumptions, orphans, namespaces,
// fingerprints, group counts, the gang gate's tally, retrying members, scaled groups, the pods
// seen deleted, the room index, kube-scheduler's cache as the mirror and
// upstream's own dump show it (but for upstream's generation numbers,
// which only ever grow), and the gang release state the cache points at.
// Objects are named by their addresses, so two dumps are equal only if
// the cache holds the very same objects. schedq scheduler logs it on
// SIGUSR2, as kube-scheduler logs its cache; two dumps compared tell a
// rollback (Cache.Mark, Rollback) that brings back exactly the marked
// cache from one that leaves a forward run's write behind. The mark
// itself is left out but for what it has noted written since. O(nodes +
// pods + goneCap). Safe for concurrent use.
func (c *Cache) StateDump() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	for _, name := range slices.Sorted(maps.Keys(c.nodes)) {
		ni := c.nodes[name]
		w("node %s %p obj=%p name=%s alloc=%v invalid=%v requested=%v", name, ni, ni.Node, ni.Name(), ni.Allocatable, ni.AllocatableInvalid, ni.Requested)
		for _, pi := range ni.Pods {
			w("  pod %s uid=%s info=%p obj=%p", framework.Key(pi.Pod), pi.Pod.UID, pi, pi.Pod)
		}
	}
	for i, ni := range c.order {
		w("order %d %s %p", i, ni.Name(), ni)
	}
	for _, k := range dumpKeys(c.podNode) {
		w("podNode %s %s", k, c.podNode[k])
	}
	for _, k := range dumpKeys(c.assumed) {
		a := c.assumed[k]
		w("assumed %s uid=%s node=%s b=%p doubt=%v", k, a.uid, a.node, a.b, a.doubt)
	}
	for _, node := range slices.Sorted(maps.Keys(c.orphans)) {
		for _, k := range dumpKeys(c.orphans[node]) {
			pi := c.orphans[node][k]
			w("orphan %s %s info=%p obj=%p", node, k, pi, pi.Pod)
		}
	}
	w("namespaces %v", c.namespaces)
	dumpIndex(w, "fp.nodes", &c.fp.nodes, func(a, b string) int { return strings.Compare(a, b) })
	dumpIndex(w, "fp.pods", &c.fp.pods, compareKeys)
	for _, k := range dumpKeys(c.groups.of) {
		w("group.of %s %s", k, c.groups.of[k])
	}
	w("group.count %v", c.groups.count)
	c.members.mu.Lock()
	for _, k := range dumpKeys(c.members.known) {
		e := c.members.known[k]
		w("members %s %s pending=%v placed=%v", k, e.group, e.pending, e.placed)
	}
	w("members.count %v minCount %v", c.members.count, c.members.minCount)
	c.members.mu.Unlock()
	for _, k := range dumpKeys(c.retrying) {
		h := c.retrying[k]
		w("retrying %s uid=%s by=%p latest=%p", k, h.uid, h.by, h.latest)
	}
	w("scaled %v", c.scaled)
	w("gone next=%d set=%v", c.gone.next, slices.Sorted(maps.Keys(c.gone.set)))
	for i, uid := range c.gone.ring {
		if uid != "" {
			w("gone.ring %d %s", i, uid)
		}
	}
	c.room.mu.Lock()
	for _, name := range slices.Sorted(maps.Keys(c.room.nodes)) {
		r := c.room.nodes[name]
		w("room %s alloc=%v used=%v pods=%d", name, r.alloc, r.used, r.pods)
	}
	for _, k := range dumpKeys(c.room.placed) {
		w("room.placed %s", k)
	}
	c.room.mu.Unlock()
	w("dirty nodes=%d pods=%d", len(c.dirty.nodes), len(c.dirty.pods))
	if m := c.mark; m != nil {
		w("mark touched=%v written=%d gone kept=%v", slices.Sorted(maps.Keys(m.touched)), len(m.written), m.gone != nil)
	}
	w("release %p events=%d", c.release.Load(), len(c.events))
	if m := c.up; m != nil {
		dumpUpstream(w, m)
	}
	return b.String()
}

// dumpUpstream writes the mirror's state and upstream's cache's dump,
// its generation numbers left out.
func dumpUpstream(w func(string, ...any), m *upstreamMirror) {
	for _, k := range dumpKeys(m.pods) {
		p := m.pods[k]
		w("up.pod %s src=%p given=%s assumed=%v upAssumed=%v", k, p.src, givenText(p), p.assumed, p.upAssumed)
	}
	for _, name := range slices.Sorted(maps.Keys(m.nodes)) {
		w("up.node %s %p", name, m.nodes[name])
	}
	m.errMu.Lock()
	w("up.removals %d err=%v", m.removals, m.err)
	m.errMu.Unlock()
	d := m.c.Dump()
	w("up.assumed %v", sets.List(d.AssumedPods))
	for _, name := range slices.Sorted(maps.Keys(d.Nodes)) {
		ni := d.Nodes[name]
		w("up.nodeinfo %s node=%p requested=%+v nonzero=%+v alloc=%+v ports=%v images=%v pvcs=%v affinity=%d anti=%d nonHost=%d",
			name, ni.Node(), *ni.Requested, *ni.NonZeroRequested, *ni.Allocatable, ni.UsedPorts, len(ni.ImageStates), ni.PVCRefCounts,
			len(ni.PodsWithAffinity), len(ni.PodsWithRequiredAntiAffinity), len(ni.PodsWithRequiredNonHostScopedAntiAffinity))
		for _, pi := range ni.Pods {
			p := pi.GetPod()
			w("  up.pod %s/%s given=%v", p.Namespace, p.Name, m.pods[framework.Key(p)].given == p)
		}
	}
}

// dumpIndex writes a timeIndex, its keys sorted by cmpKey.
func dumpIndex[K comparable](w func(string, ...any), name string, x *timeIndex[K], cmpKey func(a, b K) int) {
	w("%s all=%x latest=%d", name, x.all, x.latest)
	for _, k := range slices.SortedFunc(maps.Keys(x.entries), cmpKey) {
		e := x.entries[k]
		w("%s.entry %v hash=%x at=%d obj=%p", name, k, e.hash, e.at, e.obj)
	}
	for _, bk := range x.buckets {
		w("%s.bucket at=%d xor=%x keys=%v", name, bk.at, bk.xor, slices.SortedFunc(maps.Keys(bk.keys), cmpKey))
	}
}

// givenText names the object the mirror gave upstream: src itself, or
// a copy of it placed on a node (placedObject), which a rollback may give
// anew, equal.
func givenText(p mirroredPod) string {
	if p.given == p.src {
		return "src"
	}
	if p.given != nil && SameButNode(p.src, p.given) {
		return "src on " + p.given.Spec.NodeName
	}
	return fmt.Sprintf("%p", p.given)
}

func compareKeys(a, b types.NamespacedName) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// dumpKeys returns m's keys in order.
func dumpKeys[V any](m map[types.NamespacedName]V) []types.NamespacedName {
	return slices.SortedFunc(maps.Keys(m), compareKeys)
}
