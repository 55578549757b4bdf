package profile

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// TestNamespaceListerNotFoundOnce: the factory's namespace lister answers
// a namespace not stored with client-go's not-found error, the same
// error object each time it is asked, and finds the namespace once it is
// added.
func TestNamespaceListerNotFoundOnce(t *testing.T) {
	f := newSyncFactory(informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0))
	l := f.Core().V1().Namespaces().Lister()
	_, err1 := l.Get("team-a")
	_, err2 := l.Get("team-a")
	_, want := listersv1.NewNamespaceLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})).Get("team-a")
	if !apierrors.IsNotFound(err1) || err1.Error() != want.Error() {
		t.Fatalf("Get of a missing namespace: %v, want client-go's %v", err1, want)
	}
	if err1 != err2 {
		t.Errorf("a second Get built another error (%p, %p)", err1, err2)
	}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"tier": "gold"}}}
	if err := f.Add(ns); err != nil {
		t.Fatal(err)
	}
	got, err := l.Get("team-a")
	if err != nil || got != ns {
		t.Fatalf("Get after Add: %v, %v; want the namespace added", got, err)
	}
	if _, err := l.Get("team-b"); !apierrors.IsNotFound(err) {
		t.Errorf("Get of another missing namespace: %v, want not found", err)
	}
}
