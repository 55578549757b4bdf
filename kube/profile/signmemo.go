package profile

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"

	"github.com/schedq/schedq/kube/internal/encbuf"
)

// signMemo is the last signature SignPod computed, with the pod it was
// computed for and the synchronous factory's write count then.
type signMemo struct {
	mu     sync.Mutex
	pod    *v1.Pod
	sig    fwk.PodSignature
	writes uint64
	// enc is encFor's appendSignedEncoding (encFor is pod once a
	// comparison needed it), scratch the last pod's compared with it:
	// both kept for their memory.
	enc, scratch []byte
	encFor       *v1.Pod
}

// SignPod returns the framework's signature of pod, as upstream's
// Framework.SignPod computes it. A pod equal to the last one signed but
// for its name and UID, its annotations, its creation time, its resource
// version and its managed fields (signMemo.same) gets that pod's
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
	if m.pod != nil && m.writes == writes && m.same(pod) {
		return m.sig
	}
	sig := f.fwk.SignPod(ctx, pod)
	m.pod, m.sig, m.writes = pod, sig, writes
	return sig
}

// same reports whether m.pod and pod are equal in every field
// but metadata's name, uid, annotations, creationTimestamp,
// resourceVersion and managedFields. No signer of kube-scheduler
// v1.37.2's registry or of schedq's reads those six (the framework signs
// the scheduler's name, and each plugin the spec fields it filters and
// scores by, and InterPodAffinity the labels); pods made one by one from
// a template differ in them, as a trace's or a forecast's pods do in
// their creation time and declared runtime, and pods from an API server
// in their resource version and managed fields (whose timestamps differ).
// Parts whose bytes are the same (the pods share every list, map and
// pointer in them, as pods copied from one template do) are equal
// without more; else the two pods' protobuf encodings of the other
// fields are compared (appendSignedEncoding), which is equality of their
// values as the API defines it: a list or map that is empty equals one
// that is absent, and a quantity equals the same quantity written
// otherwise ("0.1" and "100m"), where reflect.DeepEqual tells them apart;
// no plugin does.
// m.pod's encoding is kept for the next pod and the two buffers reused:
// no allocation once they have grown, where reflect.DeepEqual of two pods
// decoded apart (an API server's: they share no list, map or pointer)
// took about ten times the CPU and allocated. When pod differs, its
// encoding, if made, becomes the memo's (SignPod then remembers pod).
// The caller holds m.mu; m.pod is not nil.
func (m *signMemo) same(pod *v1.Pod) bool {
	a := m.pod
	switch {
	case a == pod:
		return true
	case a.TypeMeta != pod.TypeMeta:
		return false
	case sameBytesForSigning(a, pod):
		return true
	}
	if m.encFor != a {
		m.encFor = nil
		var ok bool
		if m.enc, ok = appendSignedEncoding(m.enc[:0], a); !ok {
			return false
		}
		m.encFor = a
	}
	var ok bool
	if m.scratch, ok = appendSignedEncoding(m.scratch[:0], pod); !ok {
		return false
	}
	if bytes.Equal(m.enc, m.scratch) {
		return true
	}
	m.enc, m.scratch, m.encFor = m.scratch, m.enc, pod
	return false
}

// sameBytesForSigning reports whether a and b have the same bytes in
// their type, in their metadata but the six fields signMemo.same leaves
// out, in their spec and in their status: then every pointer, slice, map
// and string in those is the same, so they are equal (the pod has no
// floating-point field, where a NaN's bytes would equal themselves;
// TestPodHasNoFloats). False says nothing: padding may differ. O(1).
func sameBytesForSigning(a, b *v1.Pod) bool {
	am, bm := signedMeta(a), signedMeta(b)
	return a.TypeMeta == b.TypeMeta && sameBytes(&am, &bm) && sameBytes(&a.Spec, &b.Spec) && sameBytes(&a.Status, &b.Status)
}

// signedMeta is p's metadata with the six fields signMemo.same leaves
// out cleared.
func signedMeta(p *v1.Pod) metav1.ObjectMeta {
	m := p.ObjectMeta
	m.Name, m.UID, m.Annotations, m.CreationTimestamp = "", "", nil, metav1.Time{}
	m.ResourceVersion, m.ManagedFields = "", nil
	return m
}

// appendSignedEncoding appends to buf the protobuf encodings of p's
// signedMeta, spec and status, each after its length, and returns it;
// false if one of them could not be encoded. Kubernetes' generated
// encoders write every field that is set, map entries in the order of
// their keys, and quantities in their canonical form, so two pods'
// encodings are equal exactly when their values are (signMemo.same).
// O(p's fields); it allocates only when buf must grow, or for a quantity
// whose canonical form is not kept.
func appendSignedEncoding(buf []byte, p *v1.Pod) ([]byte, bool) {
	// Each part is encoded by its concrete type's methods: through an
	// interface, the metadata's copy would escape to the heap.
	meta := signedMeta(p)
	var start, n int
	var err error
	buf, start = encbuf.Grow(buf, meta.Size())
	if n, err = meta.MarshalToSizedBuffer(buf[start:]); err != nil || start+n != len(buf) {
		return buf, false
	}
	buf, start = encbuf.Grow(buf, p.Spec.Size())
	if n, err = p.Spec.MarshalToSizedBuffer(buf[start:]); err != nil || start+n != len(buf) {
		return buf, false
	}
	buf, start = encbuf.Grow(buf, p.Status.Size())
	if n, err = p.Status.MarshalToSizedBuffer(buf[start:]); err != nil || start+n != len(buf) {
		return buf, false
	}
	return buf, true
}

// sameBytes reports whether *a and *b have the same bytes (see
// sameBytesForSigning).
func sameBytes[T any](a, b *T) bool {
	n := unsafe.Sizeof(*a)
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(a)), n), unsafe.Slice((*byte)(unsafe.Pointer(b)), n))
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
