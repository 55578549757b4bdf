package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// nextVersion is p as the API server has it after one more update: still
// unassigned, its resourceVersion one more (2 after an unset one), and
// labelled with it.
func nextVersion(p *v1.Pod) *v1.Pod {
	n, _ := strconv.Atoi(p.ResourceVersion)
	u := p.DeepCopy()
	u.Spec.NodeName = ""
	u.ResourceVersion = strconv.Itoa(max(n, 1) + 1)
	u.Labels = map[string]string{"version": u.ResourceVersion}
	return u
}

// updatingPlugin is a Filter, Reserve and Permit plugin that shows the
// informer's updates of the pod it schedules through the fixture's
// handlers: at Filter if early (before Assume: the queue records it, the
// attempt being in flight), and at Reserve (once assumed: its
// binding-to-be holds it). It then fails where fail says
// ("Reserve/reject", "Permit/panic", ...), or lets the pod through. last
// is the newest version it showed (update).
type updatingPlugin struct {
	f     **fixture
	early bool
	fail  string
	last  *v1.Pod
	// still: no update at Reserve.
	still bool
	// then, if set, runs at Reserve after the update (the informer's
	// next events).
	then func(f *fixture)
}

const updatingName = "Updating"

func (*updatingPlugin) Name() string { return updatingName }

// update shows the informer's next version of p (nextVersion of the
// last one shown, or of p).
func (u *updatingPlugin) update(p *v1.Pod) {
	old := u.last
	if old == nil {
		old = p.DeepCopy()
		old.Spec.NodeName = "" // the informer's pod is unassigned
	}
	u.last = nextVersion(old)
	(*u.f).h.UpdatePod(old, u.last)
}

// failAt fails as u.fail says at point, if it names point.
func (u *updatingPlugin) failAt(point string) *fwk.Status {
	switch u.fail {
	case point + "/reject":
		return fwk.NewStatus(fwk.Unschedulable, "rejected at "+point)
	case point + "/panic":
		panic("boom at " + point)
	}
	return nil
}

func (u *updatingPlugin) Filter(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ fwk.NodeInfo) *fwk.Status {
	if u.early && u.last == nil {
		u.update(p)
	}
	return nil
}

func (u *updatingPlugin) Reserve(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) *fwk.Status {
	if !u.still {
		u.update(p)
	}
	if u.then != nil {
		u.then(*u.f)
	}
	return u.failAt("Reserve")
}

func (*updatingPlugin) Unreserve(context.Context, fwk.CycleState, *v1.Pod, string) {}

func (u *updatingPlugin) Permit(context.Context, fwk.CycleState, *v1.Pod, string) (*fwk.Status, time.Duration) {
	return u.failAt("Permit"), 0
}

// TestPodUpdatedBeforeAndAfterAssumeGoesBackAsTheNewest: a lone pod
// updated during its cycle both before Assume (the queue records that
// update, the attempt being in flight) and after (its binding-to-be holds
// that one, the handlers giving the queue no update of an assumed pod)
// goes back to the queue, when Reserve or Permit rejects it, when its
// binding fails or is refused, or when its node's deletion aborts the
// binding, as the newest version, as kube-scheduler requeues the
// informer's version. It used to go back as the first update, which the
// queue's Requeue keeps over the attempt's item. A pod that panicked in
// Reserve or Permit after an update shown once it was assumed went back
// as popped: the recovery requeued the popped attempt, not the version
// its binding-to-be held.
// An update shown after the binding failed, before the requeue, is newer
// than the binding's and stays.
func TestPodUpdatedBeforeAndAfterAssumeGoesBackAsTheNewest(t *testing.T) {
	etcd := errors.New("etcd timeout")
	tests := []struct {
		name  string
		early bool   // updated at Filter too, before Assume
		fail  string // where updatingPlugin fails the cycle
		want  Result // the cycle's
		// waiting: the binding waits for a slot (not started) until end.
		waiting bool
		// end ends the binding (nil: the cycle ended the attempt).
		end func(f *fixture, u *updatingPlugin, r *hookReporter, done func(error))
	}{
		{name: "rejected at Reserve", early: true, fail: "Reserve/reject", want: Unschedulable},
		{name: "rejected at Permit", early: true, fail: "Permit/reject", want: Unschedulable},
		{name: "panics at Reserve", early: true, fail: "Reserve/panic", want: Error},
		{name: "panics at Permit", early: true, fail: "Permit/panic", want: Error},
		{name: "panics at Reserve, updated once assumed only", fail: "Reserve/panic", want: Error},
		{name: "panics at Permit, updated once assumed only", fail: "Permit/panic", want: Error},
		{name: "binding fails", early: true, want: Scheduled, end: func(_ *fixture, _ *updatingPlugin, _ *hookReporter, done func(error)) {
			done(etcd)
		}},
		{name: "refused for a stale term", early: true, want: Scheduled, end: func(_ *fixture, _ *updatingPlugin, _ *hookReporter, done func(error)) {
			done(staleTerm("p"))
		}},
		{name: "node deleted before the binding started", early: true, waiting: true, want: Scheduled, end: func(f *fixture, _ *updatingPlugin, _ *hookReporter, done func(error)) {
			f.h.DeleteNode(node("n", 4000))
			done(nil)
		}},
		{name: "binding fails, updated again before its requeue", early: true, want: Scheduled, end: func(f *fixture, u *updatingPlugin, r *hookReporter, done func(error)) {
			// Reported after the assumption is forgotten, before the
			// requeue: the third update reaches the queue.
			r.on = func() { r.on = nil; u.update(u.last) }
			done(etcd)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f *fixture
			u := &updatingPlugin{f: &f, early: tc.early, fail: tc.fail}
			f = updatingFixture(t, u)
			nb := &namedBinder{done: map[string]func(error){}, waiting: map[string]bool{"p": tc.waiting}}
			r := &hookReporter{warnReporter: warnReporter{f.r, &warnings{}}}
			f.s = mustNew(t, f.q, f.c, nb, r, Options{Profiles: f.s.o.Profiles, Logger: slog.New(slog.DiscardHandler)})
			f.h.AddNode(node("n", 4000))
			p := pod("p", 100)
			f.h.AddPod(p)
			if out := f.once(); out.Result != tc.want {
				t.Fatalf("outcome %v %q, want %v", out.Result, out.Message, tc.want)
			}
			if tc.end != nil {
				tc.end(f, u, r, nb.done["p"])
			}
			if len(f.assumedPods()) != 0 {
				t.Fatalf("left assumed: %v", f.assumedPods())
			}
			requireQueuedAs(t, f, p, u.last)
		})
	}
}

// labelHearing is updatingPlugin with a queueing hint: the pod it
// rejected is tried again after an update of its labels (each of
// updatingPlugin's updates is one), and after nothing else.
type labelHearing struct{ *updatingPlugin }

func (labelHearing) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	queue := func(klog.Logger, *v1.Pod, any, any) (fwk.QueueingHint, error) { return fwk.Queue, nil }
	return []fwk.ClusterEventWithHint{{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.UpdatePodLabel}, QueueingHintFn: queue}}, nil
}

// TestPodUpdatedOnceAssumedIsHeardAfterARejection: a lone pod that Reserve
// or Permit rejects after the informer showed it updated once assumed
// goes back as that version, and the update's events are judged by the
// rejecting plugins' hints, as those of an update seen earlier in the
// cycle are: here the rejecting plugin's hint takes the pod's label
// change, so the pod is not parked. Before, the update's events counted
// only if the pod had also been updated before Assume (the hand-over
// then recorded them as an update of the queue's version); otherwise
// the pod was parked, waiting for an event the update had already
// brought. kube-scheduler v1.37.2 drops an assumed pod's updates, events
// and all (README's table of differences).
func TestPodUpdatedOnceAssumedIsHeardAfterARejection(t *testing.T) {
	tests := []struct {
		name   string
		early  bool // updated at Filter too, before Assume
		still  bool // not updated once assumed
		fail   string
		parked bool
	}{
		{name: "rejected at Reserve, updated once assumed only", fail: "Reserve/reject"},
		{name: "rejected at Permit, updated once assumed only", fail: "Permit/reject"},
		{name: "rejected at Reserve, updated before and once assumed", early: true, fail: "Reserve/reject"},
		{name: "rejected at Permit, updated before Assume only", early: true, still: true, fail: "Permit/reject"},
		{name: "rejected at Reserve, not updated", still: true, fail: "Reserve/reject", parked: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f *fixture
			u := &updatingPlugin{f: &f, early: tc.early, fail: tc.fail, still: tc.still}
			f = updatingFixture(t, labelHearing{u})
			f.h.AddNode(node("n", 4000))
			p := pod("p", 100)
			f.h.AddPod(p)
			if out := f.once(); out.Result != Unschedulable {
				t.Fatalf("outcome %v %q, want Unschedulable", out.Result, out.Message)
			}
			want := u.last
			if want == nil {
				want = p
			}
			requireQueuedAs(t, f, p, want)
			if _, loc, _ := f.q.Get(framework.Key(p)); (loc == schedq.InUnschedulable) != tc.parked {
				t.Fatalf("pod is %v, want parked %v", loc, tc.parked)
			}
		})
	}
}

// TestHandOverLeavesOtherPodsAlone: the hand-over of a lone pod's update
// held by its binding-to-be, when Reserve or Permit rejects the pod or
// its node's deletion aborts the binding, touches only the attempt's own
// pod in flight. The informer's later events, seen during Reserve after
// the update, decide otherwise: a pod deleted meanwhile stays out of the
// queue; one deleted and created again under its name (another UID) is
// queued as the new pod, not replaced by the old one's update; one bound
// meanwhile is not queued again.
func TestHandOverLeavesOtherPodsAlone(t *testing.T) {
	recreated := pod("p", 100)
	recreated.UID = "uid-p-2"
	recreated.ResourceVersion = "50"
	tests := []struct {
		name string
		fail string
		then func(f *fixture, u *updatingPlugin)
		// want is the pod queued under p's key, nil for none.
		want func(u *updatingPlugin) *v1.Pod
	}{
		{name: "deleted, then rejected at Reserve", fail: "Reserve/reject",
			then: func(f *fixture, u *updatingPlugin) { f.h.DeletePod(u.last) },
			want: func(*updatingPlugin) *v1.Pod { return nil }},
		{name: "deleted, then rejected at Permit", fail: "Permit/reject",
			then: func(f *fixture, u *updatingPlugin) { f.h.DeletePod(u.last) },
			want: func(*updatingPlugin) *v1.Pod { return nil }},
		{name: "created again, then rejected at Reserve", fail: "Reserve/reject",
			then: func(f *fixture, u *updatingPlugin) { f.h.DeletePod(u.last); f.h.AddPod(recreated) },
			want: func(*updatingPlugin) *v1.Pod { return recreated }},
		{name: "created again as an update, then rejected at Permit", fail: "Permit/reject",
			then: func(f *fixture, u *updatingPlugin) { f.h.UpdatePod(u.last, recreated) },
			want: func(*updatingPlugin) *v1.Pod { return recreated }},
		{name: "bound, then rejected at Reserve", fail: "Reserve/reject",
			then: func(f *fixture, u *updatingPlugin) {
				b := u.last.DeepCopy()
				b.Spec.NodeName = "n"
				f.h.UpdatePod(u.last, b)
			},
			want: func(*updatingPlugin) *v1.Pod { return nil }},
		{name: "its node deleted, then rejected at Reserve", fail: "Reserve/reject",
			then: func(f *fixture, _ *updatingPlugin) { f.h.DeleteNode(node("n", 4000)) },
			want: func(u *updatingPlugin) *v1.Pod { return u.last }},
		{name: "its node deleted, then created again", fail: "Permit/reject",
			then: func(f *fixture, u *updatingPlugin) {
				f.h.DeleteNode(node("n", 4000))
				f.h.DeletePod(u.last)
				f.h.AddPod(recreated)
			},
			want: func(*updatingPlugin) *v1.Pod { return recreated }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f *fixture
			u := &updatingPlugin{f: &f, early: true, fail: tc.fail}
			u.then = func(f *fixture) { u.then = nil; tc.then(f, u) }
			f = updatingFixture(t, u)
			f.h.AddNode(node("n", 4000))
			p := pod("p", 100)
			f.h.AddPod(p)
			f.once()
			if a := f.assumedPods(); len(a) != 0 {
				t.Fatalf("left assumed: %v", a)
			}
			want := tc.want(u)
			info, loc, ok := f.q.Get(framework.Key(p))
			switch {
			case want == nil && ok:
				t.Fatalf("queued (%v) as %s/%s, want not queued", loc, info.Item.UID, info.Item.ResourceVersion)
			case want != nil && (!ok || loc == schedq.InFlight || info.Item.UID != want.UID || info.Item.ResourceVersion != want.ResourceVersion):
				t.Fatalf("queued %v (%v) as %s/%s, want %s/%s", ok, loc, info.Item.UID, info.Item.ResourceVersion, want.UID, want.ResourceVersion)
			}
		})
	}
}

// updatingFixture is a framework fixture with pl, the plugin named
// updatingName, enabled at Filter, Reserve and Permit.
func updatingFixture(t *testing.T, pl fwk.Plugin) *fixture {
	t.Helper()
	extra := frameworkruntime.Registry{updatingName: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return pl, nil
	}}
	return newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		on := config.Plugin{Name: updatingName}
		p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, on)
		p.Plugins.Reserve.Enabled = append(p.Plugins.Reserve.Enabled, on)
		p.Plugins.Permit.Enabled = append(p.Plugins.Permit.Enabled, on)
	})
}
