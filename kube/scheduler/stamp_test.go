package scheduler

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// staleTerm is the refusal the admission policy makes, as client-go
// returns it.
func staleTerm(pod string) error {
	return apierrors.NewForbidden(podsResource, pod, errors.New(
		"ValidatingAdmissionPolicy 'schedq-binding-fence' with binding 'schedq-binding-fence' denied request: "+
			StaleTermMarker+": the binding was made under holder a, transitions 3; the Lease says holder b, transitions 4"))
}

// A binding carries the stamp of its term in its annotations, and the
// label the fence selects stamped bindings by; one the API
// server refuses as made under a stale term is handled like a conflict:
// no PodScheduled=False patch, no event, no "binding failed"; the pod is
// back in its term's queue (backoff), not bound, not assumed.
func TestStaleTermBindingIsNotAFailure(t *testing.T) {
	f := newAPIFixture(t, 0, staleTerm)
	var stamped, labels map[string]string
	f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "binding" {
			b := a.(k8stesting.CreateAction).GetObject().(*v1.Binding)
			stamped, labels = b.Annotations, b.Labels
		}
		return false, nil, nil
	})
	f.binder.Stamp = func() (LeaseStamp, bool) {
		return LeaseStamp{Lease: "kube-system/schedq", Holder: "a", Transitions: 3}, true
	}
	f.h.AddNode(node("n", 1000))
	p := pod("p", 100)
	f.h.AddPod(p)
	f.once()
	f.binder.Wait()
	want := map[string]string{StampLeaseAnnotation: "kube-system/schedq", StampHolderAnnotation: "a", StampTransitionsAnnotation: "3"}
	for k, v := range want {
		if stamped[k] != v {
			t.Errorf("binding annotation %s = %q, want %q (all: %v)", k, stamped[k], v, stamped)
		}
	}
	if labels[FencedLabel] != "true" {
		t.Errorf("binding labels %v, want %s=true, which the fence's policy selects by", labels, FencedLabel)
	}
	if n := f.statusPatches(); n != 0 {
		t.Errorf("%d PodScheduled patches for a stale-term refusal", n)
	}
	if n := len(f.events.Events); n != 0 {
		t.Errorf("%d events, first %q", n, <-f.events.Events)
	}
	if _, loc, ok := f.q.Get(framework.Key(p)); !ok || loc != schedq.InBackoff {
		t.Errorf("the pod is %v (queued %v), want back in its term's queue, in backoff", loc, ok)
	}
	if _, ok := f.c.NodeOf(framework.Key(p)); ok {
		t.Error("the pod is still assumed")
	}
	if got := f.bindings(bindingStaleTerm); got != 1 {
		t.Errorf("bindings_total{result=stale_term} = %v, want 1", got)
	}
	if got := f.bindings(bindingError); got != 0 {
		t.Errorf("bindings_total{result=error} = %v, want 0", got)
	}
	if strings.Contains(f.logs.String(), "binding failed") {
		t.Errorf("logged as a failure:\n%s", f.logs)
	}
}

// IsStaleTerm recognises only the policy's refusal.
func TestIsStaleTerm(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{staleTerm("p"), true},
		{apierrors.NewForbidden(podsResource, "p", errFake), false},
		{apierrors.NewInvalid(podsKind, "p", nil), false},
		{errors.New(StaleTermMarker), false},
		{nil, false},
	} {
		if got := IsStaleTerm(tc.err); got != tc.want {
			t.Errorf("IsStaleTerm(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

var podsKind = podsResource.WithVersion("").GroupVersion().WithKind("Pod").GroupKind()
