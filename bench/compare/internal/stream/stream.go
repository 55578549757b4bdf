// Package stream records the queue operations of a simulator run and
// replays them, with the same virtual clock, on the upstream queue and on
// schedq, so that a realistic stream can be timed on both.
package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/schedq/schedq"
	kframework "github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/plugins"
	"github.com/schedq/schedq/kube/scheduler"
	"github.com/schedq/schedq/kube/sim"
)

// Record runs a built-in scenario and returns its queue operations.
func Record(scenario string) ([]sim.Op, error) {
	sc, err := sim.Load(scenario)
	if err != nil {
		return nil, err
	}
	var ops []sim.Op
	if _, err := sim.Run(sc, sim.Options{Trace: func(op sim.Op) { ops = append(ops, op) }}); err != nil {
		return nil, err
	}
	return ops, nil
}

// profile is the plugin set the simulator runs.
func profile() kframework.Profile { return plugins.Default(plugins.LeastAllocated) }

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Schedq replays ops on schedq's locked Queue with a fake clock.
type Schedq struct {
	q   *schedq.Queue[types.NamespacedName, *v1.Pod]
	clk *testingclock.FakeClock
}

// NewSchedq builds schedq's queue as the simulator configures it.
func NewSchedq() (*Schedq, error) {
	clk := testingclock.NewFakeClock(epoch)
	cfg := scheduler.QueueConfig(profile())
	cfg.Clock = clk
	q, err := schedq.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Schedq{q: q, clk: clk}, nil
}

// Replay applies ops in order.
func (s *Schedq) Replay(ops []sim.Op) error {
	for _, op := range ops {
		s.clk.SetTime(epoch.Add(op.At))
		var err error
		switch op.Kind {
		case "add":
			err = s.q.Add(op.Pod)
		case "update":
			err = s.q.Update(op.Old, op.Pod)
		case "delete":
			err = s.q.Delete(op.Key)
		case "pop":
			_, ok, perr := s.q.TryPop()
			if perr == nil && !ok {
				perr = errors.New("nothing to pop where the simulator popped")
			}
			err = perr
		case "done":
			err = s.q.Done(op.Key, op.Cycle)
		case "fail":
			err = s.q.AddUnschedulableIfNotPresent(op.Pod, op.Cycle, op.Failure)
		case "move":
			err = s.q.MoveAllToActiveOrBackoffQueue(op.Event, op.OldObj, op.NewObj, nil)
		case "moveMatching":
			// The simulator's filter (required affinity) selects nothing in
			// pods without affinity; hints decide the rest.
			err = s.q.MoveMatching(op.Event, op.OldObj, op.NewObj, func(*schedq.Info[*v1.Pod]) bool { return true })
		case "flushBackoff":
			err = s.q.FlushBackoffCompleted()
		case "flushLeftover":
			err = s.q.FlushUnschedulableLeftover()
		}
		if err != nil && !errors.Is(err, schedq.ErrNotFound) && !errors.Is(err, schedq.ErrAlreadyQueued) {
			return fmt.Errorf("%s at %v: %w", op.Kind, op.At, err)
		}
	}
	return nil
}

// Upstream replays ops on the upstream queue, configured with the same
// plugins' hints and PreEnqueue check, and a fake clock.
type Upstream struct {
	q      *queue.PriorityQueue
	clk    *testingclock.FakeClock
	ctx    context.Context
	cancel context.CancelFunc
	logger klog.Logger
	popped map[types.NamespacedName]*framework.QueuedPodInfo
}

// NewUpstream builds the upstream queue.
func NewUpstream() *Upstream {
	metricsOnce()
	ctx, cancel := context.WithCancel(context.Background())
	clk := testingclock.NewFakeClock(epoch)
	p := profile()
	hints := queue.QueueingHintMapPerProfile{"schedq": {}}
	for _, ext := range p.Enqueue {
		for _, eh := range ext.EventsToRegister() {
			ce := clusterEvent(eh.Event)
			fn := eh.Fn
			hints["schedq"][ce] = append(hints["schedq"][ce], &queue.QueueingHintFunction{
				PluginName: ext.Name(),
				QueueingHintFn: func(_ klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
					if fn == nil {
						return fwk.Queue, nil
					}
					h, err := fn(pod, oldObj, newObj)
					if h == schedq.HintQueue {
						return fwk.Queue, err
					}
					return fwk.QueueSkip, err
				},
			})
		}
	}
	pre := map[string]map[string]fwk.PreEnqueuePlugin{"schedq": {}}
	for _, pe := range p.PreEnqueue {
		pre["schedq"][pe.Name()] = preEnqueue{pe}
	}
	less := func(a, b fwk.QueuedPodInfo) bool {
		pa, pb := kframework.Priority(a.GetPodInfo().GetPod()), kframework.Priority(b.GetPodInfo().GetPod())
		if pa != pb {
			return pa > pb
		}
		return a.GetTimestamp().Before(b.GetTimestamp())
	}
	q := queue.NewTestQueue(ctx, less,
		queue.WithClock(clk),
		queue.WithQueueingHintMapPerProfile(hints),
		queue.WithPreEnqueuePluginMap(pre),
		queue.WithMetricsRecorder(metrics.NewMetricsAsyncRecorder(1000, time.Second, ctx.Done())),
	)
	return &Upstream{q: q, clk: clk, ctx: ctx, cancel: cancel, logger: klog.FromContext(ctx), popped: map[types.NamespacedName]*framework.QueuedPodInfo{}}
}

// Close stops the queue.
func (u *Upstream) Close() { u.q.Close(); u.cancel() }

// Replay applies ops in order. With check, each Pop the simulator made is
// first checked (in O(n)) to find a pod in upstream too, so that a
// divergence fails instead of blocking; the benchmark replays a stream the
// test has checked, without it.
func (u *Upstream) Replay(ops []sim.Op, check bool) error {
	for _, op := range ops {
		u.clk.SetTime(epoch.Add(op.At))
		switch op.Kind {
		case "add":
			u.q.Add(u.ctx, op.Pod)
		case "update":
			u.q.Update(u.ctx, op.Old, op.Pod)
		case "delete":
			p := op.Pod
			if p == nil {
				p = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: op.Key.Namespace, Name: op.Key.Name}}
			}
			u.q.Delete(p)
		case "pop":
			if check && len(u.q.PodsInActiveQ()) == 0 && !backoffPoppable(u.q) {
				return fmt.Errorf("pop at %v: upstream has nothing to pop", op.At)
			}
			pi, err := u.q.Pop(u.logger)
			if err != nil {
				return err
			}
			u.popped[kframework.Key(pi.Pod)] = pi
		case "done":
			if pi := u.popped[op.Key]; pi != nil {
				u.q.Done(pi.Pod.UID)
				delete(u.popped, op.Key)
			}
		case "fail":
			pi := u.popped[kframework.Key(op.Pod)]
			if pi == nil {
				continue
			}
			delete(u.popped, kframework.Key(op.Pod))
			pi.ClearRejectorPlugins()
			pi.UnschedulablePlugins = sets.New(op.Failure.UnschedulablePlugins...)
			pi.PendingPlugins = sets.New(op.Failure.PendingPlugins...)
			u.q.AddUnschedulableIfNotPresent(u.logger, pi, op.Cycle)
		case "move":
			u.q.MoveAllToActiveOrBackoffQueue(u.logger, clusterEvent(op.Event), op.OldObj, op.NewObj, nil)
		case "moveMatching":
			if p, ok := op.NewObj.(*v1.Pod); ok {
				u.q.AssignedPodAdded(u.logger, p)
			}
		case "flushBackoff":
			upstreamFlushBackoff(u.q, u.logger)
		case "flushLeftover":
			upstreamFlushLeftover(u.q, u.logger)
		}
	}
	return nil
}

// backoffPoppable reports whether upstream's Pop would take from backoffQ.
func backoffPoppable(q *queue.PriorityQueue) bool {
	for _, p := range q.PodsInBackoffQ() {
		if pi, ok := q.GetPod(p.Name, p.Namespace); ok && pi.UnschedulablePlugins.Len()+pi.PendingPlugins.Len() > 0 {
			return true
		}
	}
	return false
}

func clusterEvent(e schedq.Event) fwk.ClusterEvent {
	return fwk.ClusterEvent{Resource: fwk.EventResource(e.Resource), ActionType: fwk.ActionType(e.Action), CustomLabel: e.CustomLabel}
}

// preEnqueue adapts our PreEnqueue plugin to upstream's interface.
type preEnqueue struct{ p kframework.PreEnqueuePlugin }

func (p preEnqueue) Name() string { return p.p.Name() }
func (p preEnqueue) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	if p.p.PreEnqueue(pod) {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "gated")
}
