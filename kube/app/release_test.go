package app

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
)

// TestReleaseLeavesAnotherHoldersLease: client-go's elector releases the
// lease when its renewals have failed for the renew deadline (we ask it
// to release on cancel). Its release reads the lease and writes an empty
// holder if its own last observation, not that read, says we hold it. A
// partition that ends just as the deadline passes, after another replica
// took the lease over, thus had us wipe the new leader's record: the
// Lease free while the new leader still writes under its term, and a
// third replica free to take it at once. The release must leave a lease
// another replica holds alone.
func TestReleaseLeavesAnotherHoldersLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		client := fake.NewClientset()
		var mu sync.Mutex
		took := false
		at := func(d time.Duration) bool { return !time.Now().Before(start.Add(d)) }
		// Lease requests fail from 0.5s to 3.4s (our renewals at 1s, 2s
		// and 3s; the renew deadline, 2.5s from the first failure, passes
		// at 3.5s); the first read after the partition finds b's record.
		partitioned := func() bool { return at(500*time.Millisecond) && !at(3400*time.Millisecond) }
		timeout := apierrors.NewServerTimeout(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "get", 1)
		client.PrependReactor("*", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			if partitioned() {
				return true, nil, timeout
			}
			if a.GetVerb() == "get" && at(3400*time.Millisecond) && !took {
				took = true
				takeOver(t, client, "b")
			}
			return false, nil, nil
		})
		o := Options{LeaseDuration: 3 * time.Second, RenewDeadline: 2500 * time.Millisecond, RetryPeriod: time.Second, SchedulerName: "schedq"}
		f := newFence(clock.RealClock{}, o.LeaseDuration, o.LeaseDuration-o.RenewDeadline)
		lock := &fencedLock{fence: f, Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: "schedq"},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: "a"},
		}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			done <- campaignOnce(ctx, lock, f, o, slog.New(slog.NewTextHandler(io.Discard, nil)), func(ctx context.Context) { <-ctx.Done() })
		}()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("campaignOnce: %v", err)
			}
		default:
			t.Fatal("still leading 5s after the renewals began to fail")
		}
		l, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "schedq", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "b" || l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 1 {
			t.Fatalf("b's lease after our release: holder %v, transitions %v; want b, 1", deref(l.Spec.HolderIdentity), deref(l.Spec.LeaseTransitions))
		}
	})
}

// takeOver writes holder's record into the lease, as another replica
// taking it over does (one more transition). It runs inside a reactor:
// it writes through the tracker, not the clientset.
func takeOver(t *testing.T, client *fake.Clientset, holder string) {
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	obj, err := client.Tracker().Get(gvr, "kube-system", "schedq")
	if err != nil {
		t.Error(err)
		return
	}
	l := obj.(*coordinationv1.Lease).DeepCopy()
	now := metav1.NewMicroTime(time.Now())
	transitions := *l.Spec.LeaseTransitions + 1
	secs := int32(3)
	l.Spec = coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now, LeaseTransitions: &transitions}
	if err := client.Tracker().Update(gvr, l, "kube-system"); err != nil {
		t.Error(err)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestDefaultIdentityIsNeverReused: two starts of the scheduler on the
// same host with the same pid (a container restarted in its pod, where
// the process is pid 1 each time; two replicas with the host's network
// on one node) must not share an identity. With one, the restarted
// process renews the dead one's Lease at once, under the same term (the
// same stamp), while the dead one's last bindings may still arrive, and
// two live replicas would both lead.
func TestDefaultIdentityIsNeverReused(t *testing.T) {
	a, b := defaultIdentity(), defaultIdentity()
	if a == b {
		t.Fatalf("two starts on this host and pid share the identity %q", a)
	}
	host, _ := os.Hostname()
	if !strings.HasPrefix(a, host+"_") {
		t.Errorf("identity %q does not name the host %q", a, host)
	}
}
