package scheduler

import (
	"context"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/schedq/schedq"
)

// TestRegisterPodGroups feeds the handlers from a PodGroup informer (on a
// fake clientset): a PodGroup listed at start, then one deleted, reach the
// queue.
func TestRegisterPodGroups(t *testing.T) {
	f, _ := newGangFixture(t)
	f.h.AddNode(node("a", 8000))
	f.addGang("listed", 2, 1000)
	cs := fake.NewClientset(podGroup("listed", 2, 0))
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Scheduling().V1beta1().PodGroups().Informer()
	synced, err := f.h.RegisterPodGroups(inf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		t.Fatal("not synced")
	}
	if loc := f.where("listed-0"); loc != schedq.InActive {
		t.Fatalf("member is %v after its PodGroup was listed, want active", loc)
	}
	// A deletion sends the members back to wait.
	f.h.DeletePodGroup(podGroup("listed", 2, 0))
	if loc := f.where("listed-0"); loc != schedq.InIncomplete {
		t.Fatalf("member is %v after its PodGroup was deleted", loc)
	}
}
