package profile

import (
	"bytes"
	"context"
	"encoding/binary"
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

// signMemo is SignPod's memo: the signatures it computed since the
// write count (Framework.signWrites) was last another, by what signKey
// reads of each pod signed, and the last pod signed with its signature
// (read first: a pod that shares its bytes with it needs no key).
// The trace's pods come in some 140 signatures, each in turn, and a
// cycle of a pod with claims signs the pod (which upstream's
// DynamicResources refuses to sign) and its copy without claims
// (SignWithoutClaims): a memo of the last pod alone answered 2% of the
// calls.
type signMemo struct {
	mu      sync.Mutex
	writes  uint64
	last    *v1.Pod
	lastSig fwk.PodSignature
	byKey   map[string]fwk.PodSignature
	// scratch holds the key of the pod being signed, kept for its
	// memory.
	scratch []byte
}

// signMemoByKey turns on signMemo's signatures by key; tests turn it
// off to compare with a memo of the last pod alone.
var signMemoByKey = true

// signMemoMax bounds the signatures signMemo keeps by key; past it they
// are dropped, and kept again as pods come.
const signMemoMax = 1024

// SignPod returns the framework's signature of pod, as upstream's
// Framework.SignPod computes it. A pod equal to one signed before but
// for its name and UID, its annotations, its creation time, its resource
// version and its managed fields (signKey) gets that pod's
// signature again while no object a signer reads has been added, updated
// or deleted since: every signer of the registry reads nothing but the
// pod's fields, and none of those six, except PodTopologySpread's
// (spreadSigner), which also reads the Services and controllers of its
// namespace, and NodeResourcesFit's and BalancedAllocation's, which also
// read the DeviceClasses that serve extended resources (the DRA
// manager's resolver). The writes of those kinds count: on the
// synchronous informers (the simulator's), as the factory makes them
// (syncFactory.wrote; a binding or a claim allocated does not reset the
// memo); on a real cluster, as the informers' handlers see them
// (signInputs). Upstream's
// sign metrics are then not observed for that pod. The signature's bytes
// are shared: callers must not change them.
//
// O(1) for a pod that shares its bytes with the last one signed, else
// O(the pod's fields) when reused (its key encoded and looked up), else
// upstream's cost (each signer's fragments, and JSON). Safe for
// concurrent use.
func (f *Framework) SignPod(ctx context.Context, pod *v1.Pod) fwk.PodSignature {
	if f.signWrites == nil {
		return f.fwk.SignPod(ctx, pod)
	}
	m := &f.signs
	m.mu.Lock()
	defer m.mu.Unlock()
	if writes := f.signWrites.Load(); m.writes != writes || m.byKey == nil {
		m.writes, m.last, m.lastSig = writes, nil, nil
		if m.byKey == nil {
			m.byKey = map[string]fwk.PodSignature{}
		}
		clear(m.byKey)
	}
	if m.last != nil && (m.last == pod || sameBytesForSigning(m.last, pod)) {
		return m.lastSig
	}
	ok := false
	if signMemoByKey {
		m.scratch, ok = signKey(m.scratch[:0], pod)
	}
	if ok {
		if sig, hit := m.byKey[string(m.scratch)]; hit {
			m.last, m.lastSig = pod, sig
			return sig
		}
	}
	sig := f.fwk.SignPod(ctx, pod)
	if ok {
		if len(m.byKey) >= signMemoMax {
			clear(m.byKey)
		}
		m.byKey[string(m.scratch)] = sig
	}
	m.last, m.lastSig = pod, sig
	return sig
}

// signKey appends to buf what SignPod's memo keys pod by, and returns
// it: pod's type, and the protobuf encodings of its metadata but its
// name, uid, annotations, creationTimestamp, resourceVersion and
// managedFields (signedMeta), its spec and its status but the names of
// its claims (appendSignedEncoding); false if they could not be encoded. No signer
// of kube-scheduler v1.37.2's registry or of schedq's reads those six
// (the framework signs the scheduler's name, and each plugin the spec
// fields it filters and scores by, and InterPodAffinity the labels);
// pods made one by one from a template differ in them, as a trace's or a
// forecast's pods do in their creation time and declared runtime, and
// pods from an API server in their resource version and managed fields
// (whose timestamps differ). Two pods' keys are equal exactly when the
// rest of their values are, as the API defines equality: a list or map
// that is empty equals one that is absent, and a quantity equals the
// same quantity written otherwise ("0.1" and "100m"), where
// reflect.DeepEqual tells them apart; no plugin does. O(pod's fields);
// it allocates only when buf must grow, or for a quantity whose
// canonical form is not kept (reflect.DeepEqual of two pods decoded
// apart, an API server's, took about ten times the CPU and allocated).
func signKey(buf []byte, pod *v1.Pod) ([]byte, bool) {
	for _, s := range []string{pod.Kind, pod.APIVersion} {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	return appendSignedEncoding(buf, pod)
}

// sameBytesForSigning reports whether a and b have the same bytes in
// their type, in their metadata but the six fields signKey leaves
// out, in their spec and in their status: then every pointer, slice, map
// and string in those is the same, so they are equal (the pod has no
// floating-point field, where a NaN's bytes would equal themselves;
// TestPodHasNoFloats). False says nothing: padding may differ. O(1).
func sameBytesForSigning(a, b *v1.Pod) bool {
	am, bm := signedMeta(a), signedMeta(b)
	return a.TypeMeta == b.TypeMeta && sameBytes(&am, &bm) && sameBytes(&a.Spec, &b.Spec) && sameBytes(&a.Status, &b.Status)
}

// signedMeta is p's metadata with the six fields signKey leaves
// out cleared.
func signedMeta(p *v1.Pod) metav1.ObjectMeta {
	m := p.ObjectMeta
	m.Name, m.UID, m.Annotations, m.CreationTimestamp = "", "", nil, metav1.Time{}
	m.ResourceVersion, m.ManagedFields = "", nil
	return m
}

// appendSignedEncoding appends to buf the protobuf encodings of p's
// signedMeta, spec and status but its resourceClaimStatuses, each after
// its length, and returns it; false if one of them could not be
// encoded. Kubernetes' generated encoders write every field that is
// set, map entries in the order of their keys, and quantities in their
// canonical form, so two pods' encodings are equal exactly when their
// values are (signKey). No signer reads the resourceClaimStatuses (the
// names of the claims made for the pod from its templates, one of its
// own per pod: with them, every pod of a claim template had a key of
// its own); upstream's DynamicResources refuses to sign a pod with
// claims by its spec alone. O(p's fields); it allocates only when buf
// must grow, or for a quantity whose canonical form is not kept.
func appendSignedEncoding(buf []byte, p *v1.Pod) ([]byte, bool) {
	// Each part is encoded by its concrete type's methods: through an
	// interface, the metadata's copy would escape to the heap.
	meta := signedMeta(p)
	status := p.Status
	if signKeyClaimStatusesOut {
		status.ResourceClaimStatuses = nil
	}
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
	buf, start = encbuf.Grow(buf, status.Size())
	if n, err = status.MarshalToSizedBuffer(buf[start:]); err != nil || start+n != len(buf) {
		return buf, false
	}
	return buf, true
}

// signKeyClaimStatusesOut turns on appendSignedEncoding's leaving out
// of the pod's resourceClaimStatuses; tests turn it off to compare.
var signKeyClaimStatusesOut = true

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
