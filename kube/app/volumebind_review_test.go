package app

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestUpstreamVolumeBindingThenBindingFails: a pod whose
// WaitForFirstConsumer claim VolumeBinding's PreBind binds to the free
// local volume on n2, and whose binding then fails, is not bound; it is
// tried again and bound to n2, the node of the volume its claim now has
// (kube-scheduler v1.37.2 does the same: Unreserve reverts only
// VolumeBinding's assume cache, the API writes stand). A claim deleted
// while PreBind waits for it fails the binding, and the pod is not bound
// but waits for its claim.
func TestUpstreamVolumeBindingThenBindingFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		// during runs while PreBind waits for the claim to be bound.
		during func(t *testing.T, ctx context.Context, f *failingBinds)
		want   string // the node vol ends on
		reason string // its PodScheduled message, if it ends unbound
		failed int64  // bindings the test failed
	}{
		{"binding fails once", func(t *testing.T, _ context.Context, f *failingBinds) {
			f.fail.Store(1)
			if !bindClaim(t, f.client) {
				t.Fatal("PreBind chose no volume for the claim")
			}
		}, "n2", "", 1},
		{"claim deleted during PreBind", func(t *testing.T, ctx context.Context, f *failingBinds) {
			if err := f.client.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "", `persistentvolumeclaim "data" not found`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				f := &failingBinds{client: fakeCluster([]runtime.Object{testNode("n1", "2"), testNode("n2", "2"), localClass(), freeVolume("n2"), unboundClaim(), claimPod("vol", "data")}...)}
				f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetSubresource() == "binding" && f.fail.Add(-1) >= 0 {
						f.failed.Add(1)
						return true, nil, errors.New("binding refused by the test")
					}
					return false, nil, nil
				})
				runUpstream(t, f.client, upstreamOptions(t))
				if n := nodeOf(t, f.client, "vol"); n != "" {
					t.Fatalf("vol is bound to %s before its claim is", n)
				}
				tc.during(t, ctx, f)
				time.Sleep(time.Minute)
				synctest.Wait()
				p, err := f.client.CoreV1().Pods("default").Get(ctx, "vol", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if p.Spec.NodeName != tc.want {
					t.Fatalf("vol is on %q a minute later, want %q (%d bindings failed)", p.Spec.NodeName, tc.want, f.failed.Load())
				}
				if n := f.failed.Load(); n != tc.failed {
					t.Fatalf("%d bindings failed, want %d", n, tc.failed)
				}
				if tc.reason != "" {
					if c := scheduledCondition(p); c == nil || !strings.Contains(c.Message, tc.reason) {
						t.Fatalf("PodScheduled of vol: %+v, want %q; events %q; status %+v", c, tc.reason, failedScheduling(t, f.client, "vol"), p.Status)
					}
				}
			})
		})
	}
}

// failingBinds fails the next fail bindings of its client.
type failingBinds struct {
	client       *fake.Clientset
	fail, failed atomic.Int64
}

// TestUpstreamTwoPodsRaceForOneLocalVolume: two pods whose
// WaitForFirstConsumer claims could each use the one free local volume
// (on n2): the first tried gets it (VolumeBinding's Reserve assumes it,
// its PreBind writes it), and the other, tried while the first is in its
// binding, waits with VolumeBinding's reason, bound nowhere, as in
// kube-scheduler v1.37.2.
func TestUpstreamTwoPodsRaceForOneLocalVolume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		claimB := unboundClaim()
		claimB.Name, claimB.UID = "data-b", "uid-data-b"
		client := fakeCluster(testNode("n1", "2"), testNode("n2", "2"), localClass(), freeVolume("n2"), unboundClaim(), claimB,
			claimPod("a", "data"), claimPod("b", "data-b"))
		runUpstream(t, client, upstreamOptions(t))
		bindClaim(t, client) // the PV controller binds the claim whose pod won the volume
		time.Sleep(time.Minute)
		synctest.Wait()
		var bound, waiting []string
		for _, name := range []string{"a", "b"} {
			p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Spec.NodeName != "" {
				bound = append(bound, name+" on "+p.Spec.NodeName)
				continue
			}
			if c := scheduledCondition(p); c == nil || !strings.Contains(c.Message, "didn't find available persistent volumes to bind") {
				t.Fatalf("%s unbound with PodScheduled %+v, want VolumeBinding's reason", name, c)
			}
			waiting = append(waiting, name)
		}
		if len(bound) != 1 || bound[0] != "a on n2" || len(waiting) != 1 {
			t.Fatalf("bound %v, waiting %v; want a on n2, b waiting", bound, waiting)
		}
	})
}
