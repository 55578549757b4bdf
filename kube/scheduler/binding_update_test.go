package scheduler

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// relabelled is p updated by the API server: a new label and a new
// resourceVersion, still unassigned.
func relabelled(p *v1.Pod) *v1.Pod {
	u := p.DeepCopy()
	u.ResourceVersion = "2"
	u.Labels = map[string]string{"updated": "yes"}
	return u
}

// TestPodUpdatedDuringItsBindingIsGivenBackUpdated: an update of a pod
// that the informer shows while the pod is assumed (its binding under
// way) does not go to the queue, which must not queue the pod again; if
// the binding then fails or is aborted, the pod goes back to the queue
// as the cluster has it, as kube-scheduler requeues the informer's
// version after a failed binding. It used to go back as popped, and the
// queue kept that stale version (old labels, old tolerations, old
// resourceVersion) until the pod's next update, if any.
func TestPodUpdatedDuringItsBindingIsGivenBackUpdated(t *testing.T) {
	tests := []struct {
		name  string
		group bool // a member of a gang of 2, its binding the one to fail
		// waiting: the binding waits for a slot (not started) until end.
		waiting bool
		end     func(f *fixture, done func(error))
	}{
		{name: "binding fails", end: func(_ *fixture, done func(error)) { done(errors.New("etcd timeout")) }},
		{name: "refused for a stale term", end: func(_ *fixture, done func(error)) { done(staleTerm("p")) }},
		{name: "node deleted before the binding started", waiting: true, end: deleteNodeThenEnd},
		{name: "gang member binding fails", group: true, end: func(_ *fixture, done func(error)) { done(errors.New("etcd timeout")) }},
		{name: "gang member's node deleted before its binding started", group: true, waiting: true, end: deleteNodeThenEnd},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _, nb := gangWithNamedBinder(t, map[string]bool{"p": tc.waiting})
			f.h.AddNode(node("n", 4000))
			p := pod("p", 100)
			if tc.group {
				f.h.AddPodGroup(podGroup("g", 2, 0))
				p = memberPod("p", "g", 100)
				f.h.AddPod(memberPod("q", "g", 100))
			}
			f.h.AddPod(p)
			if out := f.once(); out.Result != Scheduled {
				t.Fatalf("outcome %+v", out)
			}
			u := relabelled(p)
			f.h.UpdatePod(p, u)
			if _, loc, queued := f.q.Get(framework.Key(p)); queued && loc != schedq.InFlight {
				t.Fatalf("the update of an assumed pod queued it (%v)", loc)
			}
			tc.end(f, nb.done["p"])
			if tc.group {
				nb.done["q"](nil) // the last binding of the attempt: p goes back now
			}
			info, loc, ok := f.q.Get(framework.Key(p))
			if !ok {
				t.Fatal("the pod is not given back to the queue")
			}
			if info.Item.ResourceVersion != u.ResourceVersion || info.Item.Labels["updated"] != "yes" {
				t.Fatalf("given back (%v) as resourceVersion %q, labels %v: want the informer's version %q, labels %v",
					loc, info.Item.ResourceVersion, info.Item.Labels, u.ResourceVersion, u.Labels)
			}
		})
	}
}

// TestGangMemberUpdatedWhileHeldToRetry: a group member whose binding
// failed (or whose node went before it started) is held out of every
// queue until the other bindings of its group attempt have ended, then
// given back with its group and the failure's message (docs/gangs.md).
// An update of the member meanwhile used to go to the queue as an Add:
// the member was queued at once, without its failure, while its group's
// bindings were still under way; it now waits, and goes back in its new
// version.
func TestGangMemberUpdatedWhileHeldToRetry(t *testing.T) {
	tests := []struct {
		name    string
		waiting bool // p's binding waits for a slot (not started)
		fail    func(f *fixture, done func(error))
	}{
		{name: "its binding failed", fail: func(_ *fixture, done func(error)) { done(errors.New("etcd timeout")) }},
		{name: "its node deleted before its binding started", waiting: true, fail: deleteNodeThenEnd},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _, nb := gangWithNamedBinder(t, map[string]bool{"p": tc.waiting})
			f.h.AddNode(node("n", 4000))
			f.h.AddPodGroup(podGroup("g", 2, 0))
			p := memberPod("p", "g", 100)
			f.h.AddPod(memberPod("q", "g", 100))
			f.h.AddPod(p)
			if out := f.once(); out.Result != Scheduled {
				t.Fatalf("outcome %+v", out)
			}
			tc.fail(f, nb.done["p"])
			u := relabelled(p)
			f.h.UpdatePod(p, u)
			if _, loc, queued := f.q.Get(framework.Key(p)); queued {
				t.Fatalf("updated while held to retry, the member is queued (%v) before its group's bindings ended", loc)
			}
			nb.done["q"](nil) // the last binding of the attempt
			info, _, ok := f.q.Get(framework.Key(p))
			if !ok {
				t.Fatal("the member is not given back to the queue")
			}
			if info.Item.ResourceVersion != u.ResourceVersion {
				t.Errorf("given back as resourceVersion %q, want the update's %q", info.Item.ResourceVersion, u.ResourceVersion)
			}
			if !strings.Contains(info.Message, "it is retried with its group") {
				t.Errorf("given back with message %q, want the group binding's", info.Message)
			}
		})
	}
}

// hookReserve is a Reserve plugin that runs on, then rejects the pod if
// reject is set.
type hookReserve struct {
	on     func(*v1.Pod)
	reject bool
}

func (hookReserve) Name() string { return "HookReserve" }
func (h hookReserve) Reserve(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) *fwk.Status {
	h.on(p)
	if h.reject {
		return fwk.NewStatus(fwk.Unschedulable, "no")
	}
	return nil
}
func (hookReserve) Unreserve(context.Context, fwk.CycleState, *v1.Pod, string) {}

// withHookReserve is newFWFixture with hookReserve h enabled.
func withHookReserve(t *testing.T, h *hookReserve) *fixture {
	extra := frameworkruntime.Registry{"HookReserve": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return *h, nil
	}}
	return newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		p.Plugins.Reserve.Enabled = append(p.Plugins.Reserve.Enabled, config.Plugin{Name: "HookReserve"})
	})
}

// updateAs returns a hook that shows the informer's update of the pod
// named name (relabelled), once, and keeps the update in *u.
func updateAs(f **fixture, name string, u **v1.Pod) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Name != name || *u != nil {
			return
		}
		orig := p.DeepCopy()
		orig.Spec.NodeName = "" // the informer's pod is unassigned
		*u = relabelled(orig)
		(*f).h.UpdatePod(orig, *u)
	}
}

// TestPodUpdatedDuringReserveIsRequeuedUpdated: an update that the
// informer shows once the pod is assumed, while Reserve runs, goes to the
// binding-to-be rather than the queue; a rejection at Reserve then
// requeues that version, not the one popped.
func TestPodUpdatedDuringReserveIsRequeuedUpdated(t *testing.T) {
	var f *fixture
	var u *v1.Pod
	f = withHookReserve(t, &hookReserve{on: updateAs(&f, "p", &u), reject: true})
	f.h.AddNode(node("n", 1000))
	p := pod("p", 100)
	f.h.AddPod(p)
	if out := f.once(); out.Result != Unschedulable {
		t.Fatalf("outcome %v %q, want Unschedulable at Reserve", out.Result, out.Message)
	}
	requireQueuedAs(t, f, p, u)
}

// TestGangMemberUpdatedDuringItsGroupCycle: an update of a member during
// its group's attempt, before the members become assumptions, is the
// queue's (the attempt is in flight); the queue forgets the placed
// members as the attempt ends, and a member whose binding then failed
// went back as popped. The binding now takes that update over.
func TestGangMemberUpdatedDuringItsGroupCycle(t *testing.T) {
	var f *fixture
	var u *v1.Pod
	f = withHookReserve(t, &hookReserve{on: updateAs(&f, "p", &u)})
	nb := &namedBinder{done: map[string]func(error){}, waiting: map[string]bool{}}
	f.s = mustNew(t, f.q, f.c, nb, f.r, Options{Profiles: f.s.o.Profiles})
	f.h.AddNode(node("n", 4000))
	f.h.AddPodGroup(podGroup("g", 2, 0))
	f.h.AddPod(memberPod("q", "g", 100))
	p := memberPod("p", "g", 100)
	f.h.AddPod(p)
	if out := f.once(); out.Result != Scheduled || u == nil {
		t.Fatalf("outcome %v %q (updated: %v)", out.Result, out.Message, u != nil)
	}
	nb.done["p"](errors.New("etcd timeout"))
	nb.done["q"](nil)
	requireQueuedAs(t, f, p, u)
}

// TestHeldMemberQueuedAllTheSameGetsItsUpdates: a member held to retry
// that a queue took in all the same (a new term's queue, rebuilt from the
// informer while the hold's tally waits for bindings of the ended term
// that never end: they were left in doubt) is that queue's: its updates
// go there, as to any queued pod, and are not kept by the dead hold.
func TestHeldMemberQueuedAllTheSameGetsItsUpdates(t *testing.T) {
	f, _, nb := gangWithNamedBinder(t, map[string]bool{})
	f.h.AddNode(node("n", 4000))
	f.h.AddPodGroup(podGroup("g", 2, 0))
	p := memberPod("p", "g", 100)
	f.h.AddPod(memberPod("q", "g", 100))
	f.h.AddPod(p)
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("outcome %+v", out)
	}
	nb.done["p"](errors.New("etcd timeout")) // held; q's binding never ends
	if err := f.q.Add(p); err != nil {       // as a rebuilt queue takes it in
		t.Fatal(err)
	}
	u := relabelled(p)
	f.h.UpdatePod(p, u)
	requireQueuedAs(t, f, p, u)
}

// requireQueuedAs fails t unless the queue holds p's key as the update u
// (its resourceVersion).
func requireQueuedAs(t *testing.T, f *fixture, p, u *v1.Pod) {
	t.Helper()
	info, _, ok := f.q.Get(framework.Key(p))
	if !ok || info.Item.ResourceVersion != u.ResourceVersion {
		t.Fatalf("queued %v as resourceVersion %q, want the update's %q", ok, info.Item.ResourceVersion, u.ResourceVersion)
	}
}

// gangWithNamedBinder returns newGangFixture's fixture and warnings with
// a scheduler whose bindings wait on the returned binder, by pod name;
// waiting[name] holds a binding before it starts (see namedBinder).
func gangWithNamedBinder(t *testing.T, waiting map[string]bool) (*fixture, *warnings, *namedBinder) {
	t.Helper()
	f, w := newGangFixture(t)
	nb := &namedBinder{done: map[string]func(error){}, waiting: waiting}
	f.s = mustNew(t, f.q, f.c, nb, warnReporter{f.r, w}, Options{})
	return f, w, nb
}

// deleteNodeThenEnd deletes node n, then ends the binding without an
// error: a case's end for a binding aborted by its node's deletion
// before it started.
func deleteNodeThenEnd(f *fixture, done func(error)) {
	f.h.DeleteNode(node("n", 4000))
	done(nil)
}
