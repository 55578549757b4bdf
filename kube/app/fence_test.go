package app

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/schedq/schedq/kube/scheduler"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// leadingFence is a fence of a 15s lease with a 5s margin, in a term,
// renewed at t0.
func leadingFence(clk *testingclock.FakePassiveClock) (*fence, *bool) {
	f := newFence(clk, 15*time.Second, 5*time.Second)
	ended := false
	f.begin(func() { ended = true })
	f.renewed(t0)
	return f, &ended
}

// TestFenceExpiresFromLastRenewal: the fence is open for the lease
// duration less the margin after the renewal was sent, and no longer,
// even if nothing else happens (a stopped process, a hung renewal).
func TestFenceExpiresFromLastRenewal(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	f, _ := leadingFence(clk)
	clk.SetTime(t0.Add(10*time.Second - time.Nanosecond))
	if err := f.held(); err != nil {
		t.Fatalf("just before lease-margin: %v", err)
	}
	clk.SetTime(t0.Add(10 * time.Second))
	if err := f.held(); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("at lease-margin: %v, want an expired fence", err)
	}
	// A zombie continued long after: still closed.
	clk.SetTime(t0.Add(time.Hour))
	if err := f.held(); !errors.Is(err, ErrFenced) {
		t.Fatalf("an hour later: %v", err)
	}
	// A renewal sent now opens it again for the same span.
	f.renewed(clk.Now())
	if err := f.held(); err != nil {
		t.Fatalf("after a new renewal: %v", err)
	}
}

// TestFenceClosesAtFirstFailedRenewal: a failed renewal closes the fence
// at once, not at the renew deadline; the next success reopens it.
func TestFenceClosesAtFirstFailedRenewal(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	f, ended := leadingFence(clk)
	clk.SetTime(t0.Add(time.Second))
	f.suspect("renewing the lease failed: boom")
	if err := f.held(); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("after a failed renewal: %v", err)
	}
	if *ended {
		t.Fatal("a failed renewal ended the term; only a lost lease or the elector should")
	}
	f.renewed(clk.Now())
	if err := f.held(); err != nil {
		t.Fatalf("after the next renewal: %v", err)
	}
}

// TestFenceLostAndEnded: another holder ends the term at once; after the
// end nothing is held, even a renewal that lands late.
func TestFenceLostAndEnded(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	f, ended := leadingFence(clk)
	f.lost("b")
	if !*ended {
		t.Fatal("lost did not end the term")
	}
	if err := f.held(); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("after lost: %v", err)
	}
	f.end()
	f.renewed(clk.Now())
	if err := f.held(); !errors.Is(err, ErrFenced) {
		t.Fatalf("not leading, yet held: %v", err)
	}
	var none *fence
	if err := none.held(); err != nil {
		t.Fatalf("the nil fence (no leader election) must be open: %v", err)
	}
}

// TestFenceWait: wait returns when a renewal opens the fence, and on the
// context's end; it does not spin.
func TestFenceWait(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	f, _ := leadingFence(clk)
	f.suspect("renewal failed")
	done := make(chan error, 1)
	go func() { done <- f.wait(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("wait returned on a closed fence: %v", err)
	default:
	}
	f.renewed(t0)
	if err := <-done; err != nil {
		t.Fatalf("wait after the renewal: %v", err)
	}
	f.suspect("again")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- f.wait(ctx) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("wait on a cancelled context: %v", err)
	}
}

// TestFencedLock: what the leader elector's calls show drives the fence:
// a write of our record renews it from the time the write was sent; a
// failed call closes it; a record of another holder ends the term.
func TestFencedLock(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	f := newFence(clk, 15*time.Second, 5*time.Second)
	ended := false
	f.begin(func() { ended = true })
	client := fake.NewClientset()
	fail := false
	client.PrependReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	// The write takes 3s: the fence counts from when it was sent.
	client.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		clk.SetTime(clk.Now().Add(3 * time.Second))
		return false, nil, nil
	})
	lock := &fencedLock{fence: f, Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: "l"},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: "a"},
	}}
	ctx := context.Background()
	rec := resourcelock.LeaderElectionRecord{HolderIdentity: "a", LeaseDurationSeconds: 15}
	if err := lock.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(t0.Add(10*time.Second - time.Nanosecond))
	if err := f.held(); err != nil {
		t.Fatalf("within lease-margin of the send: %v", err)
	}
	clk.SetTime(t0.Add(10 * time.Second))
	if err := f.held(); err == nil {
		t.Fatal("held at lease-margin after the send (counted from the answer instead?)")
	}
	if err := lock.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := f.held(); err != nil {
		t.Fatalf("after a renewal: %v", err)
	}
	fail = true
	if err := lock.Update(ctx, rec); err == nil {
		t.Fatal("the update should fail")
	}
	if err := f.held(); !errors.Is(err, ErrFenced) {
		t.Fatalf("after a failed update: %v", err)
	}
	fail = false
	if err := lock.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	other := "b"
	if _, err := client.CoordinationV1().Leases("kube-system").Update(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "l"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &other},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lock.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if !ended || f.held() == nil {
		t.Fatalf("a record held by b: term ended %v, fence %v", ended, f.held())
	}
}

// TestFencedTransport: writes pass only while the fence is open; reads
// always pass.
func TestFencedTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	clk := testingclock.NewFakePassiveClock(t0)
	f, _ := leadingFence(clk)
	c := &http.Client{Transport: fencedTransport{next: http.DefaultTransport, fence: f}}
	post := func() error {
		resp, err := c.Post(srv.URL+"/api/v1/namespaces/d/pods/p/binding", "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := post(); err != nil {
		t.Fatalf("open fence: %v", err)
	}
	clk.SetTime(t0.Add(time.Minute))
	if err := post(); !errors.Is(err, ErrFenced) {
		t.Fatalf("expired fence: %v, want ErrFenced", err)
	}
	resp, err := c.Get(srv.URL + "/api/v1/pods")
	if err != nil {
		t.Fatalf("a read on an expired fence: %v", err)
	}
	resp.Body.Close()
}

// TestFencedBindingThroughClientGo: a binding the transport refuses comes
// back from client-go as an error wrapping ErrFenced, which the outage
// backoff does not count and the scheduler requeues (it is not a context
// error).
func TestFencedBindingThroughClientGo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("a fenced request reached the server")
	}))
	defer srv.Close()
	clk := testingclock.NewFakePassiveClock(t0.Add(time.Hour))
	f, _ := leadingFence(clk)
	cfg := &rest.Config{Host: srv.URL}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return fencedTransport{next: rt, fence: f} })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = cs.CoreV1().Pods("d").Bind(context.Background(), &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "p"}, Target: v1.ObjectReference{Kind: "Node", Name: "n"},
	}, metav1.CreateOptions{})
	if !errors.Is(err, ErrFenced) || errors.Is(err, context.Canceled) || unavailable(err) {
		t.Fatalf("bind on an expired fence: %v (ErrFenced %v, unavailable %v)", err, errors.Is(err, ErrFenced), unavailable(err))
	}
}

// TestFenceStamp: the stamp bindings carry is the term of the last
// successful write of our record (its holder and leaseTransitions, on the
// Lease it names), none before that write, and the same while the fence is
// closed (the transport refuses the binding then); a binding the API
// server refuses as stale closes the fence until a renewal.
func TestFenceStamp(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	f := newFence(clk, 15*time.Second, 5*time.Second)
	f.begin(func() {})
	lock := &fencedLock{fence: f, Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: "l"},
		Client:     fake.NewClientset().CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: "a"},
	}}
	if _, ok := f.stamp(); ok {
		t.Fatal("a stamp before any renewal")
	}
	ctx := context.Background()
	if err := lock.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "a", LeaderTransitions: 2}); err != nil {
		t.Fatal(err)
	}
	want := scheduler.LeaseStamp{Lease: "kube-system/l", Holder: "a", Transitions: 2}
	if st, ok := f.stamp(); !ok || st != want {
		t.Fatalf("stamp %+v %v, want %+v", st, ok, want)
	}
	b := guardedBinder{next: refusingBinder{err: staleTermErr()}, fence: f, backoff: newOutageBackoff(testingclock.NewFakeClock(t0))}
	var got error
	b.Bind(ctx, &v1.Pod{}, "n", nil, func(err error) { got = err })
	if !scheduler.IsStaleTerm(got) {
		t.Fatalf("bind: %v", got)
	}
	if err := f.held(); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "refused a binding") {
		t.Fatalf("after a stale-term refusal the fence is %v, want closed", err)
	}
	if st, ok := f.stamp(); !ok || st != want {
		t.Fatalf("closed fence: stamp %+v %v, want %+v (the transport refuses the binding, not the stamp)", st, ok, want)
	}
	clk.SetTime(t0.Add(time.Second))
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "a", LeaderTransitions: 2}); err != nil {
		t.Fatal(err)
	}
	if st, ok := f.stamp(); !ok || st != want {
		t.Fatalf("after a renewal: stamp %+v %v, want %+v", st, ok, want)
	}
	clk.SetTime(t0.Add(time.Hour))
	if st, ok := f.stamp(); !ok || st != want {
		t.Fatalf("expired fence: stamp %+v %v, want %+v", st, ok, want)
	}
	var none *fence
	if _, ok := none.stamp(); ok {
		t.Fatal("no leader election: bindings must not be stamped")
	}
}

func staleTermErr() error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New(scheduler.StaleTermMarker))
}

// refusingBinder fails every binding with err.
type refusingBinder struct{ err error }

func (b refusingBinder) Bind(_ context.Context, _ *v1.Pod, _ string, start func() bool, done func(error)) {
	if scheduler.Started(start, done) {
		done(b.err)
	}
}

// TestBindingStampedWhenTheFenceReopensBeforeItLeaves: the stamp is read
// when the binding is built, the fence checked again when it leaves (the
// transport). A fence closed at the first moment (a failed read of the
// lease) and open again at the second (the next renewal) must not let an
// unstamped binding out: the API server would not check it, and the
// request could still arrive after another replica took the Lease over.
func TestBindingStampedWhenTheFenceReopensBeforeItLeaves(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	f := newFence(clk, 15*time.Second, 5*time.Second)
	f.begin(func() {})
	lock := &fencedLock{fence: f, Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: "l"},
		Client:     fake.NewClientset().CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: "a"},
	}}
	ctx := context.Background()
	rec := resourcelock.LeaderElectionRecord{HolderIdentity: "a", LeaderTransitions: 3}
	if err := lock.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "p", UID: "u"}})
	var sent []*v1.Binding
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		if err := f.held(); err != nil { // what fencedTransport does as the request leaves
			return true, nil, err
		}
		sent = append(sent, a.(k8stesting.CreateAction).GetObject().(*v1.Binding))
		return true, nil, nil
	})
	binder := termBinder(client, f)
	stamp := binder.Stamp
	binder.Stamp = func() (scheduler.LeaseStamp, bool) {
		f.suspect("reading the lease failed") // closed as the binding is built
		st, ok := stamp()
		if err := lock.Update(ctx, rec); err != nil { // open again before it leaves
			t.Fatal(err)
		}
		return st, ok
	}
	done := make(chan error, 1)
	binder.Bind(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "p", UID: "u"}}, "n", nil, func(err error) { done <- err })
	<-done
	want := scheduler.LeaseStamp{Lease: "kube-system/l", Holder: "a", Transitions: 3}
	for _, b := range sent {
		if b.Labels[scheduler.FencedLabel] != "true" || b.Annotations[scheduler.StampHolderAnnotation] != want.Holder ||
			b.Annotations[scheduler.StampTransitionsAnnotation] != "3" || b.Annotations[scheduler.StampLeaseAnnotation] != want.Lease {
			t.Fatalf("a binding left without the term's stamp: labels %v, annotations %v", b.Labels, b.Annotations)
		}
	}
}
