package scheduler

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq/kube/framework"
)

// TestAssumedPodBeingDeletedFreesItsRoomAtOnce: an update that shows an
// assumed pod's deletion started (a finalizer keeps the object) frees
// its room at once, as kube-scheduler v1.37.2's handleAssumedPodDeletion
// does, and wakes the pods it kept out. Before, the room was held until
// the binding ended (the API server refuses to bind a pod being deleted)
// or the pod was gone: for as long as a PreBind waited (a volume's or a
// device's binding, up to minutes). The refusal that ends the binding
// later changes nothing: the pod is not queued again, and the pod placed
// meanwhile keeps its place. A bound pod being deleted stays counted
// until its deletion, in both: upstream's NodeInfo counts terminating
// pods.
func TestAssumedPodBeingDeletedFreesItsRoomAtOnce(t *testing.T) {
	f := newFixture(t)
	hb := &oneHeldBinder{}
	f.s.binder = hb
	f.h.AddNode(node("a", 1000))
	p := pod("p", 800)
	f.h.AddPod(p)
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("p: %+v", out)
	}
	f.h.AddPod(pod("q", 800))
	f.s.binder = f.b
	if out := f.once(); out.Result != Unschedulable {
		t.Fatalf("q beside p's room: %+v, want Unschedulable", out)
	}
	going := p.DeepCopy()
	going.DeletionTimestamp = &metav1.Time{Time: time.Unix(100, 0)}
	f.h.UpdatePod(p, going)
	if n, ok := f.c.NodeOf(framework.Key(p)); ok {
		t.Fatalf("p, being deleted while its binding is under way, still counted on %q", n)
	}
	if out := f.once(); out.Result != Scheduled || out.Node != "a" {
		t.Fatalf("q once p is being deleted: %+v, want Scheduled on a", out)
	}
	hb.done(apierrors.NewInternalError(errors.New("pod p is being deleted, cannot be assigned to a host")))
	if loc := f.where("p"); loc != 0 {
		t.Errorf("p, being deleted, queued again (%v) after its binding was refused", loc)
	}
	if n, ok := f.c.NodeOf(framework.Key(pod("q", 0))); !ok || n != "a" {
		t.Errorf("q on %q (%v) after p's binding was refused, want a", n, ok)
	}
}
