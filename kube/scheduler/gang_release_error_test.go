package scheduler

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq/kube/framework"
)

// TestGangReleaseGraceOutlastsAPanickingAttempt: a gang left below its
// minCount whose missing members do not fit is released at its first
// failed attempt 30 s after the first, even when an attempt between the
// two panicked (a plugin's panic fails that attempt as an error, and says
// nothing of how many members are bound). Before, the panicking attempt
// reported 0 members bound before it, which gang release took for a gang
// that had completed: it forgot when the gang first failed, the grace
// period started again at the next failure, and a gang whose attempts
// panicked now and then kept its bound members for good.
func TestGangReleaseGraceOutlastsAPanickingAttempt(t *testing.T) {
	extra := frameworkruntime.Registry{"FailingFilter": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return failingFilter{}, nil
	}}
	f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, config.Plugin{Name: "FailingFilter"})
	})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.s = mustNew(t, f.q, f.c, f.b, f.r, Options{Profiles: f.s.o.Profiles, Now: func() time.Time { return now }})
	rel := &recReleaser{}
	if err := f.s.EnableGangRelease(GangReleaseOptions{Releaser: rel, After: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	// Gang train (minCount 4, 1 cpu each): 2 members bound on n1, which
	// they fill; 2 pending that fit nowhere (n2 is full).
	f.h.AddNode(node("n1", 2000))
	f.h.AddNode(node("n2", 2000))
	f.h.AddPodGroup(podGroup("train", 4, 0))
	for i := range 2 {
		p := owned(memberPod(fmt.Sprintf("train-%d", i), "train", 1000))
		p.UID, p.Spec.NodeName = types.UID(p.Name), "n1"
		f.h.AddPod(p)
	}
	hi := pod("high", 2000)
	hi.Spec.NodeName = "n2"
	f.h.AddPod(hi)
	pending := owned(memberPod("train-2", "train", 1000))
	f.h.AddPod(pending)
	f.h.AddPod(owned(memberPod("train-3", "train", 1000)))

	if out := f.once(); out.Result != Unschedulable {
		t.Fatalf("first attempt: %+v", out)
	}
	// 10 s on, an attempt panics in a filter, on a node with room for a
	// member, gone before the next attempt.
	now = now.Add(10 * time.Second)
	f.h.AddNode(node("small", 1000))
	panicking := pending.DeepCopy()
	panicking.Labels = map[string]string{"fail": "panic"}
	f.h.UpdatePod(pending, panicking)
	f.q.Activate(framework.Key(pending))
	if out := f.once(); out.Result != Error {
		t.Fatalf("the panicking attempt: %+v", out)
	}
	f.h.DeleteNode(node("small", 1000))
	// 31 s after the first failure, an attempt fails again: the grace is over.
	now = now.Add(21 * time.Second)
	calm := panicking.DeepCopy()
	calm.Labels = nil
	f.h.UpdatePod(panicking, calm)
	f.q.Activate(framework.Key(pending))
	if out := f.once(); out.Result != Unschedulable {
		t.Fatalf("the attempt after the grace: %+v", out)
	}
	if got := rel.got(); len(got) != 1 || !slices.Equal(got[0], []string{"train-0", "train-1"}) {
		t.Fatalf("releases %v, want the two bound members once", got)
	}
}
