package profile

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// leftoverClaim is the extended resources' claim of pod as an earlier
// attempt's PreBind created it (annotated, controlled by the pod, its
// requests written) and Unreserve failed to delete: allocated on pool's
// device if pool is set.
func leftoverClaim(pod *v1.Pod, pool, device string) *resourceapi.ResourceClaim {
	c := shareClaim(pod.Name+"-extended-resources-x", 1000, "V100", pool, device)
	c.Annotations = map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true"}
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}
	c.Status.ReservedFor = nil
	return c
}

// TestDRAMemoLeftoverExtendedClaim: a pod whose extended resources' claim
// is left from an earlier attempt (Unreserve's delete failed) is refused
// on every node by upstream's Filter, so that its PostFilter deletes the
// claim and the pod starts anew. What the pod asks is the same as
// another pod's without one, so the memo's answers kept for that pod
// (success on the free V100 nodes) are not this pod's: the memo stands
// aside, and every node is answered as upstream answers it.
func TestDRAMemoLeftoverExtendedClaim(t *testing.T) {
	ctx := context.Background()
	m, f, nodes, mk := accelMemo(t)
	for _, tc := range []struct {
		name     string
		leftover func(*v1.Pod) *resourceapi.ResourceClaim // nil: none
		memo     bool                                     // the memo serves the cycle
	}{
		{name: "no leftover claim: the memo's answers kept", memo: true},
		{name: "a leftover claim, not allocated", leftover: func(p *v1.Pod) *resourceapi.ResourceClaim { return leftoverClaim(p, "", "") }},
		{name: "a leftover claim, allocated", leftover: func(p *v1.Pod) *resourceapi.ResourceClaim { return leftoverClaim(p, "b", "gpu-1") }},
		{name: "another pod's leftover claim", memo: true, leftover: func(*v1.Pod) *resourceapi.ResourceClaim {
			return leftoverClaim(mk("other"), "", "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A pod asking the same, with no claim left, fills the memo.
			first := mk("first-" + tc.name)
			memo, _ := preFilterBoth(t, m, first)
			for _, ni := range nodes {
				m.Filter(ctx, memo, first, ni)
			}
			p := mk("p-" + tc.name)
			if tc.leftover != nil {
				if err := f.AddObject(tc.leftover(p)); err != nil {
					t.Fatal(err)
				}
			}
			memo, up := preFilterBoth(t, m, p)
			if got := cycleMemo(memo) != nil; got != tc.memo {
				t.Errorf("the memo serves the cycle: %v, want %v", got, tc.memo)
			}
			for _, ni := range nodes {
				got, want := m.Filter(ctx, memo, p, ni), m.DynamicResources.Filter(ctx, up, p, ni)
				if got.Code() != want.Code() || got.Message() != want.Message() {
					t.Errorf("node %s: memo %v, upstream %v", ni.Node().Name, got, want)
				}
			}
		})
	}
}
