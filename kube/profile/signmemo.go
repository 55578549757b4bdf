package profile

import (
	"bytes"
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
)

// signMemo is the last signature SignPod computed, with the pod it was
// computed for and the synchronous factory's write count then.
type signMemo struct {
	mu     sync.Mutex
	pod    *v1.Pod
	sig    fwk.PodSignature
	writes uint64
}

// SignPod returns the framework's signature of pod, as upstream's
// Framework.SignPod computes it. A pod equal to the last one signed but
// for its name and UID, its annotations, its creation time, its resource
// version and its managed fields (sameForSigning) gets that pod's
// signature again while no object a signer reads has been added, updated
// or deleted since: every signer of the registry reads nothing but the
// pod's fields, and none of those six, except PodTopologySpread's
// (spreadSigner), which also reads the Services and controllers of its
// namespace, and NodeResourcesFit's and BalancedAllocation's, which also
// read the DeviceClasses that serve extended resources (the DRA
// manager's resolver). With the synchronous
// informers (the simulator's) any write counts; on a real cluster, the
// writes of those kinds, which the informers' handlers count
// (signInputs). Upstream's
// sign metrics are then not observed for that pod. The signature's bytes
// are shared: callers must not change them.
//
// O(the pod's fields) when reused (one comparison, which skips what the
// two pods share), else upstream's cost (each signer's fragments, and
// JSON). Safe for concurrent use.
func (f *Framework) SignPod(ctx context.Context, pod *v1.Pod) fwk.PodSignature {
	if f.signWrites == nil {
		return f.fwk.SignPod(ctx, pod)
	}
	m := &f.signs
	m.mu.Lock()
	defer m.mu.Unlock()
	writes := f.signWrites.Load()
	if m.pod != nil && m.writes == writes && sameForSigning(m.pod, pod) {
		return m.sig
	}
	sig := f.fwk.SignPod(ctx, pod)
	m.pod, m.sig, m.writes = pod, sig, writes
	return sig
}

// sameForSigning reports whether pods a and b are equal in every field
// but metadata's name, uid, annotations, creationTimestamp,
// resourceVersion and managedFields
// (reflect.DeepEqual: exactly, with nil and empty apart; maps and slices
// the two share compare at once). No signer of kube-scheduler v1.37.2's
// registry or of schedq's reads those six (the framework signs the
// scheduler's name, and each plugin the spec fields it filters and
// scores by, and InterPodAffinity the labels); pods made one by one from
// a template differ in them, as a trace's or a forecast's pods do in
// their creation time and declared runtime, and pods from an API server
// in their resource version and managed fields (whose timestamps differ).
// Each part whose bytes are the same (the pods share every list, map and
// pointer in it, as pods copied from one template do) is equal without a
// walk of its fields.
func sameForSigning(a, b *v1.Pod) bool {
	if a == b {
		return true
	}
	if a.TypeMeta != b.TypeMeta {
		return false
	}
	am, bm := a.ObjectMeta, b.ObjectMeta
	am.Name, am.UID, am.Annotations, am.CreationTimestamp = bm.Name, bm.UID, bm.Annotations, bm.CreationTimestamp
	am.ResourceVersion, am.ManagedFields = bm.ResourceVersion, bm.ManagedFields
	return deepEqual(&am, &bm) && deepEqual(&a.Spec, &b.Spec) && deepEqual(&a.Status, &b.Status)
}

// deepEqual is reflect.DeepEqual(a, b) for T without floating-point
// fields (a NaN is the one value whose bytes can be the same while
// DeepEqual says it differs): when *a and *b have the same bytes, every
// pointer, slice, map and string in them is the same, so they are equal.
// Bytes that differ (padding included) fall back to the walk.
func deepEqual[T any](a, b *T) bool {
	n := unsafe.Sizeof(*a)
	if bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(a)), n), unsafe.Slice((*byte)(unsafe.Pointer(b)), n)) {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// signInputs returns the count of writes of the objects a signer reads:
// classWrites, the DeviceClass events the DRA manager's class resolver
// has taken (NodeResourcesFit and BalancedAllocation do not sign a pod
// whose extended resource a class serves; nil: none counted), and, if
// fw runs PodTopologySpread, the writes of the objects spreadSigner
// reads (Services, ReplicationControllers, ReplicaSets, StatefulSets),
// kept by handlers on factory's informers of those kinds. No other
// signer reads an object. The handlers count each event after the
// informer's store (or the resolver) has it, so a signature reused
// meanwhile is one computed an event earlier, as a lister behind the API
// server gives. O(1).
func signInputs(fw framework.Framework, factory informers.SharedInformerFactory, classWrites *atomic.Uint64) (*atomic.Uint64, error) {
	n := classWrites
	if n == nil {
		n = &atomic.Uint64{}
	}
	if !runsPlugin(fw, podtopologyspread.Name) {
		return n, nil
	}
	bump := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { n.Add(1) },
		UpdateFunc: func(any, any) { n.Add(1) },
		DeleteFunc: func(any) { n.Add(1) },
	}
	for _, inf := range []cache.SharedIndexInformer{
		factory.Core().V1().Services().Informer(),
		factory.Core().V1().ReplicationControllers().Informer(),
		factory.Apps().V1().ReplicaSets().Informer(),
		factory.Apps().V1().StatefulSets().Informer(),
	} {
		if _, err := inf.AddEventHandler(bump); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// runsPlugin reports whether fw runs the plugin name at any extension
// point. O(plugins).
func runsPlugin(fw framework.Framework, name string) bool {
	p := fw.ListPlugins()
	if p == nil {
		return false
	}
	for _, set := range []config.PluginSet{p.PreEnqueue, p.QueueSort, p.PreFilter, p.Filter, p.PostFilter,
		p.PreScore, p.Score, p.Reserve, p.Permit, p.PreBind, p.Bind, p.PostBind} {
		for _, pl := range set.Enabled {
			if pl.Name == name {
				return true
			}
		}
	}
	return false
}
