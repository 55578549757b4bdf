package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWhatIfDuringClaimBindingIsRaceFree: a what-if reads p's allocation
// in flight from the claim tracker while DynamicResources' PreBind, on
// p's binding goroutine, stamps that same allocation (its
// AllocationTimestamp, with the DRADeviceBindingConditions gate, on by
// default) before writing it to the API server. The what-if and the
// binding are ordered by nothing, so under -race a copy of the shared
// allocation is reported as a data race. The claim's finalizer update is
// held until the what-if has started, and its status update until the
// what-if has answered: the allocation is in flight throughout.
func TestWhatIfDuringClaimBindingIsRaceFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(testNode("n1", "2"), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
			draClass(), draSlice("n1"), draClaim("held", testDriver), draClaim("other", testDriver), claimingPod("p", "held"))
		entered, release, answered := make(chan struct{}), make(chan struct{}), make(chan struct{})
		held := heldWrites{client, func(resource, subresource string) {
			switch {
			case resource != "resourceclaims":
			case subresource == "":
				close(entered)
				<-release
			case subresource == "status":
				<-answered
			}
		}}
		o := upstreamOptions(t)
		handlers := make(chan http.Handler, 1)
		o.serving = func(h http.Handler) { handlers <- h }
		runUpstream(t, held, o)
		h := <-handlers
		<-entered
		var a whatIfAnswer
		var code int
		go func() {
			defer close(answered)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/debug/whatif", strings.NewReader(whatIfClaimOther)))
			code = rec.Code
			if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
				code = -1
			}
		}()
		close(release) // not ordered after the what-if: the binding goes on
		<-answered
		if code != http.StatusOK || len(a.Pods) != 1 {
			t.Fatalf("HTTP %d: %+v", code, a)
		}
		if a.Pods[0].FitsNow {
			t.Errorf("got %+v, want it not to fit now: p's binding holds n1's one device", a.Pods[0])
		}
		synctest.Wait()
		if n := nodeOf(t, client, "p"); n != "n1" {
			t.Errorf("p is on %q, want n1", n)
		}
	})
}

// whatIfClaimOther is a what-if pod that claims the device of the
// ResourceClaim "other".
const whatIfClaimOther = `apiVersion: v1
kind: Pod
metadata: {name: w, namespace: default}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: 100m}, claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimName: other}]
`

// TestCopyPendingAllocationKnowsEveryField: copyPendingAllocation copies
// AllocationResult field by field (it must not read AllocationTimestamp);
// a field added upstream fails here until it decides whether to copy it.
func TestCopyPendingAllocationKnowsEveryField(t *testing.T) {
	known := []string{"Devices", "NodeSelector", "AllocationTimestamp"}
	typ := reflect.TypeFor[resourceapi.AllocationResult]()
	var got []string
	for i := range typ.NumField() {
		got = append(got, typ.Field(i).Name)
	}
	if !slices.Equal(got, known) {
		t.Errorf("AllocationResult has fields %v, copyPendingAllocation knows %v", got, known)
	}
}
