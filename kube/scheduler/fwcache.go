package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq/kube/internal/encbuf"
)

// upstreamMirror keeps kube-scheduler's own cache (backend/cache) equal to
// the Cache, so that a cycle can take upstream's incremental immutable
// snapshot (UpdateSnapshot) and run upstream's plugins on it with no lock
// of schedq's held. The Cache feeds it from publishLocked, under its write
// lock, with what each write changed: every writer (nodes, pods,
// assumptions, forgets, trials, aborts) goes through that one point, so
// the two caches cannot drift, and a trial that is undone before the lock
// is released is never seen.
//
// Locks: upstream's cache has a lock of its own, a leaf taken under the
// Cache's lock (by publishLocked and Cache.UpdateSnapshot), never the other
// way round. Its fields are guarded by the Cache's lock.
//
// Goroutines: upstream's New starts one that exports its size metrics
// every second until its context ends. The mirror gives it a context that
// is already cancelled, so the goroutine returns before its first export
// and nothing runs on the wall clock (the simulator stays deterministic).
type upstreamMirror struct {
	c      backendcache.Cache
	logger klog.Logger
	// pods are the pods given to c, nodes the node objects given.
	pods  map[types.NamespacedName]mirroredPod
	nodes map[string]*v1.Node
	// removals counts the nodes removed from c: while it stays the same,
	// a snapshot's NodeInfo of a node stays that node's (upstream updates
	// a snapshot's NodeInfos in place, and drops them only when their
	// node goes).
	removals uint64
	// err is the first error upstream's cache returned since the last
	// UpdateSnapshot, which reports it. errMu guards it: it is set under
	// the Cache's write lock but taken under its read lock.
	errMu sync.Mutex
	err   error
	// encA and encB are boundAsAssumed's buffers, kept for their memory.
	encA, encB []byte
}

// mirroredPod is a pod as upstream's cache holds it: src is the Cache's
// object, given the one given to upstream (src, or a copy of it with
// spec.nodeName set to the node it is assumed on, or the assumed object
// that src confirmed). assumed is the Cache's state, upAssumed upstream's:
// they differ once an assumption is confirmed by the assumed pod itself
// (see syncPod).
type mirroredPod struct {
	src, given         *v1.Pod
	assumed, upAssumed bool
}

func newUpstreamMirror() *upstreamMirror {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // see the type's comment: stops the metrics goroutine at once
	return &upstreamMirror{
		c:      backendcache.New(ctx, nil, false, false),
		logger: klog.Background(),
		pods:   map[types.NamespacedName]mirroredPod{},
		nodes:  map[string]*v1.Node{},
	}
}

// TrackUpstream makes the cache keep kube-scheduler's cache beside its own,
// from now on and with what it holds already, for UpdateSnapshot. Calling
// it again does nothing. O(nodes + pods) once, then O(1) per pod or node a
// write changes. Safe for concurrent use.
func (c *Cache) TrackUpstream() {
	c.lock()
	defer c.unlock()
	if c.up != nil {
		return
	}
	c.up = newUpstreamMirror()
	for name := range c.nodes {
		c.dirty.nodes[name] = struct{}{}
	}
	for key := range c.podNode {
		c.dirty.pods[key] = struct{}{}
	}
}

// UpdateSnapshot brings snap (from backendcache.NewEmptySnapshot, and
// given to nothing but this cache) up to date with the cache, changing
// only the nodes written since snap's last update, and returns the
// cluster state it shows (for the failure record). The cache must track
// upstream (TrackUpstream). It holds the cache's read lock only while it
// copies; the caller then reads snap with no lock, while writers go on.
// It fails if upstream's cache refused a write since the last call (the
// snapshot may then be wrong) or found itself inconsistent. Pods added to
// snap since (Snapshot.AssumePod, a group attempt's members) must be
// forgotten before the next call: they keep their nodes' generation, so
// the nodes the cache did not change are not copied again.
func (c *Cache) UpdateSnapshot(snap *backendcache.Snapshot) (clusterState, error) {
	st, _, err := c.updateSnapshot(snap)
	return st, err
}

// updateSnapshot is UpdateSnapshot that also returns how many nodes the
// cache had removed when snap was brought up to date (see
// upstreamMirror.removals).
func (c *Cache) updateSnapshot(snap *backendcache.Snapshot) (clusterState, uint64, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.up == nil {
		return clusterState{}, 0, errors.New("the cache does not track kube-scheduler's cache (TrackUpstream)")
	}
	st := c.stateLocked()
	err := c.up.c.UpdateSnapshot(c.up.logger, snap)
	if upErr := c.up.takeErr(); upErr != nil {
		err = errors.Join(upErr, err)
	}
	return st, c.up.removals, err
}

// takeErr returns and clears the recorded error.
func (m *upstreamMirror) takeErr() error {
	m.errMu.Lock()
	defer m.errMu.Unlock()
	err := m.err
	m.err = nil
	return err
}

// peekErr returns the recorded error, leaving it.
func (m *upstreamMirror) peekErr() error {
	m.errMu.Lock()
	defer m.errMu.Unlock()
	return m.err
}

// setErr records err (nil: none) in place of the recorded error
// (Rollback gives back the marked one).
func (m *upstreamMirror) setErr(err error) {
	m.errMu.Lock()
	defer m.errMu.Unlock()
	m.err = err
}

// syncLocked applies to upstream's cache what the write that ends changed:
// the dirty nodes and pods of c. The caller holds c's write lock.
// O(changed nodes + changed pods x pods on their node).
func (m *upstreamMirror) syncLocked(c *Cache) {
	for name := range c.dirty.nodes {
		m.syncNode(c, name)
	}
	for key := range c.dirty.pods {
		m.syncPod(c, key)
	}
}

func (m *upstreamMirror) syncNode(c *Cache, name string) {
	var node *v1.Node
	if ni, ok := c.nodes[name]; ok {
		node = ni.Node
	}
	old, had := m.nodes[name]
	switch {
	case node == old:
	case node == nil:
		delete(m.nodes, name)
		m.removals++
		m.record(m.c.RemoveNode(m.logger, old))
	case !had:
		m.nodes[name] = node
		m.c.AddNode(m.logger, node)
	default:
		m.nodes[name] = node
		m.c.UpdateNode(m.logger, old, node)
	}
}

// syncPod makes upstream's cache hold key as c does: on the same node,
// the same object, assumed or not. A pod that changed is removed and
// added again, always with the object upstream holds, so that none of
// upstream's consistency checks (which exit the process) can fire.
func (m *upstreamMirror) syncPod(c *Cache, key types.NamespacedName) {
	var pod *v1.Pod
	node, placed := c.podNode[key]
	if placed {
		pod = c.podLocked(key)
	}
	_, assumed := c.assumed[key]
	old, had := m.pods[key]
	if had && pod == old.src && assumed == old.assumed && node == old.given.Spec.NodeName {
		return
	}
	if had && old.assumed && !assumed && pod != nil && node == old.given.Spec.NodeName &&
		pod.Spec.SchedulingGroup == nil && m.boundAsAssumed(old.given, pod) {
		// The assumed pod, bound where it was assumed and otherwise
		// unchanged but for what the binding wrote (boundAsAssumed):
		// upstream's cache keeps the assumed entry rather than removing
		// it and adding it again (a new PodInfo, its requests computed
		// again: about 11 KB allocated per pod on a real cluster, and
		// two changes of the node that the next snapshot copies). Its
		// assumed state has no effect here: the expiry goroutine is
		// stopped and FinishBinding never called. Pod group members are
		// left out: upstream counts their assumed and bound states
		// apart.
		m.pods[key] = mirroredPod{src: pod, given: old.given, upAssumed: true}
		return
	}
	if had {
		if old.upAssumed {
			m.record(m.c.ForgetPod(m.logger, old.given))
		} else {
			m.record(m.c.RemovePod(m.logger, old.given))
		}
		delete(m.pods, key)
	}
	if pod == nil {
		return
	}
	given := pod
	if pod.Spec.NodeName != node {
		given = placedObject(c, key, pod, node)
	}
	m.pods[key] = mirroredPod{src: pod, given: given, assumed: assumed, upAssumed: assumed}
	if assumed {
		m.record(m.c.AssumePod(m.logger, given))
		return
	}
	m.record(m.c.AddPod(m.logger, given))
}

// boundAsAssumed reports whether bound is the assumed object as an API
// server's binding leaves it: equal to it (SameButNode), or equal but for
// metadata.resourceVersion and managedFields, spec.nodeName, the
// PodScheduled condition and status.nominatedNodeName cleared, which are
// all a binding writes but labels (PodTopologyLabels: a pod bound with
// labels of its node's is not the assumed one). No plugin and no part of
// schedq reads those from the pods of upstream's snapshot (a victim's
// deletion is preconditioned on its UID; its Preempted event names the
// pod at the assumed object's resource version until the pod's next
// update). The pods are compared by their protobuf encodings, in m's
// buffers: about 2 us and no allocation for a pod as an API server
// serves it, where reflect.DeepEqual took about 8 times that. The caller
// holds the Cache's write lock.
func (m *upstreamMirror) boundAsAssumed(assumed, bound *v1.Pod) bool {
	if sameBytesButNode(assumed, bound) {
		return true
	}
	if assumed.TypeMeta != bound.TypeMeta || assumed.UID != bound.UID {
		return false
	}
	if n := bound.Status.NominatedNodeName; n != "" && n != assumed.Status.NominatedNodeName {
		return false
	}
	var ok bool
	if m.encA, ok = appendBindingInvariant(m.encA[:0], assumed); !ok {
		return false
	}
	if m.encB, ok = appendBindingInvariant(m.encB[:0], bound); !ok {
		return false
	}
	return bytes.Equal(m.encA, m.encB)
}

// appendBindingInvariant appends to buf, each after its length, the
// protobuf encodings of what of p a binding does not write (see
// boundAsAssumed): its metadata without resourceVersion and
// managedFields, its spec without nodeName, its status without
// conditions and nominatedNodeName, and its conditions but PodScheduled.
// Kubernetes' generated encoders write every field that is set, map
// entries in the order of their keys and quantities in their canonical
// form, so two pods' encodings are equal exactly when those values are
// (an empty list or map equals an absent one). False if a part could not
// be encoded. Each part is encoded by its concrete type's methods, so
// that the copies do not escape. O(p's fields); it allocates only when
// buf must grow, or to print a quantity's canonical form.
func appendBindingInvariant(buf []byte, p *v1.Pod) ([]byte, bool) {
	meta := p.ObjectMeta
	meta.ResourceVersion, meta.ManagedFields = "", nil
	var start, n int
	var err error
	buf, start = encbuf.Grow(buf, meta.Size())
	if n, err = meta.MarshalToSizedBuffer(buf[start:]); err != nil || start+n != len(buf) {
		return buf, false
	}
	spec := p.Spec
	spec.NodeName = ""
	buf, start = encbuf.Grow(buf, spec.Size())
	if n, err = spec.MarshalToSizedBuffer(buf[start:]); err != nil || start+n != len(buf) {
		return buf, false
	}
	status := p.Status
	status.Conditions, status.NominatedNodeName = nil, ""
	buf, start = encbuf.Grow(buf, status.Size())
	if n, err = status.MarshalToSizedBuffer(buf[start:]); err != nil || start+n != len(buf) {
		return buf, false
	}
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type == v1.PodScheduled {
			continue
		}
		buf, start = encbuf.Grow(buf, c.Size())
		if n, err = c.MarshalToSizedBuffer(buf[start:]); err != nil || start+n != len(buf) {
			return buf, false
		}
	}
	return buf, true
}

// placedObject returns pod placed on node for upstream's cache: the
// object the binding of its assumption carries (the framework path's
// assumed pod, which the binder is given and a simulator keeps as the
// bound pod, so that confirming it changes nothing upstream and holds no
// second copy), if it is pod on node; else a shallow copy of pod with
// spec.nodeName set. The caller holds c's write lock.
func placedObject(c *Cache, key types.NamespacedName, pod *v1.Pod, node string) *v1.Pod {
	if a := c.assumed[key]; a != nil && a.b != nil && a.b.fw != nil {
		if p := a.b.fw.pod; p.UID == pod.UID && p.Spec.NodeName == node && SameButNode(pod, p) {
			return p
		}
	}
	cp := *pod
	cp.Spec.NodeName = node
	return &cp
}

func (m *upstreamMirror) record(err error) {
	if err == nil {
		return
	}
	m.errMu.Lock()
	defer m.errMu.Unlock()
	if m.err == nil {
		m.err = fmt.Errorf("kube-scheduler's cache: %w", err)
	}
}
