package scheduler

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/metrics"
)

// apiFixture is a fixture whose binder and reporter are the real ones, on
// the client-go fake clientset.
type apiFixture struct {
	*fixture
	client *fake.Clientset
	binder *APIBinder
	events *events.FakeRecorder
	m      *Metrics
	reg    *prometheus.Registry
	logs   *bytes.Buffer

	mu    sync.Mutex
	binds []string // pod->node of every binding request sent
}

func newAPIFixture(t *testing.T, parallelism int, bindErr func(pod string) error) *apiFixture {
	t.Helper()
	f := &apiFixture{fixture: newFixture(t), client: fake.NewClientset(), events: events.NewFakeRecorder(100),
		reg: prometheus.NewRegistry(), logs: &bytes.Buffer{}}
	m, err := NewMetrics(f.reg, "schedq")
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := a.(k8stesting.CreateAction).GetObject().(*v1.Binding)
		f.mu.Lock()
		f.binds = append(f.binds, b.Name+"->"+b.Target.Name)
		f.mu.Unlock()
		return true, nil, bindErr(b.Name)
	})
	f.binder = NewAPIBinder(f.client, parallelism)
	log := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rep := APIReporter{Client: f.client, Recorder: f.events, Logger: log}
	f.s = mustNew(t, f.q, f.c, f.binder, rep, Options{Rand: rand.New(rand.NewPCG(1, 1)), Metrics: m, Logger: log})
	return f
}

// statusPatches counts the patches of pods/status sent.
func (f *apiFixture) statusPatches() int {
	n := 0
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func (f *apiFixture) bindings(result string) float64 {
	return testutil.ToFloat64(f.m.bindings.WithLabelValues(result))
}

var podsResource = schema.GroupResource{Resource: "pods"}

func alreadyAssigned(pod string) error {
	return apierrors.NewConflict(podsResource, pod, &alreadyAssignedErr{pod})
}

type alreadyAssignedErr struct{ pod string }

func (e *alreadyAssignedErr) Error() string {
	return "pod " + e.pod + " is already assigned to node \"other\""
}

// A binding refused because another replica bound the pod (409), or
// because the pod is gone (404), ends the attempt: no PodScheduled=False
// patch, no FailedScheduling event, no requeue; a "conflict" or "gone"
// binding in the metric.
func TestBindingConflictIsNotAFailure(t *testing.T) {
	for name, tc := range map[string]struct {
		err    func(string) error
		result string
	}{
		"409 already assigned": {alreadyAssigned, bindingConflict},
		"404 pod gone":         {func(p string) error { return apierrors.NewNotFound(podsResource, p) }, bindingGone},
	} {
		t.Run(name, func(t *testing.T) {
			f := newAPIFixture(t, 0, tc.err)
			f.h.AddNode(node("n", 1000))
			p := pod("p", 100)
			f.h.AddPod(p)
			f.once()
			f.binder.Wait()
			if n := f.statusPatches(); n != 0 {
				t.Errorf("%d PodScheduled patches on a pod another replica bound", n)
			}
			if n := len(f.events.Events); n != 0 {
				t.Errorf("%d events, first %q", n, <-f.events.Events)
			}
			if _, loc, ok := f.q.Get(framework.Key(p)); ok {
				t.Errorf("the pod is queued again (%v)", loc)
			}
			if c := f.q.Counts(); c.InFlight != 0 {
				t.Errorf("the attempt was not ended: %+v", c)
			}
			if _, ok := f.c.NodeOf(framework.Key(p)); ok {
				t.Error("the pod is still assumed, though the cache never saw it bound")
			}
			if got := f.bindings(tc.result); got != 1 {
				t.Errorf("bindings_total{result=%q} = %v, want 1", tc.result, got)
			}
			if got := f.bindings(bindingError); got != 0 {
				t.Errorf("bindings_total{result=error} = %v, want 0", got)
			}
			if n := strings.Count(f.logs.String(), "bound elsewhere or gone"); n != 1 {
				t.Errorf("logged %d times, want once:\n%s", n, f.logs)
			}
		})
	}
}

// If the informer has shown the pod bound (on another node) before the
// conflict comes back, the cache keeps that binding.
func TestBindingConflictKeepsWhatTheCacheSaw(t *testing.T) {
	var f *apiFixture
	p := pod("p", 100)
	f = newAPIFixture(t, 0, func(name string) error {
		bound := p.DeepCopy()
		bound.Spec.NodeName = "other"
		f.h.UpdatePod(p, bound) // the other replica's binding, seen first
		return alreadyAssigned(name)
	})
	f.h.AddNode(node("n", 1000))
	f.h.AddNode(node("other", 1000))
	f.h.AddPod(p)
	f.once()
	f.binder.Wait()
	if n, ok := f.c.NodeOf(framework.Key(p)); !ok || n != "other" {
		t.Fatalf("cache has the pod on %q (%v), want the other replica's node", n, ok)
	}
	if f.statusPatches() != 0 || len(f.events.Events) != 0 {
		t.Fatal("reported a failure on a bound pod")
	}
}

func namespaceTerminating(pod string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: "pods \"" + pod + "\" is forbidden: unable to create new content in namespace default because it is being terminated",
		Details: &metav1.StatusDetails{Name: pod, Kind: "pods", Causes: []metav1.StatusCause{{
			Type: v1.NamespaceTerminatingCause, Message: "namespace default is being terminated", Field: "metadata.namespace",
		}}},
	}}
}

// A pod whose namespace is terminating is dropped after its binding is
// refused, with one log line: not requeued (it would be refused forever),
// and no status patch or event (which the namespace would refuse too).
func TestBindingInTerminatingNamespaceDrops(t *testing.T) {
	f := newAPIFixture(t, 0, namespaceTerminating)
	f.h.AddNode(node("n", 1000))
	p := pod("p", 100)
	f.h.AddPod(p)
	f.once()
	f.binder.Wait()
	if _, loc, ok := f.q.Get(framework.Key(p)); ok {
		t.Fatalf("the pod is queued again (%v): it would be retried forever", loc)
	}
	if c := f.q.Counts(); c.InFlight != 0 || queued(c) != 0 {
		t.Fatalf("queue %+v", c)
	}
	if f.statusPatches() != 0 || len(f.events.Events) != 0 {
		t.Fatal("reported a failure into a terminating namespace")
	}
	if n := strings.Count(f.logs.String(), "namespace is terminating"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, f.logs)
	}
	if got := f.bindings(bindingTerminating); got != 1 {
		t.Fatalf("bindings_total{result=terminating} = %v", got)
	}
	// A plain Forbidden (RBAC, say) is still an error, reported and retried.
	g := newAPIFixture(t, 0, func(p string) error { return apierrors.NewForbidden(podsResource, p, errFake) })
	g.h.AddNode(node("n", 1000))
	g.h.AddPod(p)
	g.once()
	g.binder.Wait()
	if _, loc, _ := g.q.Get(framework.Key(p)); loc != schedq.InBackoff {
		t.Fatalf("a Forbidden binding is %v, want backoff", loc)
	}
	if g.statusPatches() != 1 {
		t.Fatalf("%d patches for a refused binding, want 1", g.statusPatches())
	}
}

var errFake = &alreadyAssignedErr{"x"}

// guardedBinder holds bindings, with their start guard, until the test
// runs them.
type guardedBinder struct {
	start []func() bool
	done  []func(error)
}

func (b *guardedBinder) Bind(_ context.Context, _ *v1.Pod, _ string, start func() bool, done func(error)) {
	b.start, b.done = append(b.start, start), append(b.done, done)
}

// A node deleted while a binding to it waits is never bound to: the
// assumed pod is forgotten and requeued at once, and the binding, when its
// turn comes, is not sent.
func TestNodeDeletedBeforeBindingStarts(t *testing.T) {
	f := newFixture(t)
	gb := &guardedBinder{}
	f.s = mustNew(t, f.q, f.c, gb, f.r, Options{Rand: rand.New(rand.NewPCG(1, 1))})
	n := node("n", 1000)
	f.h.AddNode(n)
	p := pod("p", 100)
	f.h.AddPod(p)
	if out := f.once(); out.Node != "n" {
		t.Fatalf("outcome %+v", out)
	}
	f.h.DeleteNode(n)
	key := framework.Key(p)
	if _, ok := f.c.NodeOf(key); ok {
		t.Fatal("still assumed on the deleted node")
	}
	info, loc, ok := f.q.Get(key)
	if !ok || loc == schedq.InFlight || info.ConsecutiveErrors != 1 {
		t.Fatalf("after the node deletion the pod is %v %+v, want requeued as an error", loc, info)
	}
	if gb.start[0]() {
		t.Fatal("the binding may start on a deleted node")
	}
	gb.done[0](ErrNodeDeleted)
	if _, loc2, _ := f.q.Get(key); loc2 != loc {
		t.Fatalf("the unsent binding moved the pod from %v to %v", loc, loc2)
	}
	if len(f.r.failures) != 0 {
		t.Fatalf("reported %v", f.r.failures)
	}
}

// A binding that started before the node's deletion was seen goes on:
// the API server decides.
func TestNodeDeletedAfterBindingStarted(t *testing.T) {
	f := newFixture(t)
	gb := &guardedBinder{}
	f.s = mustNew(t, f.q, f.c, gb, f.r, Options{Rand: rand.New(rand.NewPCG(1, 1))})
	n := node("n", 1000)
	f.h.AddNode(n)
	p := pod("p", 100)
	f.h.AddPod(p)
	f.once()
	if !gb.start[0]() {
		t.Fatal("the binding could not start")
	}
	f.h.DeleteNode(n)
	if _, ok := f.c.NodeOf(framework.Key(p)); !ok {
		t.Fatal("a started binding was forgotten")
	}
	gb.done[0](nil)
	if c := f.q.Counts(); queued(c) != 0 || c.InFlight != 0 {
		t.Fatalf("queue %+v", c)
	}
}

// With the real APIBinder: the second binding waits for the only slot; its
// node is deleted meanwhile; when the slot frees, no request is sent for it.
func TestAPIBinderSkipsDeletedNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		f := newAPIFixture(t, 1, func(pod string) error {
			if pod == "first" {
				<-release
			}
			return nil
		})
		a, b := node("a", 1000), node("b", 1000)
		f.h.AddNode(a)
		first := pod("first", 600)
		f.h.AddPod(first)
		f.once() // on a or b; holds the only slot
		f.h.AddNode(b)
		second := pod("second", 600)
		f.h.AddPod(second)
		info, _ := tryPop(f.q)
		go f.s.ScheduleOne(context.Background(), info) // waits for the slot
		synctest.Wait()
		target, ok := f.c.NodeOf(framework.Key(second))
		if !ok {
			t.Fatal("second pod not assumed")
		}
		f.h.DeleteNode(map[string]*v1.Node{"a": a, "b": b}[target])
		close(release)
		synctest.Wait()
		f.binder.Wait()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, bind := range f.binds {
			if bind == "second->"+target {
				t.Fatalf("bound to %s after its deletion was seen: %v", target, f.binds)
			}
		}
		if _, loc, ok := f.q.Get(framework.Key(second)); !ok || loc == schedq.InFlight {
			t.Fatalf("second pod is %v, want requeued", loc)
		}
		if got := f.bindings(bindingNodeDeleted); got != 1 {
			t.Fatalf("bindings_total{result=node_deleted} = %v", got)
		}
	})
}

// A binding error (a timeout, say) on a pod the informer has meanwhile
// shown bound is not reported: the request went through, or someone else
// bound it.
func TestBindingErrorOnABoundPod(t *testing.T) {
	var f *apiFixture
	p := pod("p", 100)
	f = newAPIFixture(t, 0, func(name string) error {
		bound := p.DeepCopy()
		bound.Spec.NodeName = "n"
		f.h.UpdatePod(p, bound)
		return apierrors.NewTimeoutError("the binding's answer was lost", 1)
	})
	f.h.AddNode(node("n", 1000))
	f.h.AddPod(p)
	f.once()
	f.binder.Wait()
	if f.statusPatches() != 0 || len(f.events.Events) != 0 {
		t.Fatal("reported a failure on a bound pod")
	}
	if c := f.q.Counts(); c.InFlight != 0 || queued(c) != 0 {
		t.Fatalf("queue %+v", c)
	}
	if n, ok := f.c.NodeOf(framework.Key(p)); !ok || n != "n" {
		t.Fatalf("cache lost the bound pod: %q %v", n, ok)
	}
}

// oneHeldBinder keeps the binding's done, for the test to answer later.
type oneHeldBinder struct{ done func(error) }

func (b *oneHeldBinder) Bind(_ context.Context, _ *v1.Pod, _ string, start func() bool, done func(error)) {
	if !Started(start, done) {
		return
	}
	b.done = done
}

// TestRecreatedPodSeenAsUpdate: a pod deleted and created again under its
// name while its binding was under way, seen as an update after a watch
// gap (same key, new UID), is queued; the old binding's conflict does not
// lose it.
func TestRecreatedPodSeenAsUpdate(t *testing.T) {
	f := newFixture(t)
	hb := &oneHeldBinder{}
	f.s.binder = hb
	f.h.AddNode(node("a", 1000))
	old := pod("p", 100)
	f.h.AddPod(old)
	f.once()
	recreated := old.DeepCopy()
	recreated.UID = "uid-p-2"
	f.h.UpdatePod(old, recreated)
	hb.done(apierrors.NewConflict(podsResource, "p", nil))
	if _, _, ok := f.q.Get(framework.Key(recreated)); !ok {
		t.Fatal("the recreated pod is not queued")
	}
}

// bindOnce schedules pod p on node n once through the real binder, whose
// binding request answers err, and waits for the binding to end.
func bindOnce(t *testing.T, err error) *apiFixture {
	t.Helper()
	f := newAPIFixture(t, 0, func(string) error { return err })
	f.h.AddNode(node("n", 1000))
	f.h.AddPod(pod("p", 100))
	f.once()
	f.binder.Wait()
	return f
}

// TestAttemptCountedWhenItsBindingEnds: as in kube-scheduler, an attempt
// counts in schedule_attempts_total once its binding has ended: as
// scheduled if the pod was bound, as an error if the binding failed. An
// attempt whose binding failed is not a scheduled one.
func TestAttemptCountedWhenItsBindingEnds(t *testing.T) {
	for name, tc := range map[string]struct {
		err                  error
		scheduled, errResult float64
	}{
		"bound":          {nil, 1, 0},
		"binding failed": {apierrors.NewInternalError(errFake), 0, 1},
		"409 conflict":   {alreadyAssigned("p"), 0, 1},
	} {
		t.Run(name, func(t *testing.T) {
			f := bindOnce(t, tc.err)
			attempts := func(r Result) float64 {
				return testutil.ToFloat64(f.m.attempts.WithLabelValues(r.String(), "schedq"))
			}
			if got := attempts(Scheduled); got != tc.scheduled {
				t.Errorf("schedule_attempts_total{result=scheduled} = %v, want %v", got, tc.scheduled)
			}
			if got := attempts(Error); got != tc.errResult {
				t.Errorf("schedule_attempts_total{result=error} = %v, want %v", got, tc.errResult)
			}
			if n := testutil.CollectAndCount(f.m.latency); n != 1 {
				t.Errorf("%d latency series, want 1 (one attempt)", n)
			}
		})
	}
}

// TestPodSchedulingSLIObservedWhenBound: a pod bound is observed as
// kube-scheduler observes it: its attempts in pod_scheduling_attempts,
// the time since it first entered activeQ in
// pod_scheduling_sli_duration_seconds by its attempts; a pod whose
// binding failed is not.
func TestPodSchedulingSLIObservedWhenBound(t *testing.T) {
	for name, tc := range map[string]struct {
		err   error
		bound bool
	}{
		"bound":          {nil, true},
		"binding failed": {apierrors.NewInternalError(errFake), false},
	} {
		t.Run(name, func(t *testing.T) {
			f := bindOnce(t, tc.err)
			want := 0
			if tc.bound {
				want = 1
			}
			if n := testutil.CollectAndCount(f.m.sli); n != want {
				t.Errorf("%d pod_scheduling_sli_duration_seconds series, want %d", n, want)
			}
			if got := histogramCount(t, f.m.podAttempts); got != uint64(want) {
				t.Errorf("pod_scheduling_attempts observed %d pods, want %d", got, want)
			}
			if tc.bound {
				if got := histogramCount(t, f.m.sli.WithLabelValues("1").(prometheus.Histogram)); got != 1 {
					t.Errorf("pod_scheduling_sli_duration_seconds{attempts=1} observed %d, want 1", got)
				}
			}
		})
	}
}

// TestScheduledMetricLabels: the attempts label is capped at "15+", and
// a pod never in activeQ has no SLI.
func TestScheduledMetricLabels(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry(), "schedq")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	for _, st := range []struct {
		attempts int
		first    time.Time
	}{{3, now.Add(-2 * time.Second)}, {15, now.Add(-time.Minute)}, {40, now}, {1, time.Time{}}} {
		m.scheduled(schedq.Status{Attempts: st.attempts, InitialAttemptTimestamp: st.first}, now)
	}
	for label, want := range map[string]uint64{"3": 1, "15+": 2, "1": 0} {
		if got := histogramCount(t, m.sli.WithLabelValues(label).(prometheus.Histogram)); got != want {
			t.Errorf("sli{attempts=%q} observed %d, want %d", label, got, want)
		}
	}
	if got := histogramCount(t, m.podAttempts); got != 4 {
		t.Errorf("pod_scheduling_attempts observed %d, want 4", got)
	}
}

// TestMetricsRegisterBesideTheQueues: the scheduler's metrics and the
// queue's recorder register on one registry, as the scheduler's process
// does, with no name twice.
func TestMetricsRegisterBesideTheQueues(t *testing.T) {
	reg := prometheus.NewRegistry()
	q, err := schedq.New(QueueConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := metrics.New(metrics.Options{Profile: "schedq"}).Register(reg, q); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg, "schedq"); err != nil {
		t.Fatalf("the scheduler's metrics beside the queue's: %v", err)
	}
}

// histogramCount is how many observations h holds.
func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var d dto.Metric
	if err := h.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetHistogram().GetSampleCount()
}

// TestBindingAnswerLost: a binding whose answer is lost (the connection
// dropped, a 504, etcd's "request timed out" as a 500) may have been made.
// The binder asks the API server: if the pod (same UID) is bound to that
// node, the binding succeeded. Before, such a pod was reported
// PodScheduled=False SchedulerError (the patch landing on the bound,
// running pod, where nothing set it back), with a FailedScheduling event,
// counted as an error and tried again. A pod the server shows unbound, or
// bound elsewhere, or recreated, is still a failed binding.
func TestBindingAnswerLost(t *testing.T) {
	lost := func(string) error { return errors.New("http2: client connection lost") }
	for _, tc := range []struct {
		name   string
		server func(p *v1.Pod) // what the API server did with the binding
		answer func(pod string) error
		bound  bool
	}{
		{"connection lost after the binding", func(p *v1.Pod) { p.Spec.NodeName = "n" }, lost, true},
		{"504 after the binding", func(p *v1.Pod) { p.Spec.NodeName = "n" },
			func(string) error { return apierrors.NewTimeoutError("the binding's answer was lost", 1) }, true},
		{"etcd timed out after the write", func(p *v1.Pod) { p.Spec.NodeName = "n" },
			func(string) error { return apierrors.NewInternalError(errors.New("etcdserver: request timed out")) }, true},
		{"connection lost before the binding", func(*v1.Pod) {}, lost, false},
		{"bound elsewhere meanwhile", func(p *v1.Pod) { p.Spec.NodeName = "other" }, lost, false},
		{"recreated and bound there", func(p *v1.Pod) { p.UID, p.Spec.NodeName = "new", "n" }, lost, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f *apiFixture
			p := pod("p", 100)
			f = newAPIFixture(t, 0, func(name string) error {
				obj, err := f.client.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), "default", name)
				if err != nil {
					t.Error(err)
					return err
				}
				cp := obj.(*v1.Pod).DeepCopy()
				tc.server(cp)
				if err := f.client.Tracker().Update(v1.SchemeGroupVersion.WithResource("pods"), cp, "default"); err != nil {
					t.Error(err)
				}
				return tc.answer(name)
			})
			if err := f.client.Tracker().Add(p); err != nil {
				t.Fatal(err)
			}
			f.h.AddNode(node("n", 1000))
			f.h.AddPod(p)
			f.once()
			f.binder.Wait()
			failed := 0
			for len(f.events.Events) > 0 {
				if strings.Contains(<-f.events.Events, "FailedScheduling") {
					failed++
				}
			}
			c := f.q.Counts()
			switch {
			case tc.bound && (f.statusPatches() != 0 || failed != 0 || f.bindings(bindingSuccess) != 1 || queued(c) != 0 || c.InFlight != 0):
				t.Fatalf("bound by the lost request, yet: %d status patches, %d FailedScheduling, %v successes, queue %+v",
					f.statusPatches(), failed, f.bindings(bindingSuccess), c)
			case !tc.bound && (f.statusPatches() != 1 || f.bindings(bindingError) != 1 || queued(c) != 1):
				t.Fatalf("not bound by the request, yet: %d status patches, %v errors, queue %+v", f.statusPatches(), f.bindings(bindingError), c)
			}
		})
	}
}
