package sim

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestBindingAnswersAreTheAPIServers: the simulated API server refuses a
// binding with the kind of error the real one gives (the pod gone: not
// found; replaced under its name, being deleted or bound already: a
// conflict), since the scheduler tells a pod gone or bound meanwhile
// from a failed binding by that kind, and only reports and retries the
// latter.
func TestBindingAnswersAreTheAPIServers(t *testing.T) {
	key := types.NamespacedName{Namespace: "d", Name: "p"}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "p", UID: "u"}}
	for _, tc := range []struct {
		name string
		cur  func() *v1.Pod
		is   func(error) bool
	}{
		{name: "gone", cur: func() *v1.Pod { return nil }, is: apierrors.IsNotFound},
		{name: "replaced", cur: func() *v1.Pod { p := pod.DeepCopy(); p.UID = "other"; return p }, is: apierrors.IsConflict},
		{name: "being deleted", cur: func() *v1.Pod {
			p := pod.DeepCopy()
			p.DeletionTimestamp = &metav1.Time{Time: epoch}
			return p
		}, is: apierrors.IsConflict},
		{name: "bound already", cur: func() *v1.Pod { p := pod.DeepCopy(); p.Spec.NodeName = "n-1"; return p }, is: apierrors.IsConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newSim(parse(t, "name: x\nnodes: [{name: n, count: 2, capacity: {cpu: \"2\"}}]\npods: [{name: q, count: 1, arrival: {at: 1m}}]\n"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			if cur := tc.cur(); cur != nil {
				s.cl.pods[key] = cur
			}
			var got error
			s.bindDone(pod, "n-0", func(err error) { got = err })
			if got == nil || !tc.is(got) {
				t.Errorf("binding answered %v, want the API server's kind of refusal", got)
			}
		})
	}
}

// TestPodDeletedWhileBoundHasNoFailure: a pod deleted while its binding
// is under way ends without a failure in its record, as kube-scheduler
// and schedq's live scheduler end it (the binding's 404: gone, nothing
// to report), not with "binding rejected".
func TestPodDeletedWhileBoundHasNoFailure(t *testing.T) {
	s, err := newSim(parse(t, "name: x\nnodes: [{name: n, count: 1, capacity: {cpu: \"2\"}}]\npods: [{name: q, count: 1}]\nscheduler: {bindLatency: 1s}\n"), Options{CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	key := types.NamespacedName{Namespace: "default", Name: "q-0"}
	s.at(epoch.Add(500*time.Millisecond), func() {
		p := s.cl.pods[key]
		delete(s.cl.pods, key)
		s.ended(p, endDeleted)
		s.h.DeletePod(p)
	})
	if err := s.loop(); err != nil {
		t.Fatal(err)
	}
	if msg := s.order[0].lastMessage; msg != "" {
		t.Errorf("pod deleted during its binding has the failure %q, want none", msg)
	}
	if _, _, ok := s.core.Get(key); ok {
		t.Errorf("pod deleted during its binding is back in the queue")
	}
}
