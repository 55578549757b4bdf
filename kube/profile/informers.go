package profile

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/informers/apps"
	"k8s.io/client-go/informers/core"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/informers/policy"
	"k8s.io/client-go/informers/resource"
	"k8s.io/client-go/informers/scheduling"
	"k8s.io/client-go/informers/storage"
	"k8s.io/client-go/tools/cache"
)

// syncFactory is an informer factory whose informers never run: their
// stores are filled by Add, which also calls every handler the plugins
// registered, at once, on the caller's goroutine. A handler added later
// is called at once for each object already there. Start does nothing.
// The groups the scheduler's plugins read (core, apps, storage, resource,
// scheduling, policy) build their informers here; other groups are the
// wrapped factory's, whose informers stay empty.
//
// Safe for concurrent use; Add runs the handlers under the factory's lock,
// so a handler must not call back into it.
type syncFactory struct {
	informers.SharedInformerFactory
	mu        sync.Mutex
	informers map[reflect.Type]*syncInformer
	// writes counts the calls of Add, Update and Delete of an object of
	// a kind a signer reads (signedKind), each once the informer's store
	// and handlers have it (read by Framework.SignPod's memo).
	writes atomic.Uint64
	// missing are the namespace lister's not-found errors (syncCore).
	missing notFoundMemo
}

var _ informers.SharedInformerFactory = (*syncFactory)(nil)

func newSyncFactory(real informers.SharedInformerFactory) *syncFactory {
	return &syncFactory{SharedInformerFactory: real, informers: map[reflect.Type]*syncInformer{}}
}

// InformerFor returns the one informer of obj's type, built by newFunc the
// first time.
func (f *syncFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.informerLocked(reflect.TypeOf(obj), func() cache.SharedIndexInformer { return newFunc(nil, 0) })
}

func (f *syncFactory) informerLocked(t reflect.Type, build func() cache.SharedIndexInformer) *syncInformer {
	if inf, ok := f.informers[t]; ok {
		return inf
	}
	inf := &syncInformer{SharedIndexInformer: build()}
	f.informers[t] = inf
	return inf
}

// Start does nothing: no informer of this factory runs.
func (f *syncFactory) Start(<-chan struct{}) {}

// Core, Apps, Storage, Resource, Scheduling and Policy build their
// informers through f.
func (f *syncFactory) Core() core.Interface             { return syncCore{core.New(f, "", nil), &f.missing} }
func (f *syncFactory) Apps() apps.Interface             { return apps.New(f, "", nil) }
func (f *syncFactory) Storage() storage.Interface       { return storage.New(f, "", nil) }
func (f *syncFactory) Resource() resource.Interface     { return resource.New(f, "", nil) }
func (f *syncFactory) Scheduling() scheduling.Interface { return scheduling.New(f, "", nil) }
func (f *syncFactory) Policy() policy.Interface         { return policy.New(f, "", nil) }

// WaitForCacheSync reports every informer synced: their stores are always
// complete.
func (f *syncFactory) WaitForCacheSync(<-chan struct{}) map[reflect.Type]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[reflect.Type]bool, len(f.informers))
	for t := range f.informers {
		out[t] = true
	}
	return out
}

// Add stores obj in the informer of its type (made if no plugin asked for
// one, so that a later plugin finds it) and tells that informer's
// handlers. An object with the key of one stored is an update. O(handlers).
func (f *syncFactory) Add(obj runtime.Object) error {
	defer f.wrote(obj)
	inf, err := f.informerOf(obj)
	if err != nil {
		return err
	}
	return inf.add(obj)
}

// Update replaces the stored object with obj's key and tells the
// handlers (OnUpdate with the old object); it is an error if none is
// stored. O(handlers).
func (f *syncFactory) Update(obj runtime.Object) error {
	defer f.wrote(obj)
	inf, err := f.informerOf(obj)
	if err != nil {
		return err
	}
	return inf.update(obj)
}

// Delete removes the stored object with obj's key and tells the handlers
// (OnDelete with the stored object); it is an error if none is stored.
// O(handlers).
func (f *syncFactory) Delete(obj runtime.Object) error {
	defer f.wrote(obj)
	inf, err := f.informerOf(obj)
	if err != nil {
		return err
	}
	return inf.delete(obj)
}

// wrote counts a write of obj in f.writes if a signer reads objects of
// its kind (signedKind), else not: the pods' and nodes' writes of a
// replay (a binding, a claim allocated) then leave SignPod's memo
// standing. Called once the write is done (deferred), so that a
// signature computed meanwhile, from the store before the write, is
// kept with the count before it and not reused after. O(1).
func (f *syncFactory) wrote(obj runtime.Object) {
	if !signCountAll && !signedKind(obj) {
		return
	}
	f.writes.Add(1)
}

// signCountAll, set by tests, makes every write count for SignPod's
// memo, as before signedKind.
var signCountAll bool

// signedKind reports whether a signer of the registry may read objects
// of obj's kind besides the pod it signs: the Services,
// ReplicationControllers, ReplicaSets and StatefulSets spreadSigner
// reads, and the DeviceClasses NodeResourcesFit's and
// BalancedAllocation's signers read through the DRA manager's resolver.
// These are the kinds whose writes signInputs counts on a real cluster;
// every other signer of kube-scheduler v1.37.2 and of schedq reads the
// pod's fields alone (Framework.SignPod). O(1).
func signedKind(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Service, *corev1.ReplicationController, *appsv1.ReplicaSet, *appsv1.StatefulSet, *resourcev1.DeviceClass:
		return true
	}
	return false
}

// ErrUnread is the error of AddObject, UpdateObject and DeleteObject for
// an object of a kind no plugin of the framework reads (no informer of
// that kind was built).
var ErrUnread = errors.New("no plugin reads it")

func (f *syncFactory) informerOf(obj runtime.Object) (*syncInformer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	inf, ok := f.informers[reflect.TypeOf(obj)]
	if !ok {
		return nil, fmt.Errorf("no informer for %T: %w", obj, ErrUnread)
	}
	return inf, nil
}

// syncInformer is an informer that never runs (see syncFactory).
type syncInformer struct {
	cache.SharedIndexInformer
	mu       sync.Mutex // held while handlers run
	handlers []cache.ResourceEventHandler
}

// add stores obj and calls the handlers' OnAdd, or OnUpdate if an
// object with its key is stored.
func (i *syncInformer) add(obj runtime.Object) error {
	return i.change(obj, "add", func(old any, exists bool, h cache.ResourceEventHandler) {
		if exists {
			h.OnUpdate(old, obj)
		} else {
			h.OnAdd(obj, true)
		}
	})
}

// update replaces the stored object with obj's key and calls OnUpdate.
func (i *syncInformer) update(obj runtime.Object) error {
	return i.change(obj, "update", func(old any, _ bool, h cache.ResourceEventHandler) { h.OnUpdate(old, obj) })
}

// delete removes the stored object with obj's key and calls OnDelete.
func (i *syncInformer) delete(obj runtime.Object) error {
	return i.change(obj, "delete", func(old any, _ bool, h cache.ResourceEventHandler) { h.OnDelete(old) })
}

// change looks obj's key up, applies op to the store (update and delete
// need the key stored), then calls notify for each handler, all under
// i.mu. O(handlers).
func (i *syncInformer) change(obj runtime.Object, op string, notify func(old any, exists bool, h cache.ResourceEventHandler)) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	store := i.GetIndexer()
	old, exists, err := store.Get(obj)
	if err != nil {
		return err
	}
	switch {
	case op == "add":
		err = store.Add(obj)
	case !exists:
		return fmt.Errorf("%s of %T %s: not found", op, obj, objKey(obj))
	case op == "update":
		err = store.Update(obj)
	default:
		err = store.Delete(old)
	}
	if err != nil {
		return err
	}
	for _, h := range i.handlers {
		notify(old, exists, h)
	}
	return nil
}

// objKey is obj's namespace/name, for errors.
func objKey(obj runtime.Object) string {
	k, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return "?"
	}
	return k
}

// AddEventHandler records h and calls it for the objects already stored.
func (i *syncInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, obj := range i.GetIndexer().List() {
		h.OnAdd(obj, true)
	}
	i.handlers = append(i.handlers, h)
	return synced{}, nil
}

// AddEventHandlerWithResyncPeriod is AddEventHandler: nothing resyncs.
func (i *syncInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, _ time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandler(h)
}

// AddEventHandlerWithOptions is AddEventHandler.
func (i *syncInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, _ cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandler(h)
}

// HasSynced is true: the store is complete.
func (i *syncInformer) HasSynced() bool { return true }

// synced is a handler registration that is always synced.
type synced struct{}

func (synced) HasSynced() bool                     { return true }
func (synced) HasSyncedChecker() cache.DoneChecker { return doneChecker{} }

type doneChecker struct{}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (doneChecker) Name() string          { return "profile.syncInformer" }
func (doneChecker) Done() <-chan struct{} { return closed }
