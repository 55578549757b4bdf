package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/plugins"
)

// warnings records the warning events of Warner.
type warnings struct{ got []string }

func (w *warnings) Warn(_ context.Context, obj runtime.Object, reason, msg string) {
	name := ""
	if o, ok := obj.(metav1.Object); ok {
		name = o.GetName()
	}
	w.got = append(w.got, name+": "+reason+": "+msg)
}

// warnReporter is recReporter with warnings.
type warnReporter struct {
	*recReporter
	*warnings
}

func (r warnReporter) Warn(ctx context.Context, obj runtime.Object, reason, msg string) {
	r.warnings.Warn(ctx, obj, reason, msg)
}

func newGangFixture(t *testing.T) (*fixture, *warnings) {
	t.Helper()
	q, err := schedq.New(testQueueConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache()
	w := &warnings{}
	f := &fixture{t: t, q: q, c: c, b: &syncBinder{}, r: &recReporter{}}
	f.h = &Handlers{Queue: q, Cache: c, SchedulerName: "schedq", Events: w}
	f.s = mustNew(t, q, c, f.b, warnReporter{f.r, w}, Options{})
	return f, w
}

func podGroup(name string, minCount int32, priority int32) *schedulingv1beta1.PodGroup {
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	pg.Spec.Priority = &priority
	if minCount < 0 {
		pg.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
	} else {
		pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}
	}
	return pg
}

func memberPod(name, group string, milliCPU int64) *v1.Pod {
	p := pod(name, milliCPU)
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	return p
}

// addGang adds n members of group, each asking for milliCPU.
func (f *fixture) addGang(group string, n int, milliCPU int64) {
	for i := range n {
		f.h.AddPod(memberPod(fmt.Sprintf("%s-%d", group, i), group, milliCPU))
	}
}

func (f *fixture) where(name string) schedq.Location {
	_, loc, _ := f.q.Get(framework.Key(pod(name, 0)))
	return loc
}

func TestGangThatFitsBindsAll(t *testing.T) {
	f, _ := newGangFixture(t)
	f.h.AddNode(node("a", 2000))
	f.h.AddNode(node("b", 2000))
	f.h.AddPodGroup(podGroup("train", 4, 0))
	f.addGang("train", 4, 1000)
	out := f.once()
	if out.Result != Scheduled || len(f.b.binds) != 4 {
		t.Fatalf("outcome %+v, binds %v", out, f.b.binds)
	}
	if c := f.q.Counts(); c != (schedq.Counts{}) {
		t.Fatalf("queue %+v after the gang bound", c)
	}
	if n := f.c.GroupPlaced("default/train"); n != 4 {
		t.Fatalf("cache counts %d members placed", n)
	}
}

func TestGangThatDoesNotFitBindsNoneAndWaitsForANode(t *testing.T) {
	f, _ := newGangFixture(t)
	f.h.AddNode(node("a", 2000))
	f.h.AddNode(node("b", 1000))
	f.h.AddPodGroup(podGroup("train", 4, 0))
	f.addGang("train", 4, 1000)
	out := f.once()
	if out.Result != Unschedulable || len(f.b.binds) != 0 {
		t.Fatalf("outcome %+v, binds %v", out, f.b.binds)
	}
	if !strings.Contains(out.Message, "group default/train: 3 of 4 members fit (0 bound before), minCount 4") ||
		!strings.Contains(out.Message, "Insufficient cpu") {
		t.Fatalf("message %q", out.Message)
	}
	if n := len(f.c.assumed); n != 0 {
		t.Fatalf("%d pods left assumed after a failed gang", n)
	}
	for _, ni := range []string{"a", "b"} {
		if n, _ := f.c.nodes[ni]; n.Requested.MilliCPU != 0 {
			t.Fatalf("node %s has %dm requested after a failed gang", ni, n.Requested.MilliCPU)
		}
	}
	if len(f.r.failures) != 4 {
		t.Fatalf("reported %d members, want 4: %v", len(f.r.failures), f.r.failures)
	}
	if loc := f.where("train-0"); loc != schedq.InUnschedulable {
		t.Fatalf("member is %v, want parked with its group", loc)
	}
	x, err := f.q.Explain(framework.Key(pod("train-2", 0)))
	if err != nil || x.Group != "default/train" || !strings.Contains(x.Message, "3 of 4 members fit") {
		t.Fatalf("Explain = %+v, %v", x, err)
	}
	// A node that makes room wakes the group, which then binds whole.
	f.h.AddNode(node("c", 1000))
	if loc := f.where("train-0"); loc != schedq.InBackoff && loc != schedq.InActive {
		t.Fatalf("after NodeAdd the group is %v", loc)
	}
	f.q.Activate(framework.Key(pod("train-0", 0)))
	if out := f.once(); out.Result != Scheduled || len(f.b.binds) != 4 {
		t.Fatalf("second attempt %+v, binds %v", out, f.b.binds)
	}
}

func TestGangLeftoversGoBackWithTheGroup(t *testing.T) {
	f, _ := newGangFixture(t)
	f.h.AddNode(node("a", 3000))
	f.h.AddPodGroup(podGroup("job", 2, 0))
	f.addGang("job", 4, 1000)
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("outcome %+v", out)
	}
	if len(f.b.binds) != 3 || f.where("job-3") != schedq.InActive {
		t.Fatalf("binds %v, leftover %v", f.b.binds, f.where("job-3"))
	}
	// The leftover alone is below minCount 2, but 3 members are bound:
	// with room it is placed on its own.
	f.h.AddNode(node("b", 1000))
	if out := f.once(); out.Result != Scheduled || len(f.b.binds) != 4 {
		t.Fatalf("leftover attempt %+v, binds %v", out, f.b.binds)
	}
}

// flakyBinder fails the bindings of the pods named in fail.
type flakyBinder struct {
	syncBinder
	fail map[string]bool
}

func (b *flakyBinder) Bind(ctx context.Context, p *v1.Pod, node string, start func() bool, done func(error)) {
	if !Started(start, done) {
		return
	}
	if b.fail[p.Name] {
		done(errors.New("etcd timeout"))
		return
	}
	b.syncBinder.Bind(ctx, p, node, nil, done)
}

func TestGangPartialBindFailureRequeuesTheFailedMembersWithTheCount(t *testing.T) {
	f, w := newGangFixture(t)
	fb := &flakyBinder{fail: map[string]bool{"train-1": true}}
	f.s = mustNew(t, f.q, f.c, fb, warnReporter{f.r, w}, Options{})
	f.h.AddNode(node("a", 8000))
	f.h.AddPodGroup(podGroup("train", 4, 0))
	f.addGang("train", 4, 1000)
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("outcome %+v", out)
	}
	if len(fb.binds) != 3 {
		t.Fatalf("binds %v", fb.binds)
	}
	loc := f.where("train-1")
	if loc != schedq.InBackoff && loc != schedq.InActive {
		t.Fatalf("failed member is %v, want back in the queue with its group", loc)
	}
	x, _ := f.q.Explain(framework.Key(pod("train-1", 0)))
	want := "group default/train: 3 of minCount 4 bound (below minCount)"
	if !strings.Contains(x.Message, want) {
		t.Fatalf("Explain message %q, want it to say %q", x.Message, want)
	}
	if last := f.r.failures[len(f.r.failures)-1]; !strings.Contains(last, "train-1: SchedulerError: "+want) {
		t.Fatalf("event %q", last)
	}
	// The retry counts the 3 bound members towards minCount.
	fb.fail = nil
	f.q.Activate(framework.Key(pod("train-1", 0)))
	if out := f.once(); out.Result != Scheduled || len(fb.binds) != 4 {
		t.Fatalf("retry %+v, binds %v", out, fb.binds)
	}
}

func TestGangMemberBeforeItsPodGroupWaitsAndIsReported(t *testing.T) {
	f, w := newGangFixture(t)
	f.h.AddNode(node("a", 8000))
	f.addGang("late", 2, 1000)
	if loc := f.where("late-0"); loc != schedq.InIncomplete {
		t.Fatalf("member is %v, want incomplete", loc)
	}
	if len(w.got) != 2 || !strings.Contains(w.got[0], "late-0: WaitingForPodGroup: PodGroup default/late does not exist") {
		t.Fatalf("warnings %v", w.got)
	}
	x, _ := f.q.Explain(framework.Key(pod("late-0", 0)))
	if !strings.Contains(x.Reason, "waiting for group") {
		t.Fatalf("Explain %+v", x)
	}
	if _, err := f.q.Pop(ended); err == nil {
		t.Fatal("a member without its PodGroup was popped")
	}
	f.h.AddPodGroup(podGroup("late", 2, 0))
	if out := f.once(); out.Result != Scheduled || len(f.b.binds) != 2 {
		t.Fatalf("outcome %+v, binds %v", out, f.b.binds)
	}
}

func TestInvalidPodGroupIsReportedAndItsMembersWait(t *testing.T) {
	f, w := newGangFixture(t)
	f.h.AddNode(node("a", 8000))
	f.h.AddPodGroup(podGroup("zero", 0, 0))
	if len(w.got) != 1 || !strings.Contains(w.got[0], "zero: InvalidPodGroup") || !strings.Contains(w.got[0], "MinCount") {
		t.Fatalf("warnings %v", w.got)
	}
	f.addGang("zero", 1, 1000)
	if loc := f.where("zero-0"); loc != schedq.InIncomplete {
		t.Fatalf("member is %v", loc)
	}
	// Fixed: the members go.
	f.h.UpdatePodGroup(podGroup("zero", 0, 0), podGroup("zero", 1, 0))
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("outcome %+v", out)
	}
}

func TestGroupSpecOf(t *testing.T) {
	basic, _ := GroupSpecOf(podGroup("b", -1, 7))
	if basic != (schedq.GroupSpec{MinCount: 1, Priority: 7}) {
		t.Fatalf("basic: %+v", basic)
	}
	neither := podGroup("n", -1, 0)
	neither.Spec.SchedulingPolicy.Basic = nil
	if _, err := GroupSpecOf(neither); err == nil || !strings.Contains(err.Error(), "spec.schedulingPolicy") {
		t.Fatalf("neither policy: %v", err)
	}
}

func TestGangMemberPriorityMismatchIsWarnedAndScheduled(t *testing.T) {
	f, w := newGangFixture(t)
	f.h.AddNode(node("a", 8000))
	f.h.AddPodGroup(podGroup("mixed", 2, 100))
	f.addGang("mixed", 2, 1000)
	if out := f.once(); out.Result != Scheduled || len(f.b.binds) != 2 {
		t.Fatalf("outcome %+v", out)
	}
	if len(w.got) != 2 || !strings.Contains(w.got[0], "PriorityMismatch: pod priority 0 differs from its group default/mixed's priority 100") {
		t.Fatalf("warnings %v", w.got)
	}
}

func TestGroupDeletedMidAttemptLosesNoMember(t *testing.T) {
	f, _ := newGangFixture(t)
	f.h.AddNode(node("a", 2000))
	f.h.AddPodGroup(podGroup("g", 1, 0))
	f.addGang("g", 3, 1000)
	a, err := f.q.Pop(ended)
	if err != nil {
		t.Fatal(err)
	}
	f.h.DeletePodGroup(podGroup("g", 1, 0))
	f.s.ScheduleOne(context.Background(), a)
	// 2 fit and are bound; the third is neither lost nor scheduled alone.
	if len(f.b.binds) != 2 {
		t.Fatalf("binds %v", f.b.binds)
	}
	for i := range 3 {
		name := fmt.Sprint("g-", i)
		_, bound := f.b.binds[name]
		if loc := f.where(name); !bound && loc != schedq.InIncomplete {
			t.Fatalf("%s: not bound and %v, want incomplete", name, loc)
		}
	}
}

// gangWithMetrics is a gang fixture with metrics, one node of 1000m and
// a gang g of two members of 1000m each with minCount 2: both cannot fit
// at once.
func gangWithMetrics(t *testing.T) (*fixture, *Metrics) {
	t.Helper()
	f, w := newGangFixture(t)
	m, err := NewMetrics(prometheus.NewRegistry(), "schedq")
	if err != nil {
		t.Fatal(err)
	}
	f.s = mustNew(t, f.q, f.c, f.b, warnReporter{f.r, w}, Options{Metrics: m})
	f.h.AddNode(node("a", 1000))
	f.h.AddPodGroup(podGroup("g", 2, 0))
	f.addGang("g", 2, 1000)
	return f, m
}

func TestGroupAttemptsMetric(t *testing.T) {
	f, m := gangWithMetrics(t)
	f.once()
	f.h.AddNode(node("b", 1000))
	f.q.Activate(framework.Key(pod("g-0", 0)))
	f.once()
	for result, want := range map[string]float64{"unschedulable": 1, "scheduled": 1, "error": 0} {
		if got := testutil.ToFloat64(m.groups.WithLabelValues(result, "schedq")); got != want {
			t.Errorf("podgroup_schedule_attempts_total{result=%q} = %v, want %v", result, got, want)
		}
	}
}

// laterBinder is a Binder that holds each binding until run.
type laterBinder struct {
	held  []func()
	binds map[string]string
}

func (b *laterBinder) Bind(_ context.Context, p *v1.Pod, node string, start func() bool, done func(error)) {
	b.held = append(b.held, func() {
		if start != nil && !start() {
			done(ErrNodeDeleted)
			return
		}
		b.binds[p.Name] = node
		done(nil)
	})
}

func (b *laterBinder) run() {
	for _, f := range b.held {
		f()
	}
	b.held = nil
}

// A node deleted after the trial, before its member's binding started:
// the member is retried with its group, once, and the message says the
// group is below minCount.
func TestGangNodeDeletedBeforeBindingRetriesTheMemberOnce(t *testing.T) {
	f, w := newGangFixture(t)
	lb := &laterBinder{binds: map[string]string{}}
	f.s = mustNew(t, f.q, f.c, lb, warnReporter{f.r, w}, Options{})
	f.h.AddNode(node("a", 1000))
	f.h.AddNode(node("b", 1000))
	f.h.AddPodGroup(podGroup("g", 2, 0))
	f.addGang("g", 2, 1000)
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("outcome %+v", out)
	}
	onB := "g-0"
	if n, _ := f.c.NodeOf(framework.Key(pod("g-1", 0))); n == "b" {
		onB = "g-1"
	}
	f.h.DeleteNode(node("b", 1000))
	lb.run()
	if len(lb.binds) != 1 {
		t.Fatalf("binds %v", lb.binds)
	}
	loc := f.where(onB)
	if loc != schedq.InBackoff && loc != schedq.InActive && loc != schedq.InUnschedulable {
		t.Fatalf("%s is %v, want back with its group", onB, loc)
	}
	x, _ := f.q.Explain(framework.Key(pod(onB, 0)))
	if !strings.Contains(x.Message, "1 of minCount 2 bound (below minCount)") {
		t.Fatalf("Explain message %q", x.Message)
	}
	retried := 0
	for _, r := range f.r.failures {
		if strings.HasPrefix(r, onB+": SchedulerError: group default/g") {
			retried++
		}
	}
	if retried != 1 {
		t.Fatalf("%s reported %d times: %v", onB, retried, f.r.failures)
	}
}

// TestGroupMembersCountAsPodAttempts: schedule_attempts_total counts pods,
// as kube-scheduler's does for a pod group's members: a failed group
// attempt counts each member once, a placed member counts once its
// binding ends; podgroup_schedule_attempts_total counts the group once.
func TestGroupMembersCountAsPodAttempts(t *testing.T) {
	f, m := gangWithMetrics(t)
	attempts := func(r Result) float64 { return testutil.ToFloat64(m.attempts.WithLabelValues(r.String(), "schedq")) }
	f.once()
	if got := attempts(Unschedulable); got != 2 {
		t.Errorf("after the failed group attempt: schedule_attempts_total{result=unschedulable} = %v, want 2 (one per member)", got)
	}
	f.h.AddNode(node("b", 1000))
	f.q.Activate(framework.Key(pod("g-0", 0)))
	f.once()
	if got := attempts(Scheduled); got != 2 {
		t.Errorf("after both members bound: schedule_attempts_total{result=scheduled} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.groups.WithLabelValues("scheduled", "schedq")); got != 1 {
		t.Errorf("podgroup_schedule_attempts_total{result=scheduled} = %v, want 1", got)
	}
}

// trialHookGang is GangScheduling calling hook the first time it is asked
// for the quorum under the cache's write lock: in Cache.Trial, as the
// placements become assumptions.
type trialHookGang struct {
	framework.GroupPlugin
	c    *Cache
	once sync.Once
	hook func()
}

func (g *trialHookGang) Quorum(scheduled, placedNow, remaining, minCount int) framework.Quorum {
	if g.c.mu.TryLock() {
		g.c.mu.Unlock()
	} else {
		g.once.Do(g.hook)
	}
	return g.GroupPlugin.Quorum(scheduled, placedNow, remaining, minCount)
}

// heldDoneQueue is a Queue whose Done waits for the next value on
// release first: the scheduling loop held between a group's trial and the
// end of its attempt.
type heldDoneQueue struct {
	Queue
	release <-chan struct{}
}

func (q heldDoneQueue) Done(a Attempt) error {
	<-q.release
	return q.Queue.Done(a)
}

// TestGangNodeDeletedRightAfterTheTrial: a node deleted by the informer's
// goroutine as soon as a group's trial has made its members assumptions
// (it waits on the cache's lock meanwhile; the loop waits for it before
// the attempt ends) aborts its member's binding. The tally of the
// attempt's bindings must be complete before any abort can reach it: an
// abort that counted down a tally not yet set requeued its member at once,
// before the attempt's Done, which then dropped it from the queue for
// good. The window is the few instructions after the trial, so the
// attempt is repeated; under -race an abort there is also a data race.
// Each time the member is retried with its group once every binding has
// ended.
func TestGangNodeDeletedRightAfterTheTrial(t *testing.T) {
	f, w := newGangFixture(t)
	lb := &laterBinder{binds: map[string]string{}}
	deleted := make(chan struct{})
	f.s = mustNew(t, heldDoneQueue{Queue: f.q, release: deleted}, f.c, lb, warnReporter{f.r, w}, Options{})
	for i := range 200 {
		a, b := node(fmt.Sprintf("a%d", i), 1000), node(fmt.Sprintf("b%d", i), 1000)
		f.h.AddNode(a)
		f.h.AddNode(b)
		group := fmt.Sprintf("g%d", i)
		f.h.AddPodGroup(podGroup(group, 2, 0))
		f.addGang(group, 2, 1000)
		gp := &trialHookGang{GroupPlugin: plugins.GangScheduling{}, c: f.c, hook: func() {
			go func() { // the informer's goroutine
				f.h.DeleteNode(b)
				deleted <- struct{}{}
			}()
		}}
		info, err := f.q.Pop(ended)
		if err != nil {
			t.Fatal(err)
		}
		if out := f.s.scheduleGroupFramework(context.Background(), info, gp); out.Result != Scheduled {
			t.Fatalf("%s: outcome %+v", group, out)
		}
		clear(lb.binds)
		lb.run()
		if len(lb.binds) != 1 {
			t.Fatalf("%s: binds %v", group, lb.binds)
		}
		onB := group + "-0"
		if lb.binds[onB] == a.Name {
			onB = group + "-1"
		}
		if loc := f.where(onB); loc != schedq.InBackoff && loc != schedq.InActive && loc != schedq.InUnschedulable {
			t.Fatalf("%s is %v, want back with its group", onB, loc)
		}
		x, _ := f.q.Explain(framework.Key(pod(onB, 0)))
		if !strings.Contains(x.Message, "1 of minCount 2 bound (below minCount)") {
			t.Fatalf("%s: Explain message %q", onB, x.Message)
		}
	}
}
