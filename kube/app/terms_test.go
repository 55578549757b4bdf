package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
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
	"k8s.io/utils/clock"
)

// runLeader runs the scheduler with leader election on client (lease
// kube-system/schedq, identity "me", lease 4s, renewal deadline 3s, retry
// 250ms) until the test ends, then checks that run returned nil. done
// has run's result if it returned before. Call it in a synctest bubble.
func runLeader(t *testing.T, client *fake.Clientset) (done <-chan error) {
	o := Options{SchedulerName: "schedq", Clock: clock.RealClock{},
		LeaderElect: true, LeaseNamespace: "kube-system", LeaseName: "schedq", Identity: "me",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 250 * time.Millisecond}
	f, err := newLeaderFence(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() {
		ch <- run(ctx, clients{sched: client, events: client, lease: client}, f, nil, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-ch:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(time.Minute): // the test read it already, or run hangs
		}
	})
	return ch
}

// podNode returns the node default/name is bound to, or "".
func podNode(t *testing.T, client *fake.Clientset, name string) string {
	p, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Spec.NodeName
}

// TestLostLeaseStandbyAndCampaignAgain runs the scheduler with leader
// election on a fake cluster, in virtual time. Its renewals start failing
// (a partition): it stops binding at once (a pod created then stays
// pending); another replica takes the lease once it has expired; the
// scheduler does not exit, and once the other replica's lease expires it
// leads again and binds that pod from its rebuilt queue.
func TestLostLeaseStandbyAndCampaignAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(testNode("n1", "8"), testPod("a", "schedq", "1"))
		var mu sync.Mutex
		stolen := false
		var boundWhileStolen []string
		// While partitioned, our writes of the lease time out.
		client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
			if stolen && (l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "other") {
				return true, nil, apierrors.NewServerTimeout(schema.GroupResource{Resource: "leases"}, "update", 1)
			}
			return false, nil, nil
		})
		client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			if a.GetSubresource() == "binding" && stolen {
				boundWhileStolen = append(boundWhileStolen, a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName())
			}
			return false, nil, nil
		})
		done := runLeader(t, client)
		bg := context.Background()
		leases := client.CoordinationV1().Leases("kube-system")
		holder := func() string {
			l, err := leases.Get(bg, "schedq", metav1.GetOptions{})
			if err != nil || l.Spec.HolderIdentity == nil {
				return ""
			}
			return *l.Spec.HolderIdentity
		}
		nodeOf := func(name string) string { return podNode(t, client, name) }
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if holder() != "me" || nodeOf("a") == "" {
			t.Fatalf("not leading and binding: holder %q, a on %q", holder(), nodeOf("a"))
		}

		// The partition: our renewals fail from now on. A pod created
		// after the first failure is not bound.
		mu.Lock()
		stolen = true
		mu.Unlock()
		time.Sleep(500 * time.Millisecond)
		if _, err := client.CoreV1().Pods("default").Create(bg, testPod("b", "schedq", "1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Another replica takes the lease once ours has expired (4s after
		// our last renewal), and renews it for 6s.
		time.Sleep(4 * time.Second)
		other := "other"
		renew := func() {
			l, err := leases.Get(bg, "schedq", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			now := metav1.NewMicroTime(time.Now())
			secs := int32(4)
			l.Spec = coordinationv1.LeaseSpec{HolderIdentity: &other, LeaseDurationSeconds: &secs, RenewTime: &now, AcquireTime: &now}
			if _, err = leases.Update(bg, l, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		renew()
		for range 6 {
			time.Sleep(time.Second)
			renew()
		}
		synctest.Wait()
		if n := nodeOf("b"); n != "" {
			t.Fatalf("b was bound to %s while another replica held the lease", n)
		}
		select {
		case err := <-done:
			t.Fatalf("run ended after the lost lease: %v", err)
		default:
		}

		// The other replica stops renewing: its lease expires, ours begins.
		mu.Lock()
		stolen = false
		mu.Unlock()
		time.Sleep(6 * time.Second)
		synctest.Wait()
		if holder() != "me" || nodeOf("b") == "" {
			t.Fatalf("after the other's lease expired: holder %q, b on %q", holder(), nodeOf("b"))
		}
		mu.Lock()
		if len(boundWhileStolen) > 0 {
			t.Errorf("binding requests while another replica held the lease: %v", boundWhileStolen)
		}
		mu.Unlock()
	})
}

// TestTermRestartsWhenAReadShowsAnotherHolder is the interleaving that
// left a new leader scheduling nothing (seen in the e2e test
// TestZombieHeldBindings under load): a renewal fails, the elector reads
// the lease, and that read shows another holder, which ends the term
// (fence.lost); but the elector's next read shows our record again and it
// goes on renewing, so it never stops leading and never starts a term. A pod created after that read must
// still be bound: a new term begins while the lease is ours.
func TestTermRestartsWhenAReadShowsAnotherHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(testNode("n1", "8"), testPod("a", "schedq", "1"))
		var mu sync.Mutex
		ghostReads, failedUpdates := 0, 0
		// The elector renews without reading while it leads; a failed
		// renewal makes it read the lease before it tries again.
		client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			if failedUpdates == 0 {
				return false, nil, nil
			}
			failedUpdates--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "leases"}, "schedq", errors.New("the object has been modified"))
		})
		client.PrependReactor("get", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			if ghostReads == 0 {
				return false, nil, nil
			}
			ghostReads--
			obj, err := client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), "kube-system", "schedq")
			if err != nil {
				return true, nil, err
			}
			l := obj.(*coordinationv1.Lease).DeepCopy()
			ghost := "zombie"
			l.Spec.HolderIdentity = &ghost
			return true, l, nil
		})
		runLeader(t, client)
		bg := context.Background()
		nodeOf := func(name string) string { return podNode(t, client, name) }
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if nodeOf("a") == "" {
			t.Fatal("a was not bound while leading")
		}
		mu.Lock()
		ghostReads, failedUpdates = 1, 1
		mu.Unlock()
		time.Sleep(time.Second) // the elector's next reads: the ghost, then ours
		synctest.Wait()
		if _, err := client.CoreV1().Pods("default").Create(bg, testPod("b", "schedq", "1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := nodeOf("b"); n == "" {
			t.Fatal("b is still pending 5s after it was created: the lease is ours, but no term runs")
		}
	})
}
