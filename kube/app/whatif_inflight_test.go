package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWhatIfSeesDevicesBeingBound: p's binding is under way, its volume
// waiting to be provisioned (VolumeBinding's PreBind, which runs before
// DynamicResources' and waits up to 10 minutes): n1's one device is
// p's in DynamicResources' claim tracker, but its claim, written only at
// DynamicResources' PreBind, is not allocated in the informer. A what-if
// pod that claims a device then does not fit now: the forecast's state
// takes the claims from the tracker. From the informer, the device
// looked free and the pod fitted on n1.
func TestWhatIfSeesDevicesBeingBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wffc := storagev1.VolumeBindingWaitForFirstConsumer
		class := "wffc"
		pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data", UID: "uid-data", ResourceVersion: "1"},
			Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
		p := claimingPod("p", "held")
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		client := fakeCluster(testNode("n1", "2"), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
			&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "example.com/disk", VolumeBindingMode: &wffc}, pvc,
			draClass(), draSlice("n1"), draClaim("held", testDriver), draClaim("other", testDriver), p)
		o := upstreamOptions(t)
		handlers := make(chan http.Handler, 1)
		o.serving = func(h http.Handler) { handlers <- h }
		runUpstream(t, client, o)
		h := <-handlers
		if n := nodeOf(t, client, "p"); n != "" {
			t.Fatalf("p is bound to %s: the case needs its binding under way", n)
		}
		held, err := client.ResourceV1().ResourceClaims("default").Get(context.Background(), "held", metav1.GetOptions{})
		if err != nil || held.Status.Allocation != nil {
			t.Fatalf("claim held: %v %+v; the case needs it not yet written", err, held.Status)
		}
		w := `apiVersion: v1
kind: Pod
metadata: {name: w, namespace: default}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: 100m}, claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimName: other}]
`
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/debug/whatif", strings.NewReader(w)))
		var a whatIfAnswer
		if err := json.Unmarshal(rec.Body.Bytes(), &a); rec.Code != http.StatusOK || err != nil || len(a.Pods) != 1 {
			t.Fatalf("HTTP %d %v: %s", rec.Code, err, rec.Body)
		}
		if p := a.Pods[0]; p.FitsNow {
			t.Errorf("got %+v, want it not to fit now: p's binding holds n1's one device", p)
		}
	})
}
