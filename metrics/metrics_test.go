package metrics

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/schedq/schedq"
)

type job struct {
	name string
	prio int32
}

var (
	nodeAdd    = schedq.Event{Kind: "Node", Action: 1, Label: "NodeAdd"}
	serviceAdd = schedq.Event{Kind: "Service", Action: 1, Label: "ServiceAdd"}
	t0         = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

type fixture struct {
	t   *testing.T
	c   *schedq.Core[string, job]
	r   *Recorder
	reg *prometheus.Registry
	now time.Time
}

func newFixture(t *testing.T, o Options) *fixture {
	t.Helper()
	if o.EventLabels == nil {
		// The queue's generic names, renamed to kube-scheduler's.
		o.EventLabels = map[string]string{"ItemAdd": "UnschedulablePodAdd", "ItemUpdate": "UnschedulablePodUpdate", "ItemPopped": "PodPopped"}
	}
	r := New(o)
	c, err := schedq.NewCore(schedq.Config[string, job]{
		// Every Tick at a later instant runs both flushes.
		FlushBackoffInterval:       time.Nanosecond,
		FlushUnschedulableInterval: time.Nanosecond,
		Key:                        func(j job) string { return j.name },
		Priority:                   func(j job) int32 { return j.prio },
		Hints: map[string][]schedq.EventHint[job]{
			"Fit":   {{Event: nodeAdd, Fn: func(job, any, any) (schedq.Hint, error) { return schedq.HintQueue, nil }}},
			"Flaky": {{Event: serviceAdd, Fn: func(job, any, any) (schedq.Hint, error) { return schedq.HintSkip, errors.New("flaky") }}},
			"Spec":  {{Event: schedq.Event{Kind: "Pod", Action: 2, Label: "PodUpdate"}}},
		},
		Recorder: r,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := r.Register(reg, c); err != nil {
		t.Fatal(err)
	}
	c.Tick(t0)
	return &fixture{t: t, c: c, r: r, reg: reg, now: t0}
}

func (f *fixture) incoming(q, event string) float64 {
	return testutil.ToFloat64(f.r.incoming.WithLabelValues(q, event))
}

func (f *fixture) wantIncoming(q, event string, want float64) {
	f.t.Helper()
	if got := f.incoming(q, event); got != want {
		f.t.Errorf("incoming{queue=%q,event=%q} = %v, want %v", q, event, got, want)
	}
}

func (f *fixture) fail(name string, plugins ...string) {
	f.t.Helper()
	info, ok := f.c.Pop(f.now)
	if !ok || info.Item.name != name {
		f.t.Fatalf("popped %q, want %q", info.Item.name, name)
	}
	if err := f.c.Requeue(info, schedq.Failure{RejectedBy: plugins}, f.now); err != nil {
		f.t.Fatal(err)
	}
}

// wantGauges compares the scraped level gauges with the text exposition.
func (f *fixture) wantGauges(want string, names ...string) {
	f.t.Helper()
	if err := testutil.GatherAndCompare(f.reg, strings.NewReader(want), names...); err != nil {
		f.t.Error(err)
	}
}

func TestIncomingScenarios(t *testing.T) {
	f := newFixture(t, Options{})
	for i, n := range []string{"a", "b", "c"} {
		f.c.Add(job{n, int32(10 - i)}, f.now)
	}
	f.wantIncoming("active", "UnschedulablePodAdd", 3)

	f.fail("a", "Fit") // no event during the attempt: parked
	f.wantIncoming("unschedulable", "ScheduleAttemptFailure", 1)

	f.c.Move(nodeAdd, nil, nil, nil, f.now) // backoff still running
	f.wantIncoming("backoff", "NodeAdd", 1)

	f.fail("b", "Fit")
	f.now = f.now.Add(time.Minute)
	f.c.Move(nodeAdd, nil, nil, nil, f.now) // backoff over
	f.wantIncoming("active", "NodeAdd", 1)

	// a is in backoff; with activeQ holding b and c, pops take those; make
	// c fail with an error.
	f.now = f.now.Add(time.Second)
	info, _ := f.c.Pop(f.now) // b
	f.c.Done(info, f.now)
	f.fail("c")
	f.wantIncoming("backoff", "ScheduleAttemptFailure", 1)
	f.now = f.now.Add(time.Minute)
	f.c.Tick(f.now)
	f.wantIncoming("active", "BackoffComplete", 2) // a and c

	f.wantGauges(`
# HELP scheduler_pending_pods Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated.
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 2
scheduler_pending_pods{queue="backoff"} 0
scheduler_pending_pods{queue="gated"} 0
scheduler_pending_pods{queue="incomplete"} 0
scheduler_pending_pods{queue="pending"} 0
scheduler_pending_pods{queue="unschedulable"} 0
`, "scheduler_pending_pods")
}

func TestPopFromBackoffAndFlushMetrics(t *testing.T) {
	f := newFixture(t, Options{})
	f.c.Add(job{"a", 1}, f.now)
	f.fail("a", "Fit")
	f.wantGauges(`
# HELP scheduler_unschedulable_pods The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for all plugins that caused it to not schedule and so this metric have meaning only when broken down by plugin.
# TYPE scheduler_unschedulable_pods gauge
scheduler_unschedulable_pods{plugin="Fit",profile="default-scheduler"} 1
`, "scheduler_unschedulable_pods")
	f.c.Move(nodeAdd, nil, nil, nil, f.now)
	info, ok := f.c.Pop(f.now) // from backoff: activeQ is empty
	if !ok {
		t.Fatal("nothing popped")
	}
	f.wantIncoming("active", "PopFromBackoffQ", 1)
	// While it is in flight, a move request is kept for it.
	f.c.Move(nodeAdd, nil, nil, nil, f.now)
	f.wantGauges(`
# HELP scheduler_inflight_events Number of events currently tracked in the scheduling queue.
# TYPE scheduler_inflight_events gauge
scheduler_inflight_events{event="NodeAdd"} 1
scheduler_inflight_events{event="PodPopped"} 1
`, "scheduler_inflight_events")
	// Parked again, flushed by the timeout, and scheduled: counted.
	f.c.Requeue(info, schedq.Failure{RejectedBy: []string{"Quiet"}}, f.now)
	f.now = f.now.Add(6 * time.Minute)
	f.c.Tick(f.now)
	f.wantIncoming("active", "UnschedulableTimeout", 1)
	info, _ = f.c.Pop(f.now)
	f.c.Done(info, f.now)
	if got := testutil.ToFloat64(f.r.afterFlush); got != 1 {
		t.Errorf("pod_scheduled_after_flush_total = %v", got)
	}
	if got := testutil.CollectAndCount(f.r.wait); got != 1 {
		t.Errorf("wait histogram has %d series", got)
	}
	// Emptied, the gauges read 0, as kube-scheduler's do: a series once
	// exported does not vanish.
	f.wantGauges(`
# HELP scheduler_inflight_events Number of events currently tracked in the scheduling queue.
# TYPE scheduler_inflight_events gauge
scheduler_inflight_events{event="NodeAdd"} 0
scheduler_inflight_events{event="PodPopped"} 0
# HELP scheduler_unschedulable_pods The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for all plugins that caused it to not schedule and so this metric have meaning only when broken down by plugin.
# TYPE scheduler_unschedulable_pods gauge
scheduler_unschedulable_pods{plugin="Fit",profile="default-scheduler"} 0
`, "scheduler_inflight_events", "scheduler_unschedulable_pods")
}

func TestHintDurationAndMoveCounters(t *testing.T) {
	f := newFixture(t, Options{})
	for _, n := range []string{"a", "b"} {
		f.c.Add(job{n, 1}, f.now)
		f.fail(n, "Fit")
	}
	f.c.Move(nodeAdd, nil, nil, nil, f.now)
	if n := testutil.CollectAndCount(f.r.hints, "scheduler_queueing_hint_execution_duration_seconds"); n != 1 {
		t.Fatalf("%d hint series", n)
	}
	h := f.r.hints.WithLabelValues("Fit", "NodeAdd", "Queue").(prometheus.Histogram)
	if got := histCount(t, h); got != 2 {
		t.Errorf("hint observations %d, want 2", got)
	}
	if got := testutil.ToFloat64(f.r.examined.WithLabelValues("NodeAdd")); got != 2 {
		t.Errorf("examined %v", got)
	}
	if got := testutil.ToFloat64(f.r.moved.WithLabelValues("NodeAdd")); got != 2 {
		t.Errorf("moved %v", got)
	}
}

func histCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	c, _ := histStats(t, h)
	return c
}

// histStats returns a histogram's sample count and sum.
func histStats(t *testing.T, h any) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := h.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

// TestDurationsExact follows one item through activeQ, the parking area
// and activeQ again, and checks the time recorded in each place and the
// wait from its first entry into activeQ to the pop that succeeded.
func TestDurationsExact(t *testing.T) {
	f := newFixture(t, Options{})
	f.c.Add(job{"a", 1}, f.now)
	f.now = f.now.Add(3 * time.Second)
	f.fail("a", "Fit") // 3s in activeQ, then parked
	f.now = f.now.Add(7 * time.Second)
	f.c.Move(nodeAdd, nil, nil, nil, f.now) // 7s parked; backoff (1s) is over
	f.now = f.now.Add(2 * time.Second)
	info, ok := f.c.Pop(f.now) // 2s in activeQ
	if !ok {
		t.Fatal("nothing popped")
	}
	if err := f.c.Done(info, f.now); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		h         prometheus.Observer
		count     uint64
		sumSecond float64
	}{
		{"in activeQ", f.r.inQueue.WithLabelValues("active"), 2, 5},
		{"parked", f.r.inQueue.WithLabelValues("unschedulable"), 1, 7},
		{"in backoffQ", f.r.inQueue.WithLabelValues("backoff"), 0, 0},
		{"wait to the successful pop", f.r.wait, 1, 12},
	} {
		if n, sum := histStats(t, c.h); n != c.count || sum != c.sumSecond {
			t.Errorf("%s: %d samples summing to %vs, want %d and %vs", c.name, n, sum, c.count, c.sumSecond)
		}
	}
}

// TestMoreIncomingEvents: force activation, an update of a parked item,
// and a hint that fails (counted under hint="Error", and moving the item).
func TestMoreIncomingEvents(t *testing.T) {
	f := newFixture(t, Options{})
	f.c.Add(job{"a", 1}, f.now)
	f.c.Add(job{"b", 1}, f.now)
	f.fail("a", "Spec")
	f.fail("b", "Flaky")
	f.c.Update(job{"a", 1}, job{"a", 2}, f.now) // parked, and its backoff is still running
	f.wantIncoming("backoff", "UnschedulablePodUpdate", 1)
	f.c.Activate([]string{"a"}, f.now)
	f.wantIncoming("active", "ForceActivate", 1)
	f.c.Move(serviceAdd, nil, nil, nil, f.now)
	f.wantIncoming("backoff", "ServiceAdd", 1)
	h := f.r.hints.WithLabelValues("Flaky", "ServiceAdd", "Error").(prometheus.Histogram)
	if got := histCount(t, h); got != 1 {
		t.Errorf("hint=Error observations %d, want 1", got)
	}
	// Only b was rejected by a plugin registered for ServiceAdd: the
	// index keeps a out of the examined count.
	if got := testutil.ToFloat64(f.r.examined.WithLabelValues("ServiceAdd")); got != 1 {
		t.Errorf("examined %v, want 1", got)
	}
}

func TestNames(t *testing.T) {
	f := newFixture(t, Options{Namespace: "acme", Subsystem: "batch", Profile: "gpu"})
	f.c.Add(job{"a", 1}, f.now)
	f.fail("a", "Fit")
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	for _, want := range []string{"acme_batch_pending_pods", "acme_batch_queue_incoming_pods_total", "acme_batch_unschedulable_pods"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("no %s in %v", want, names)
		}
	}
	if err := f.r.Register(f.reg, f.c); !errors.Is(err, ErrRegistered) {
		t.Errorf("second Register: %v", err)
	}
}

// FuzzGauges runs random operations and checks after each that the
// scraped gauges equal the queue's counts and are never negative (upstream
// #113945, #132333). Plain go test runs the seeds.
func FuzzGauges(fz *testing.F) {
	fz.Add(uint64(3))
	fz.Add(uint64(4))
	fz.Fuzz(func(t *testing.T, seed uint64) { gaugesFollowTheQueue(t, seed, 1500) })
}

func gaugesFollowTheQueue(t *testing.T, seed uint64, steps int) {
	f := newFixture(t, Options{})
	r := rand.New(rand.NewPCG(seed, seed))
	inflight := map[string]schedq.Attempt[string, job]{}
	for step := range steps {
		name := fmt.Sprint("j", r.IntN(20))
		switch r.IntN(7) {
		case 0:
			f.c.Add(job{name, int32(r.IntN(5))}, f.now)
		case 1:
			if info, ok := f.c.Pop(f.now); ok {
				inflight[info.Item.name] = info
			}
		case 2:
			for n, info := range inflight {
				var plugins []string
				if r.IntN(2) == 0 {
					plugins = []string{"Fit"}
				}
				f.c.Requeue(info, schedq.Failure{RejectedBy: plugins}, f.now)
				delete(inflight, n)
				break
			}
		case 3:
			for n, info := range inflight {
				f.c.Done(info, f.now)
				delete(inflight, n)
				break
			}
		case 4:
			f.c.Delete(name, f.now)
		case 5:
			f.c.Move(nodeAdd, nil, nil, nil, f.now)
		case 6:
			f.now = f.now.Add(time.Duration(r.IntN(4000)) * time.Millisecond)
			f.c.Tick(f.now)
		}
		c := f.c.Counts()
		want := map[string]float64{"active": float64(c.Active), "backoff": float64(c.Backoff), "unschedulable": float64(c.Unschedulable), "gated": float64(c.Gated),
			"incomplete": float64(c.Incomplete), "pending": float64(c.Pending)}
		mfs, err := f.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if g := m.GetGauge(); g != nil && g.GetValue() < 0 {
					t.Fatalf("step %d: %s is negative", step, mf.GetName())
				}
				if mf.GetName() == "scheduler_pending_pods" {
					q := m.GetLabel()[0].GetValue()
					if m.GetGauge().GetValue() != want[q] {
						t.Fatalf("step %d: pending_pods{%s} = %v, want %v", step, q, m.GetGauge().GetValue(), want[q])
					}
				}
			}
		}
	}
}
