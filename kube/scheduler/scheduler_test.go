package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

func node(name string, milliCPU int64, taints ...v1.Taint) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(milliCPU, resource.DecimalSI),
			v1.ResourceMemory: resource.MustParse("8Gi"),
			v1.ResourcePods:   resource.MustParse("110"),
		}},
	}
}

func pod(name string, milliCPU int64) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{SchedulerName: "schedq", Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(milliCPU, resource.DecimalSI)},
		}}}},
	}
}

// syncBinder binds at once (or fails every bind, if err is set).
type syncBinder struct {
	err   error
	binds map[string]string
}

func (b *syncBinder) Bind(_ context.Context, p *v1.Pod, node string, start func() bool, done func(error)) {
	if !Started(start, done) {
		return
	}
	if b.err == nil {
		if b.binds == nil {
			b.binds = map[string]string{}
		}
		b.binds[p.Name] = node
	}
	done(b.err)
}

type recReporter struct{ failures, scheduled []string }

func (r *recReporter) Unschedulable(_ context.Context, p *v1.Pod, reason, msg string, _ func() FailureRecord) {
	r.failures = append(r.failures, p.Name+": "+reason+": "+msg)
}
func (r *recReporter) Scheduled(_ context.Context, p *v1.Pod, node string) {
	r.scheduled = append(r.scheduled, p.Name+"->"+node)
}
func (r *recReporter) Warn(context.Context, runtime.Object, string, string) {}

type fixture struct {
	t *testing.T
	q *schedq.Queue[types.NamespacedName, *v1.Pod]
	c *Cache
	h *Handlers
	s *Scheduler
	b *syncBinder
	r *recReporter
}

// newFixture is the scheduler on kube-scheduler's default profile (see
// newFWFixture).
func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFWFixture(t, nil, nil)
}

// mustNew is New with, if o has none, kube-scheduler's default framework
// (defaultFramework), failing t on an error.
func mustNew(t testing.TB, q Queue, c *Cache, b Binder, r Reporter, o Options) *Scheduler {
	t.Helper()
	if len(o.Profiles) == 0 {
		o.Profiles = []*profile.Framework{defaultFramework(t)}
	}
	s, err := New(q, c, b, r, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testQueueConfig is QueueConfig with the hints and gates of
// kube-scheduler's default profile, as the scheduler's queue has them.
func testQueueConfig(t testing.TB) schedq.Config[types.NamespacedName, *v1.Pod] {
	t.Helper()
	qc := QueueConfig()
	if err := UseFrameworkHints(context.Background(), &qc, defaultFramework(t), klog.Background()); err != nil {
		t.Fatal(err)
	}
	return qc
}

// once pops and schedules one pod.
func (f *fixture) once() Outcome {
	f.t.Helper()
	info, err := f.q.Pop(ended)
	if err != nil {
		f.t.Fatalf("nothing to pop (%v): %+v", err, f.q.Counts())
	}
	return f.s.ScheduleOne(context.Background(), info)
}

func TestScheduleOnePicksTheFreestNode(t *testing.T) {
	f := newFixture(t)
	f.h.AddNode(node("small", 1000))
	f.h.AddNode(node("big", 4000))
	f.h.AddPod(pod("p", 500))
	out := f.once()
	if out.Result != Scheduled || out.Node != "big" || f.b.binds["p"] != "big" {
		t.Fatalf("outcome %+v, binds %v", out, f.b.binds)
	}
	if n, ok := f.c.NodeOf(framework.Key(pod("p", 0))); !ok || n != "big" {
		t.Fatalf("pod not assumed on big: %q %v", n, ok)
	}
	if c := f.q.Counts(); c != (schedq.Counts{}) {
		t.Fatalf("queue %+v after a successful bind", c)
	}
	// The next pod sees the assumed one.
	f.h.AddPod(pod("q", 3000))
	if out := f.once(); out.Node != "big" {
		t.Fatalf("second pod on %q", out.Node)
	}
	f.h.AddPod(pod("r", 1500))
	if out := f.once(); out.Result != Unschedulable {
		t.Fatalf("third pod: %+v", out)
	}
}

func TestFailureMessageAndRequeue(t *testing.T) {
	f := newFixture(t)
	for i := range 3 {
		f.h.AddNode(node(fmt.Sprint("n", i), 1000))
	}
	for i := range 2 {
		f.h.AddNode(node(fmt.Sprint("t", i), 8000, v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}))
	}
	f.h.AddPod(pod("big", 2000))
	out := f.once()
	want := "0/5 nodes are available: 2 node(s) had untolerated taint(s), 3 Insufficient cpu."
	if out.Result != Unschedulable || out.Message != want {
		t.Fatalf("message %q, want %q", out.Message, want)
	}
	slices.Sort(out.Plugins)
	if !slices.Equal(out.Plugins, []string{"NodeResourcesFit", "TaintToleration"}) {
		t.Fatalf("plugins %v", out.Plugins)
	}
	if len(f.r.failures) != 1 || !strings.Contains(f.r.failures[0], "big: Unschedulable: "+want) {
		t.Fatalf("reported %v", f.r.failures)
	}
	_, loc, _ := f.q.Get(framework.Key(pod("big", 0)))
	if loc != schedq.InUnschedulable {
		t.Fatalf("pod is %v, want parked", loc)
	}
	// A node with room wakes it (NodeResourcesFit's hint).
	f.h.AddNode(node("huge", 16000))
	_, loc, _ = f.q.Get(framework.Key(pod("big", 0)))
	if loc != schedq.InBackoff && loc != schedq.InActive {
		t.Fatalf("after NodeAdd the pod is %v", loc)
	}
}

// TestNoNodes: in a cluster with no node a pod is unschedulable, parked
// behind every filter plugin (not sent to the error backoff and retried
// after every backoff, as kube-scheduler's ErrNoNodesAvailable does: see
// the README's table of differences), and the first node wakes it.
func TestNoNodes(t *testing.T) {
	f := newFixture(t)
	f.h.AddPod(pod("p", 100))
	out := f.once()
	if out.Result != Unschedulable || !strings.Contains(out.Message, "0/0 nodes are available") {
		t.Fatalf("outcome %+v", out)
	}
	if !slices.Contains(out.Plugins, "NodeResourcesFit") {
		t.Fatalf("rejected by %v, want every filter plugin", out.Plugins)
	}
	info, loc, _ := f.q.Get(framework.Key(pod("p", 0)))
	if (loc != schedq.InBackoff && loc != schedq.InUnschedulable) || info.ConsecutiveErrors != 0 || len(info.RejectedBy) == 0 {
		t.Fatalf("with no node the pod is %v, %d errors, rejected by %v; want parked as unschedulable", loc, info.ConsecutiveErrors, info.RejectedBy)
	}
	f.h.AddNode(node("n", 1000))
	if _, loc, _ := f.q.Get(framework.Key(pod("p", 0))); loc == schedq.InUnschedulable {
		t.Fatal("a new node did not wake a pod that had no node at all")
	}
}

func TestBindingFailureIsAnError(t *testing.T) {
	f := newFixture(t)
	f.b.err = fmt.Errorf("conflict")
	f.h.AddNode(node("n", 1000))
	f.h.AddPod(pod("p", 100))
	f.once()
	key := framework.Key(pod("p", 0))
	if _, ok := f.c.NodeOf(key); ok {
		t.Fatal("a pod whose binding failed is still assumed")
	}
	info, loc, _ := f.q.Get(key)
	if loc != schedq.InBackoff || info.ConsecutiveErrors != 1 || len(info.RejectedBy) != 0 {
		t.Fatalf("after a binding error: %v %+v", loc, info)
	}
}

func TestFeasibleToFind(t *testing.T) {
	for n, want := range map[int]int{10: 10, 99: 99, 100: 100, 1000: 420, 5000: 500, 20000: 1000} {
		if got := feasibleToFind(n, 0); got != want {
			t.Errorf("feasibleToFind(%d) = %d, want %d", n, got, want)
		}
	}
	if got := feasibleToFind(5000, 100); got != 5000 {
		t.Errorf("100%%: %d", got)
	}
}

func TestHandlersRouting(t *testing.T) {
	f := newFixture(t)
	other := pod("theirs", 100)
	other.Spec.SchedulerName = "default-scheduler"
	f.h.AddPod(other)
	if c := f.q.Counts(); c != (schedq.Counts{}) {
		t.Fatalf("queued another scheduler's pod: %+v", c)
	}
	f.h.AddNode(node("n", 1000))
	mine := pod("mine", 100)
	f.h.AddPod(mine)
	if c := f.q.Counts(); c.Active != 1 {
		t.Fatalf("counts %+v", c)
	}
	// Bound by someone else: it leaves the queue and counts on the node.
	bound := mine.DeepCopy()
	bound.Spec.NodeName = "n"
	f.h.UpdatePod(mine, bound)
	if c := f.q.Counts(); c != (schedq.Counts{}) {
		t.Fatalf("bound pod still queued: %+v", c)
	}
	if n, ok := f.c.NodeOf(framework.Key(mine)); !ok || n != "n" {
		t.Fatal("bound pod not in the cache")
	}
	// Finished: its resources are freed.
	done := bound.DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	f.h.UpdatePod(bound, done)
	if _, ok := f.c.NodeOf(framework.Key(mine)); ok {
		t.Fatal("finished pod still counted")
	}
	// Deleted while pending: removed from the queue.
	p := pod("gone", 100)
	f.h.AddPod(p)
	f.h.DeletePod(p)
	if c := f.q.Counts(); c != (schedq.Counts{}) {
		t.Fatalf("deleted pod still queued: %+v", c)
	}
}

func TestPodAndNodeUpdateEvents(t *testing.T) {
	base := pod("p", 100)
	labelled := base.DeepCopy()
	labelled.Labels = map[string]string{"a": "b"}
	gated := base.DeepCopy()
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "g"}}
	smaller := pod("p", 50)
	claimed := base.DeepCopy()
	claimName := "p-gpu-1"
	claimed.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &claimName}}
	extended := base.DeepCopy()
	extended.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: claimName}
	tests := []struct {
		name     string
		old, new *v1.Pod
		want     []schedq.Action
	}{
		{"labels", base, labelled, []schedq.Action{clusterevent.UpdatePodLabel}},
		{"gates removed", gated, base, []schedq.Action{clusterevent.UpdatePodSchedulingGatesEliminated}},
		{"scale down", base, smaller, []schedq.Action{clusterevent.UpdatePodScaleDown}},
		{"scale up", smaller, base, []schedq.Action{clusterevent.UpdatePodScaleUp}},
		{"claim generated", base, claimed, []schedq.Action{clusterevent.UpdatePodGeneratedResourceClaim}},
		{"extended resource claim generated", base, extended, []schedq.Action{clusterevent.UpdatePodGeneratedResourceClaim}},
		{"nothing that matters", base, base.DeepCopy(), []schedq.Action{clusterevent.Update}},
	}
	for _, tc := range tests {
		var got []schedq.Action
		for _, ev := range PodUpdateEvents(tc.old, tc.new) {
			if ev.Kind != clusterevent.TargetPod {
				t.Errorf("%s: kind %s", tc.name, ev.Kind)
			}
			got = append(got, ev.Action)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	n := node("n", 1000)
	tainted := n.DeepCopy()
	tainted.Spec.Taints = []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}
	cordoned := n.DeepCopy()
	cordoned.Spec.Unschedulable = true
	grown := node("n", 2000)
	relabelled := n.DeepCopy()
	relabelled.Labels = map[string]string{"zone": "a"}
	notReady := n.DeepCopy()
	notReady.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
	annotated := n.DeepCopy()
	annotated.Annotations = map[string]string{"note": "x"}
	featured := n.DeepCopy()
	featured.Status.DeclaredFeatures = []string{"UserNamespacesHostNetworkSupport"}
	noResizePreemption := n.DeepCopy()
	noResizePreemption.Spec.PodPreemptionPolicy = &v1.NodePodPreemptionPolicy{DisableResizePreemption: []string{"autoscaler"}}
	for name, tc := range map[string]struct {
		new  *v1.Node
		want schedq.Action
	}{
		"taint": {tainted, clusterevent.UpdateNodeTaint}, "cordon": {cordoned, clusterevent.UpdateNodeTaint},
		"allocatable": {grown, clusterevent.UpdateNodeAllocatable}, "label": {relabelled, clusterevent.UpdateNodeLabel},
		"condition": {notReady, clusterevent.UpdateNodeCondition}, "annotation": {annotated, clusterevent.UpdateNodeAnnotation},
		"declared feature":  {featured, clusterevent.UpdateNodeDeclaredFeature},
		"preemption policy": {noResizePreemption, clusterevent.UpdateNodePreemptionPolicy},
	} {
		evs := NodeUpdateEvents(n, tc.new)
		if len(evs) != 1 || evs[0].Action != tc.want {
			t.Errorf("%s: %v", name, evs)
		}
	}
	if evs := NodeUpdateEvents(n, n.DeepCopy()); len(evs) != 0 {
		t.Errorf("no change gave %v", evs)
	}
}

// heldBinder keeps bindings pending until the test finishes them.
type heldBinder struct{ pending []func(error) }

func (b *heldBinder) Bind(_ context.Context, _ *v1.Pod, _ string, start func() bool, done func(error)) {
	if !Started(start, done) {
		return
	}
	b.pending = append(b.pending, done)
}

// A pod deleted while its binding is under way leaves the queue for good:
// the failed binding does not bring it back.
func TestDeleteDuringBinding(t *testing.T) {
	f := newFixture(t)
	hb := &heldBinder{}
	f.s = mustNew(t, f.q, f.c, hb, f.r, Options{Rand: rand.New(rand.NewPCG(1, 1))})
	f.h.AddNode(node("n", 1000))
	p := pod("p", 100)
	f.h.AddPod(p)
	f.once()
	f.h.DeletePod(p)
	hb.pending[0](fmt.Errorf("pods %q not found", p.Name))
	if _, loc, ok := f.q.Get(framework.Key(p)); ok {
		t.Fatalf("deleted pod is back in the queue, %v", loc)
	}
	if _, ok := f.c.NodeOf(framework.Key(p)); ok {
		t.Fatal("deleted pod still assumed")
	}
}

// An update that still shows a pod unassigned after it was assumed (the
// informer lags behind the binding) does not queue it again.
func TestStaleUpdateAfterBinding(t *testing.T) {
	f := newFixture(t)
	f.h.AddNode(node("n", 1000))
	p := pod("p", 100)
	f.h.AddPod(p)
	f.once() // bound (syncBinder) and Done
	stale := p.DeepCopy()
	stale.Labels = map[string]string{"late": "update"}
	f.h.UpdatePod(p, stale)
	if c := f.q.Counts(); c != (schedq.Counts{}) {
		t.Fatalf("a stale update queued the bound pod again: %+v", c)
	}
}

// A recreated pod (same name, new UID) is not forgotten by the old pod's
// failed binding.
func TestForgetChecksUID(t *testing.T) {
	c := NewCache()
	c.AddNode(node("n", 1000))
	old, recreated := pod("p", 100), pod("p", 100)
	recreated.UID = "uid-p-2"
	pi, _ := framework.NewPodInfo(recreated)
	if err := c.Assume(pi, "n", nil); err != nil {
		t.Fatal(err)
	}
	c.Forget(old)
	if !c.IsAssumed(framework.Key(recreated)) {
		t.Fatal("the old pod's failed binding forgot the recreated pod")
	}
	c.Forget(recreated)
	if c.IsAssumed(framework.Key(recreated)) {
		t.Fatal("Forget of the assumed pod itself did nothing")
	}
}

// ended is a context that has ended, so that Pop returns at once.
var ended = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// tryPop pops an attempt if one is ready, without blocking.
func tryPop(q *schedq.Queue[types.NamespacedName, *v1.Pod]) (Attempt, bool) {
	a, err := q.Pop(ended)
	return a, err == nil
}

// scheduleUpTo pops and schedules up to n pods, one cycle each, until
// the queue has none ready, and returns how many were scheduled.
func (f *fixture) scheduleUpTo(n int) int {
	scheduled := 0
	for range n {
		info, ok := tryPop(f.q)
		if !ok {
			break
		}
		if out := f.s.ScheduleOne(context.Background(), info); out.Result == Scheduled {
			scheduled++
		}
	}
	return scheduled
}

// queued is the number of queued pods: every place but in flight.
func queued(c schedq.Counts) int { return c.Active + c.Backoff + c.Unschedulable + c.Gated }
