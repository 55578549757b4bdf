package sim

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestBindingOfAPodBeingDeletedIsRefused: the simulated API server
// refuses to bind a pod whose deletion has started, as the real one does
// (a deletionTimestamp is never removed, so such a pod is never bound).
// The scheduler frees an assumed pod's room at the update that shows its
// deletion started; a binding the simulator let through would put the
// pod back on its node after that room was given away.
func TestBindingOfAPodBeingDeletedIsRefused(t *testing.T) {
	s, err := newSim(parse(t, "name: x\nnodes: [{name: n, count: 2, capacity: {cpu: \"2\"}}]\npods: [{name: q, count: 1, arrival: {at: 1m}}]\n"), Options{CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	key := types.NamespacedName{Namespace: "d", Name: "p"}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "p", UID: "u"}}
	p.DeletionTimestamp = &metav1.Time{Time: epoch.Add(time.Second)}
	s.cl.pods[key] = p
	var got error
	called := false
	s.bindDone(p, "n-0", func(err error) { got, called = err, true })
	if !called || got == nil {
		t.Errorf("binding of a pod being deleted answered %v (called %v), want a refusal", got, called)
	}
	if n := s.cl.pods[key].Spec.NodeName; n != "" {
		t.Errorf("pod being deleted bound to %q", n)
	}
}
