package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// newFWPreemptFixture is newFWFixture with preemption on, through
// kube-scheduler's DefaultPreemption, and the budgets given.
func newFWPreemptFixture(t *testing.T, extra frameworkruntime.Registry, mutate func(*config.KubeSchedulerProfile), budgets ...*policyv1.PodDisruptionBudget) (*fixture, *syncEvictor) {
	t.Helper()
	f := newFWFixture(t, extra, mutate)
	e := &syncEvictor{f: f}
	err := f.s.EnablePreemption(PreemptionOptions{Evictor: e,
		Budgets: func() []*policyv1.PodDisruptionBudget { return budgets }})
	if err != nil {
		t.Fatal(err)
	}
	if f.s.cur.pre == nil {
		t.Fatal("the default profile's DefaultPreemption was not adapted")
	}
	return f, e
}

func sortedVictims(out Outcome) string {
	var names []string
	for _, v := range out.Victims {
		names = append(names, v.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// TestFrameworkPreemptionEvictsTheFewestLowestVictimsAndBindsThere:
// DefaultPreemption keeps the most important potential victim on a,
// prefers a (lowest highest-victim priority) to b, the pod is nominated
// in the queue, a lower-priority pod nominated to a loses its
// nomination, the victims go through schedq's evictor, and the pod is
// bound to a once they are gone.
func TestFrameworkPreemptionEvictsTheFewestLowestVictimsAndBindsThere(t *testing.T) {
	f, e := newFWPreemptFixture(t, nil, nil)
	f.h.AddNode(node("a", 4000))
	f.h.AddNode(node("b", 4000))
	f.h.AddPod(runningPod("a-low1", "a", 1000, 1, t0))
	f.h.AddPod(runningPod("a-low2", "a", 1000, 1, t0))
	f.h.AddPod(runningPod("a-low3", "a", 2000, 2, t0))
	f.h.AddPod(runningPod("b-low", "b", 2000, 5, t0))
	f.h.AddPod(runningPod("b-mid", "b", 2000, 50, t0))
	f.h.AddPod(prioPod("high", 2000, 100))
	f.h.AddPod(prioPod("mid", 4000, 50))
	if err := f.q.Nominate(types.NamespacedName{Namespace: "default", Name: "mid"}, "a"); err != nil {
		t.Fatal(err)
	}
	e.hold = true
	out := f.once()
	if got := sortedVictims(out); out.Result != Unschedulable || out.Nominated != "a" || got != "a-low1,a-low2" {
		t.Fatalf("result %v, nominated %q, victims %s: %s", out.Result, out.Nominated, got, out.Message)
	}
	if !strings.Contains(out.Message, "preempting 2 victims") {
		t.Fatalf("message %q lacks DefaultPreemption's", out.Message)
	}
	if got := f.nomination("high"); got != "a" {
		t.Fatalf("nominated to %q in the queue", got)
	}
	if got := f.nomination("mid"); got != "" {
		t.Fatalf("the lower-priority pod is still nominated to %q", got)
	}
	if len(e.calls) != 1 || !strings.HasPrefix(e.calls[0], "high->a: ") {
		t.Fatalf("evictor calls %v", e.calls)
	}
	if _, ok := f.c.NodeOf(types.NamespacedName{Namespace: "default", Name: "a-low1"}); !ok {
		t.Fatal("victim gone before the evictor ran")
	}
	e.held[0]()
	if err := f.q.Activate(types.NamespacedName{Namespace: "default", Name: "high"}); err != nil {
		t.Fatal(err)
	}
	if out := f.once(); out.Result != Scheduled || out.Node != "a" || f.b.binds["high"] != "a" {
		t.Fatalf("after the victims left: %+v, binds %v", out, f.b.binds)
	}
	if got := f.nomination("high"); got != "" {
		t.Fatalf("still nominated to %q after binding", got)
	}
}

func TestFrameworkPreemptionPolicyNever(t *testing.T) {
	f, e := newFWPreemptFixture(t, nil, nil)
	f.h.AddNode(node("a", 2000))
	f.h.AddPod(runningPod("low", "a", 2000, 1, t0))
	p := prioPod("polite", 2000, 100)
	never := v1.PreemptNever
	p.Spec.PreemptionPolicy = &never
	f.h.AddPod(p)
	out := f.once()
	if out.Result != Unschedulable || out.Nominated != "" || len(e.calls) != 0 || !strings.Contains(out.Message, "preemptionPolicy=Never") {
		t.Fatalf("result %v, nominated %q, calls %v: %s", out.Result, out.Nominated, e.calls, out.Message)
	}
	if got := f.nomination("polite"); got != "" {
		t.Fatalf("nominated to %q", got)
	}
}

// TestFrameworkFailingEvictionClearsTheNomination: the evictor fails;
// the nomination is cleared, the pod may preempt again, and the next
// cycle runs as usual.
func TestFrameworkFailingEvictionClearsTheNomination(t *testing.T) {
	f, e := newFWPreemptFixture(t, nil, nil)
	e.fail = errors.New("apiserver says no")
	f.h.AddNode(node("a", 2000))
	f.h.AddPod(runningPod("low", "a", 2000, 1, t0))
	f.h.AddPod(prioPod("high", 2000, 100))
	out := f.once()
	if out.Result != Unschedulable || out.Nominated != "a" || f.nomination("high") != "" {
		t.Fatalf("result %v, nominated %q, nomination %q: %s", out.Result, out.Nominated, f.nomination("high"), out.Message)
	}
	f.h.AddPod(prioPod("other", 10, 0))
	if out := f.once(); out.Result == Error {
		t.Fatalf("next cycle %+v", out)
	}
	if err := f.q.Activate(types.NamespacedName{Namespace: "default", Name: "high"}); err != nil {
		t.Fatal(err)
	}
	if out := f.once(); out.Nominated != "a" || len(e.calls) != 2 {
		t.Fatalf("second attempt: nominated %q, calls %v: %s", out.Nominated, e.calls, out.Message)
	}
}

// panickyPostFilter panics at PostFilter for pods labelled
// fail=postfilter; panickyDryRun's filter panics for pods labelled
// fail=dryrun on a node that is not the snapshot's (the copy that
// DefaultPreemption's dry run filters, on the parallelizer's goroutine).
type panickyPostFilter struct{}

func (panickyPostFilter) Name() string { return "PanickyPostFilter" }
func (panickyPostFilter) PostFilter(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if p.Labels["fail"] == "postfilter" {
		panic("postfilter panics")
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}

type panickyDryRun struct{ h fwk.Handle }

func (panickyDryRun) Name() string { return "PanickyDryRun" }
func (d panickyDryRun) Filter(_ context.Context, _ fwk.CycleState, p *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if p.Labels["fail"] == "dryrun" {
		if snap, err := d.h.SnapshotSharedLister().NodeInfos().Get(ni.Node().Name); err == nil && snap != ni {
			panic("filter panics in the dry run")
		}
	}
	return nil
}

// TestFrameworkPreemptionPanicFailsOnlyThatPod: a PostFilter plugin
// that panics, and a filter that panics during DefaultPreemption's dry
// run, fail that pod's attempt as an error; the next pod preempts.
func TestFrameworkPreemptionPanicFailsOnlyThatPod(t *testing.T) {
	extra := frameworkruntime.Registry{
		"PanickyPostFilter": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return panickyPostFilter{}, nil
		},
		"PanickyDryRun": func(_ context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return panickyDryRun{h}, nil
		},
	}
	f, e := newFWPreemptFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		p.Plugins.PostFilter.Enabled = append(p.Plugins.PostFilter.Enabled, config.Plugin{Name: "PanickyPostFilter"})
		p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, config.Plugin{Name: "PanickyDryRun"})
	})
	f.h.AddNode(node("a", 2000))
	f.h.AddPod(runningPod("low", "a", 2000, 1, t0))
	for _, c := range []struct{ name, fail, want string }{
		{"boom", "postfilter", "panicked: postfilter panics"},
		{"dry", "dryrun", "plugin panic: filter panics in the dry run"},
	} {
		p := prioPod(c.name, 2000, 100)
		p.Labels = map[string]string{"fail": c.fail}
		if c.fail == "postfilter" {
			// DefaultPreemption (first) refuses it; the framework goes on
			// to the next PostFilter plugin.
			never := v1.PreemptNever
			p.Spec.PreemptionPolicy = &never
		}
		f.h.AddPod(p)
		out := f.once()
		if out.Nominated != "" || len(e.calls) != 0 || !strings.Contains(out.Message, c.want) {
			t.Fatalf("%s: %+v, want no preemption and %q", c.name, out, c.want)
		}
		if _, loc, _ := f.q.Get(framework.Key(p)); loc != schedq.InBackoff && loc != schedq.InUnschedulable {
			t.Fatalf("%s is %v, want requeued", c.name, loc)
		}
		f.h.DeletePod(p)
	}
	f.h.AddPod(prioPod("fine", 2000, 100))
	if out := f.once(); out.Nominated != "a" || len(e.calls) != 1 {
		t.Fatalf("the next pod: nominated %q, calls %v: %s", out.Nominated, e.calls, out.Message)
	}
}

// TestFrameworkPreemptionBurstWithChurn is the preemption burst on the
// framework path (DefaultPreemption through the framework, the queue's
// hints from the framework), while another goroutine adds and deletes
// nodes and pods bound by another scheduler through the handlers, as
// informers do: under -race, exactly one victim per preemptor, every
// preemptor bound.
func TestFrameworkPreemptionBurstWithChurn(t *testing.T) {
	fw := defaultFramework(t)
	churn := func(ctx context.Context, h *Handlers) {
		for i := 0; ctx.Err() == nil; i++ {
			name := fmt.Sprint("churn", i%3)
			n := node(name, 500) // too small for a preemptor
			h.AddNode(n)
			other := pod(fmt.Sprint("other", i%5), 100)
			other.Spec.SchedulerName, other.Spec.NodeName = "default-scheduler", name
			h.AddPod(other)
			h.DeletePod(other)
			h.DeleteNode(n)
		}
	}
	burstPreemption(t, fw, churn)
}

// TestFrameworkLeavingPodsRoomCountsAsFree: a terminating pod is never a
// victim and its room counts as free: where that room is enough, the
// pod is nominated with no victim; elsewhere the search evicts only
// what the leaving pods do not free.
func TestFrameworkLeavingPodsRoomCountsAsFree(t *testing.T) {
	f, e := newFWPreemptFixture(t, nil, nil)
	f.h.AddNode(node("a", 2000))
	leaving := runningPod("leaving", "a", 1000, 1, t0)
	leaving.DeletionTimestamp = &metav1.Time{Time: t0}
	f.h.AddPod(leaving)
	f.h.AddPod(runningPod("stays", "a", 1000, 1, t0))
	f.h.AddPod(prioPod("small", 1000, 100))
	out := f.once()
	if out.Nominated != "a" || len(out.Victims) != 0 || len(e.calls) != 1 || e.calls[0] != "small->a: " {
		t.Fatalf("nominated %q, victims %s, calls %v: %s", out.Nominated, victimNames(out), e.calls, out.Message)
	}
	// A larger pod needs "stays" gone too, not "leaving" again.
	f.h.AddPod(prioPod("large", 2000, 200))
	out = f.once()
	if out.Nominated != "a" || victimNames(out) != "stays" {
		t.Fatalf("nominated %q, victims %s, calls %v: %s", out.Nominated, victimNames(out), e.calls, out.Message)
	}
}

// TestPreemptionLiftsAVictimsAntiAffinity: the node has room, but a pod
// of lower priority there forbids the preemptor by its required
// anti-affinity. InterPodAffinity's PreFilter extensions let
// DefaultPreemption's dry run see that evicting it helps, and only it.
func TestPreemptionLiftsAVictimsAntiAffinity(t *testing.T) {
	f, e := newPreemptFixture(t)
	f.h.AddNode(zonedNode("a", "z"))
	guard := runningPod("guard", "a", 1000, 1, t0)
	guard.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: "kubernetes.io/hostname",
	}}}}
	f.h.AddPod(guard)
	f.h.AddPod(runningPod("bystander", "a", 1000, 1, t0))
	web := prioPod("web", 1000, 100)
	web.Labels = map[string]string{"app": "web"}
	f.h.AddPod(web)
	out := f.once()
	if out.Nominated != "a" || victimNames(out) != "guard" {
		t.Fatalf("nominated %q, victims %q, calls %v: %s", out.Nominated, victimNames(out), e.calls, out.Message)
	}
}
