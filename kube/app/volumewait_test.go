package app

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// localClass is a StorageClass of local volumes, bound when a pod uses
// them (WaitForFirstConsumer), with no provisioner.
func localClass() *storagev1.StorageClass {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: "local"},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &mode,
	}
}

// freeVolume is an unbound local PersistentVolume of class local on node.
func freeVolume(node string) *v1.PersistentVolume {
	pv, _ := boundVolume("data", node)
	pv.Spec.ClaimRef = nil
	pv.Spec.StorageClassName = "local"
	pv.Status.Phase = v1.VolumeAvailable
	return pv
}

// unboundClaim is the claim data of class local, as created: not bound.
func unboundClaim() *v1.PersistentVolumeClaim {
	class := "local"
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data", UID: "uid-data", ResourceVersion: "1"},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
			StorageClassName: &class,
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	}
}

// bindClaim plays the PV controller: it binds the claim data to the
// volume VolumeBinding's PreBind chose for it (the one whose claimRef
// names it), and reports whether there was one.
func bindClaim(t *testing.T, client *fake.Clientset) bool {
	t.Helper()
	ctx := context.Background()
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pv := range pvs.Items {
		if ref := pv.Spec.ClaimRef; ref == nil || ref.Name != "data" {
			continue
		}
		pvc, err := client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pvc.Spec.VolumeName = pv.Name
		pvc.Status.Phase = v1.ClaimBound
		metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, "pv.kubernetes.io/bind-completed", "yes")
		if _, err := client.CoreV1().PersistentVolumeClaims("default").Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		pv.Status.Phase = v1.VolumeBound
		if _, err := client.CoreV1().PersistentVolumes().Update(ctx, &pv, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return true
	}
	return false
}

// TestUpstreamVolumesWaitForWhatIsMissing: a pod whose unbound claim
// cannot be bound yet (its StorageClass does not exist, or no volume of
// its WaitForFirstConsumer class does) waits with VolumeBinding's reason
// in its PodScheduled condition and its FailedScheduling event. When the
// missing objects are created (a free local volume on n2, and the class),
// their events wake it, long before the queue's 5-minute flush:
// VolumeBinding's PreBind binds the volume on n2 and, once the claim is
// bound (the test plays the PV controller), the pod is bound to n2.
func TestUpstreamVolumesWaitForWhatIsMissing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objs    []runtime.Object // there from the start, beside the claim
		missing []runtime.Object // created later
		reason  string
	}{
		{"storage class", nil, []runtime.Object{localClass(), freeVolume("n2")}, "pod has unbound immediate PersistentVolumeClaims"},
		{"volume of a WaitForFirstConsumer class", []runtime.Object{localClass()}, []runtime.Object{freeVolume("n2")}, "didn't find available persistent volumes to bind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				objs := append([]runtime.Object{testNode("n1", "2"), testNode("n2", "2"), unboundClaim(), claimPod("vol", "data")}, tc.objs...)
				client := fakeCluster(objs...)
				runUpstream(t, client, upstreamOptions(t))
				p, err := client.CoreV1().Pods("default").Get(context.Background(), "vol", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if p.Spec.NodeName != "" {
					t.Fatalf("vol is bound to %s while its %s is missing", p.Spec.NodeName, tc.name)
				}
				if c := scheduledCondition(p); c == nil || c.Reason != v1.PodReasonUnschedulable || !strings.Contains(c.Message, tc.reason) {
					t.Fatalf("PodScheduled of vol: %+v, want Unschedulable %q", c, tc.reason)
				}
				if notes := failedScheduling(t, client, "vol"); len(notes) != 1 || !strings.Contains(notes[0], tc.reason) {
					t.Fatalf("FailedScheduling events %q, want one %q", notes, tc.reason)
				}
				for _, o := range tc.missing {
					if err := client.Tracker().Add(o); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if !bindClaim(t, client) {
					t.Fatalf("no volume was chosen for vol's claim a minute after its %s came", tc.name)
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if n := nodeOf(t, client, "vol"); n != "n2" {
					t.Fatalf("vol is on %q a minute after its claim was bound, want n2, its volume's node", n)
				}
			})
		})
	}
}
