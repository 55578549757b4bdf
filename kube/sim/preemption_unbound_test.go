package sim

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestEvictedUnboundVictimGoesAtOnce: a victim whose eviction finds it
// not on a node (its binding failed meanwhile: its node was removed
// during the bind latency) is deleted at once, as the API server deletes
// a pod that is not scheduled, whatever the grace period; a bound victim
// terminates for its grace period first. The simulator used to let the
// pending victim terminate for the whole grace period, so that its
// controller's new pod came that much later than in a cluster.
func TestEvictedUnboundVictimGoesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		node      string // the victim's spec.nodeName at its eviction
		wantStays bool   // still in the cluster, terminating, right after
	}{
		{name: "not on a node", node: "", wantStays: false},
		{name: "bound", node: "n-0", wantStays: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parse(t, "name: x\nnodes: [{name: n, count: 1, capacity: {cpu: \"2\"}}]\npods: [{name: q, count: 1, arrival: {at: 1m}}]\nscheduler: {preemption: {podGracePeriods: true, recreateVictims: true}}\n")
			s, err := newSim(sc, Options{CheckInvariants: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			key := types.NamespacedName{Namespace: "default", Name: "v"}
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "v", UID: "u"}, Spec: v1.PodSpec{NodeName: tc.node, SchedulerName: schedulerName}}
			s.cl.pods[key] = p
			s.evict(key, "u")
			cur := s.cl.pods[key]
			stays := cur != nil && cur.UID == "u"
			if stays != tc.wantStays {
				t.Fatalf("victim still there, terminating: %v, want %v (%+v)", stays, tc.wantStays, cur)
			}
			if !tc.wantStays && (cur == nil || cur.DeletionTimestamp != nil || s.pre.recreated != 1) {
				t.Errorf("victim not recreated at once: %+v, %d recreated", cur, s.pre.recreated)
			}
			if tc.wantStays && (cur.DeletionTimestamp == nil || !cur.DeletionTimestamp.Time.Equal(s.now)) {
				t.Errorf("bound victim %+v, want terminating from now", cur.ObjectMeta)
			}
		})
	}
}
