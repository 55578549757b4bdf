package profile

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers/core"
	informersv1 "k8s.io/client-go/informers/core/v1"
	listersv1 "k8s.io/client-go/listers/core/v1"
)

// syncCore is the factory's core group, whose namespace lister answers a
// namespace that is not stored with one not-found error per name, made
// once: InterPodAffinity reads the pod's namespace on every cycle, and a
// cluster without Namespace objects (the simulator's, unless a snapshot
// has some) would otherwise build an error, its message formatted, for
// each. The error is the one client-go's lister gives; a namespace added
// later is found as before.
type syncCore struct {
	core.Interface
	missing *notFoundMemo
}

func (c syncCore) V1() informersv1.Interface { return syncCoreV1{c.Interface.V1(), c.missing} }

type syncCoreV1 struct {
	informersv1.Interface
	missing *notFoundMemo
}

func (c syncCoreV1) Namespaces() informersv1.TypedNamespaceInformer {
	return namespaceInformer{c.Interface.Namespaces(), c.missing}
}

type namespaceInformer struct {
	informersv1.TypedNamespaceInformer
	missing *notFoundMemo
}

func (i namespaceInformer) Lister() listersv1.NamespaceLister {
	return namespaceLister{i.TypedNamespaceInformer.Lister(), i.TypedNamespaceInformer, i.missing}
}

// namespaceLister is client-go's lister, with Get looking the store up
// first. O(1) per Get; safe for concurrent use.
type namespaceLister struct {
	listersv1.NamespaceLister
	inf     informersv1.TypedNamespaceInformer
	missing *notFoundMemo
}

func (l namespaceLister) Get(name string) (*v1.Namespace, error) {
	obj, exists, err := l.inf.Informer().GetIndexer().GetByKey(name)
	switch {
	case err != nil:
		return nil, err
	case !exists:
		return nil, l.missing.get(name)
	}
	ns, ok := obj.(*v1.Namespace)
	if !ok {
		return l.NamespaceLister.Get(name) // not a namespace: client-go's answer
	}
	return ns, nil
}

// notFoundMemo keeps the not-found error of each namespace name asked
// for. Safe for concurrent use.
type notFoundMemo struct{ errs sync.Map }

func (m *notFoundMemo) get(name string) error {
	if err, ok := m.errs.Load(name); ok {
		return err.(error)
	}
	err, _ := m.errs.LoadOrStore(name, apierrors.NewNotFound(v1.Resource("namespace"), name))
	return err.(error)
}
