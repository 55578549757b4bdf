package upstream

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	testingclock "k8s.io/utils/clock/testing"
)

// registerOnce registers upstream's metrics, which its queue needs.
var registerOnce sync.Once

// NewBenchQueue builds a bare upstream queue for benchmarks: same options,
// hints and PreEnqueue plugin as the Driver, a plain fake clock, and Run is
// NOT called (no background goroutines). Use FlushBackoffQ / FlushLeftover to
// run the periodic flushes synchronously.
func NewBenchQueue(ctx context.Context, o Options) (*queue.PriorityQueue, *testingclock.FakeClock) {
	if o.InitialBackoff == 0 {
		o.InitialBackoff = queue.DefaultPodInitialBackoffDuration
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = queue.DefaultPodMaxBackoffDuration
	}
	if o.MaxInUnschedulable == 0 {
		o.MaxInUnschedulable = queue.DefaultPodMaxInUnschedulablePodsDuration
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	registerOnce.Do(metrics.Register)
	if o.DisablePopFromBackoff {
		// The queue reads the gate once, when built.
		restore, err := setGate(features.SchedulerPopFromBackoffQ, false)
		if err != nil {
			panic(err)
		}
		defer restore()
	}
	if o.Groups {
		restore, err := setGate(features.GenericWorkload, true)
		if err != nil {
			panic(err)
		}
		defer restore()
	}
	clk := testingclock.NewFakeClock(o.Start)
	q := queue.NewTestQueue(ctx, Less,
		queue.WithClock(clk),
		queue.WithPodInitialBackoffDuration(o.InitialBackoff),
		queue.WithPodMaxBackoffDuration(o.MaxBackoff),
		queue.WithPodMaxInUnschedulablePodsDuration(o.MaxInUnschedulable),
		queue.WithQueueingHintMapPerProfile(hintMap()),
		queue.WithPreEnqueuePluginMap(preEnqueueMap()),
		// NewTestQueue installs a recorder flushing every 20µs into a
		// 10-slot buffer; use the production scheduler's settings instead so
		// a busy flusher goroutine does not distort measurements.
		queue.WithMetricsRecorder(metrics.NewMetricsAsyncRecorder(1000, time.Second, ctx.Done())),
	)
	return q, clk
}

// FlushBackoffQ runs upstream's flushBackoffQCompleted once, synchronously.
func FlushBackoffQ(q *queue.PriorityQueue, logger klog.Logger) { flushBackoffQCompleted(q, logger) }

// FlushLeftover runs upstream's flushUnschedulablePodsLeftover once, synchronously.
func FlushLeftover(q *queue.PriorityQueue, logger klog.Logger) {
	flushUnschedulablePodsLeftover(q, logger)
}

// PopPod pops the head entity, which must be a single pod: since v1.37 Pop
// returns an entity (a pod or a pod group), and the benchmarks' pods belong
// to no group. Costs one type assertion over Pop.
func PopPod(q *queue.PriorityQueue, logger klog.Logger) (*framework.QueuedPodInfo, error) {
	e, err := q.Pop(logger)
	if err != nil {
		return nil, err
	}
	pi, ok := e.(*framework.QueuedPodInfo)
	if !ok {
		return nil, fmt.Errorf("upstream popped a %s, not a pod", e.Type())
	}
	return pi, nil
}
