package scheduler

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fingerprints summarise what the cache holds, so that a failure record
// can say which cluster a pod was found unschedulable in, and a new
// leader can tell whether anything changed since (see failover.go). Each
// kind of object is a timeIndex: nodes by their latest change, assigned
// pods the API server confirmed (assumed pods are left out) by their bind
// second. Times are whole seconds on the API server's clock.
type fingerprints struct {
	nodes timeIndex[string]
	pods  timeIndex[types.NamespacedName]
}

func newFingerprints() fingerprints {
	return fingerprints{nodes: newTimeIndex[string](), pods: newTimeIndex[types.NamespacedName]()}
}

func (f *fingerprints) setNode(n *v1.Node) {
	f.nodes.set(n.Name, nodeHash(n), changedAt(&n.ObjectMeta), n)
}

func (f *fingerprints) removeNode(name string) { f.nodes.remove(name) }

func (f *fingerprints) setPod(key types.NamespacedName, p *v1.Pod) {
	f.pods.set(key, podHash(p), boundAt(p), p)
}

func (f *fingerprints) removePod(key types.NamespacedName) { f.pods.remove(key) }

// timeIndex keeps the XOR of the hashes of a set of objects, overall and
// per second of their timestamps, so that the XOR over a time range costs
// the seconds in it, not the objects; and the latest timestamp ever seen.
type timeIndex[K comparable] struct {
	all     uint64
	entries map[K]indexed
	buckets []bucket[K] // by at, ascending
	latest  int64
}

type indexed struct {
	hash uint64
	at   int64
	obj  any
}

// bucket holds the objects of one second.
type bucket[K comparable] struct {
	at   int64
	xor  uint64
	keys map[K]struct{}
}

func newTimeIndex[K comparable]() timeIndex[K] { return timeIndex[K]{entries: map[K]indexed{}} }

func (x *timeIndex[K]) set(key K, hash uint64, at int64, obj any) {
	x.remove(key)
	x.entries[key] = indexed{hash: hash, at: at, obj: obj}
	x.all ^= hash
	x.latest = max(x.latest, at)
	i, found := x.find(at)
	if !found {
		x.buckets = slices.Insert(x.buckets, i, bucket[K]{at: at, keys: map[K]struct{}{}})
	}
	x.buckets[i].xor ^= hash
	x.buckets[i].keys[key] = struct{}{}
}

func (x *timeIndex[K]) remove(key K) {
	e, ok := x.entries[key]
	if !ok {
		return
	}
	delete(x.entries, key)
	x.all ^= e.hash
	if i, found := x.find(e.at); found {
		b := &x.buckets[i]
		b.xor ^= e.hash
		delete(b.keys, key)
		if len(b.keys) == 0 {
			x.buckets = slices.Delete(x.buckets, i, i+1)
		}
	}
}

func (x *timeIndex[K]) find(at int64) (int, bool) {
	i := sort.Search(len(x.buckets), func(i int) bool { return x.buckets[i].at >= at })
	return i, i < len(x.buckets) && x.buckets[i].at == at
}

// xorRange is the XOR of the hashes of the objects with from <= at <= to.
func (x *timeIndex[K]) xorRange(from, to int64) uint64 {
	var h uint64
	for i, _ := x.find(from); i < len(x.buckets) && x.buckets[i].at <= to; i++ {
		h ^= x.buckets[i].xor
	}
	return h
}

// upTo is the XOR of the hashes of the objects with at <= to.
func (x *timeIndex[K]) upTo(to int64) uint64 {
	h := x.all
	for i := len(x.buckets) - 1; i >= 0 && x.buckets[i].at > to; i-- {
		h ^= x.buckets[i].xor
	}
	return h
}

// since returns the keys of the objects with at >= from, latest first.
func (x *timeIndex[K]) since(from int64) []K {
	var out []K
	for i := len(x.buckets) - 1; i >= 0 && x.buckets[i].at >= from; i-- {
		for k := range x.buckets[i].keys {
			out = append(out, k)
		}
	}
	return out
}

// latestNow is the latest timestamp among the objects held now.
func (x *timeIndex[K]) latestNow() int64 {
	if len(x.buckets) == 0 {
		return 0
	}
	return x.buckets[len(x.buckets)-1].at
}

// changedAt is the latest time the API server recorded a change of an
// object: its creation or the latest write of any of its field managers.
func changedAt(m *metav1.ObjectMeta) int64 {
	at := m.CreationTimestamp.Unix()
	for _, mf := range m.ManagedFields {
		if mf.Time != nil {
			at = max(at, mf.Time.Unix())
		}
	}
	return at
}

// boundAt is the second the API server bound p: its PodScheduled=True
// condition's transition, or its creation for a pod created bound.
func boundAt(p *v1.Pod) int64 {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Unix()
		}
	}
	return p.CreationTimestamp.Unix()
}

// hasher is an FNV-1a hash that takes strings, each one terminated so
// that ("ab", "c") and ("a", "bc") differ, and numbers, without
// allocating.
type hasher uint64

func newHasher() hasher { return 14695981039346656037 }

func (h *hasher) byte(b byte) { *h = (*h ^ hasher(b)) * 1099511628211 }

func (h *hasher) add(ss ...string) {
	for _, s := range ss {
		for i := 0; i < len(s); i++ {
			h.byte(s[i])
		}
		h.byte(0)
	}
}

func (h *hasher) addInt(v int64) {
	for range 8 {
		h.byte(byte(v))
		v >>= 8
	}
}

func (h *hasher) addMap(m map[string]string) {
	for _, k := range sortedKeys(m, &[8]string{}) {
		h.add(k, m[k])
	}
	h.add("}")
}

// sortedKeys returns m's keys, sorted, in buf if they fit (so that a
// small map's, the usual case, are sorted without allocating).
func sortedKeys[K ~string, V any](m map[K]V, buf *[8]K) []K {
	keys := buf[:0]
	if len(m) > len(buf) {
		keys = make([]K, 0, len(m))
	}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// addResources hashes a resource list by name and milli-value (a value
// too large for that still hashes the same every time).
func (h *hasher) addResources(rl v1.ResourceList) {
	for _, n := range sortedKeys(rl, &[8]v1.ResourceName{}) {
		q := rl[n]
		h.add(string(n))
		h.addInt(q.MilliValue())
	}
	h.add("}")
}

// nodeHash hashes what NodeUpdateEvents looks at: allocatable, labels,
// taints and the unschedulable flag, condition types and statuses,
// annotations, declared features and the pod preemption policy; and the
// UID, so that a recreated node differs. The last two are hashed only
// when set, so that a node without them hashes as it did before they
// were (a failure record written then still matches it).
func nodeHash(n *v1.Node) uint64 {
	h := newHasher()
	h.add(n.Name, string(n.UID), strconv.FormatBool(n.Spec.Unschedulable))
	h.addResources(n.Status.Allocatable)
	h.addMap(n.Labels)
	h.addMap(n.Annotations)
	for _, t := range n.Spec.Taints {
		h.add(t.Key, t.Value, string(t.Effect))
	}
	h.add("}")
	for _, c := range n.Status.Conditions {
		h.add(string(c.Type), string(c.Status))
	}
	if len(n.Status.DeclaredFeatures) > 0 {
		h.add("features")
		h.add(n.Status.DeclaredFeatures...)
	}
	if pp := n.Spec.PodPreemptionPolicy; pp != nil {
		h.add("preemption")
		h.add(pp.DisableResizePreemption...)
	}
	return uint64(h)
}

// podHash hashes what an assigned pod gives the scheduling of others:
// where it is, its labels, the requests of its containers and overhead.
func podHash(p *v1.Pod) uint64 {
	h := newHasher()
	h.add(string(p.UID), p.Namespace, p.Name, p.Spec.NodeName)
	h.addMap(p.Labels)
	for _, cs := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			h.addResources(cs[i].Resources.Requests)
		}
		h.add("]")
	}
	h.addResources(p.Spec.Overhead)
	if r := p.Spec.Resources; r != nil {
		h.addResources(r.Requests)
	}
	return uint64(h)
}

// selfHash hashes what a pending pod's own scheduling depends on: its spec
// and labels.
func selfHash(p *v1.Pod) uint64 {
	h := newHasher()
	spec, _ := json.Marshal(p.Spec) // a PodSpec always marshals
	h.add(string(p.UID), string(spec))
	h.addMap(p.Labels)
	return uint64(h)
}
