// Package stream records the queue operations of a simulator run and
// replays them, with the same virtual clock, on the upstream queue and on
// schedq, so that a realistic stream can be timed on both.
package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/schedq/schedq"
	kframework "github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
	"github.com/schedq/schedq/kube/sim"
)

// Record runs a built-in scenario, with the wake budget off, and returns
// its queue operations.
func Record(scenario string) ([]sim.Op, error) {
	sc, err := sim.Load(scenario)
	if err != nil {
		return nil, err
	}
	// Upstream has no wake budget: record the stream that both can replay.
	if err := sc.Set("wakeBudget", "false"); err != nil {
		return nil, err
	}
	var ops []sim.Op
	if _, err := sim.Run(sc, sim.Options{Trace: func(op sim.Op) { ops = append(ops, op) }}); err != nil {
		return nil, err
	}
	return ops, nil
}

// queueConfig is the queue configuration of the simulator's scheduler:
// scheduler.QueueConfig with the hints and gates of kube-scheduler's
// default profile (scheduler.UseFrameworkHints). The framework is built
// once and kept for the process: its plugins' hints may read it.
var queueConfig = sync.OnceValues(func() (schedq.Config[types.NamespacedName, *v1.Pod], error) {
	cfg := scheduler.QueueConfig()
	kcfg, err := profile.Default()
	if err != nil {
		return cfg, err
	}
	fw, err := profile.NewFrameworkOn(context.Background(), &kcfg.Profiles[0], profile.Setup{Snapshot: backendcache.NewEmptySnapshot()})
	if err != nil {
		return cfg, err
	}
	err = scheduler.UseFrameworkHints(context.Background(), &cfg, fw, klog.Background())
	return cfg, err
})

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Schedq replays ops on schedq's Core behind a mutex, taken for each
// operation as the concurrent Queue takes it: the Queue's own work, with
// the virtual time of the stream instead of a clock. Attempts are kept by
// key, as a scheduler keeps the handles Pop gave it.
type Schedq struct {
	mu       sync.Mutex
	c        *schedq.Core[types.NamespacedName, *v1.Pod]
	attempts map[types.NamespacedName]scheduler.Attempt
}

// NewSchedq builds schedq's queue as the simulator configures it.
func NewSchedq() (*Schedq, error) {
	cfg, err := queueConfig()
	if err != nil {
		return nil, err
	}
	c, err := schedq.NewCore(cfg)
	if err != nil {
		return nil, err
	}
	return &Schedq{c: c, attempts: map[types.NamespacedName]scheduler.Attempt{}}, nil
}

// Replay applies ops in order.
func (s *Schedq) Replay(ops []sim.Op) error {
	for _, op := range ops {
		if err := s.apply(op, epoch.Add(op.At)); err != nil &&
			!errors.Is(err, schedq.ErrNotFound) && !errors.Is(err, schedq.ErrAlreadyQueued) {
			return fmt.Errorf("%s at %v: %w", op.Kind, op.At, err)
		}
	}
	return nil
}

// apply runs one operation under the lock.
func (s *Schedq) apply(op sim.Op, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch op.Kind {
	case "add":
		s.c.Add(op.Pod, now)
	case "update":
		s.c.Update(op.Old, op.Pod, now)
	case "delete":
		return s.c.Delete(op.Key, now)
	case "pop":
		a, ok := s.c.Pop(now)
		if !ok {
			return errors.New("nothing to pop where the simulator popped")
		}
		s.attempts[a.Key] = a
	case "done":
		return s.c.Done(s.attempt(op.Key, op.Cycle), now)
	case "fail":
		a := s.attempt(kframework.Key(op.Pod), op.Cycle)
		a.Item = op.Pod
		return s.c.Requeue(a, op.Failure, now)
	case "park":
		return s.c.Park(op.Pod, op.Failure, now)
	case "move":
		s.c.Move(op.Event, op.OldObj, op.NewObj, nil, now)
	case "moveMatching":
		// The simulator's filter (required affinity) selects nothing in
		// pods without affinity; hints decide the rest.
		s.c.Move(op.Event, op.OldObj, op.NewObj, func(*schedq.Info[*v1.Pod]) bool { return true }, now)
	case "activate":
		s.c.Activate([]types.NamespacedName{op.Key}, now)
	case "tick":
		s.c.Tick(now)
	}
	return nil
}

// attempt returns the handle of the attempt of cycle on key.
func (s *Schedq) attempt(key types.NamespacedName, cycle int64) scheduler.Attempt {
	a, ok := s.attempts[key]
	if !ok || a.Cycle != cycle {
		a = scheduler.Attempt{Key: key, Info: schedq.Info[*v1.Pod]{Cycle: cycle}}
	}
	return a
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
	// The flush schedule, as schedq's Tick keeps it: the first tick
	// anchors it, and each flush runs at the multiples of its interval.
	anchor, nextBackoff, nextLeftover time.Time
}

// NewUpstream builds the upstream queue, with the hints and gates of
// schedq's queue (queueConfig).
func NewUpstream() (*Upstream, error) {
	cfg, err := queueConfig()
	if err != nil {
		return nil, err
	}
	metricsOnce()
	ctx, cancel := context.WithCancel(context.Background())
	clk := testingclock.NewFakeClock(epoch)
	hints := queue.QueueingHintMapPerProfile{"schedq": {}}
	for name, regs := range cfg.Hints {
		for _, eh := range regs {
			ce := clusterEvent(eh.Event)
			fn := eh.Fn
			hints["schedq"][ce] = append(hints["schedq"][ce], &queue.QueueingHintFunction{
				PluginName: name,
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
	for _, pe := range cfg.PreEnqueue {
		pre["schedq"][pe.Name] = preEnqueue{pe}
	}
	less := func(a, b fwk.QueuedEntityInfo) bool {
		pa, pb := a.GetPriority(), b.GetPriority()
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
	return &Upstream{q: q, clk: clk, ctx: ctx, cancel: cancel, logger: klog.FromContext(ctx), popped: map[types.NamespacedName]*framework.QueuedPodInfo{}}, nil
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
			u.q.Delete(u.logger, p)
		case "pop":
			if check && len(u.q.PodsInActiveQ()) == 0 && !backoffPoppable(u.q) {
				return fmt.Errorf("pop at %v: upstream has nothing to pop", op.At)
			}
			e, err := u.q.Pop(u.logger)
			if err != nil {
				return err
			}
			// The simulator's pods belong to no group: each entity is a pod.
			pi, ok := e.(*framework.QueuedPodInfo)
			if !ok {
				return fmt.Errorf("pop at %v: upstream popped a %s, not a pod", op.At, e.Type())
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
			pi.UnschedulablePlugins = sets.New(op.Failure.RejectedBy...)
			pi.PendingPlugins = sets.New(op.Failure.WaitingOn...)
			u.q.AddUnschedulablePodIfNotPresent(u.logger, pi, op.Cycle)
		case "move":
			u.q.MoveAllToActiveOrBackoffQueue(u.logger, clusterEvent(op.Event), op.OldObj, op.NewObj, nil)
		case "moveMatching":
			// v1.37 dropped AssignedPodAdded's targeted move: the scheduler
			// delivers an assigned pod's arrival as a plain event, and the
			// hints decide, as schedq's replay does with an all-pass filter.
			u.q.MoveAllToActiveOrBackoffQueue(u.logger, clusterEvent(op.Event), op.OldObj, op.NewObj, nil)
		case "activate":
			if op.Pod != nil {
				u.q.Activate(u.logger, map[string]*v1.Pod{op.Pod.Name: op.Pod})
			}
		case "tick":
			u.tick(epoch.Add(op.At))
		}
	}
	return nil
}

// Upstream's flush periods, which schedq's defaults equal.
const (
	backoffFlushEvery  = time.Second
	leftoverFlushEvery = 30 * time.Second
)

// tick runs upstream's flushes that are due at now, on the schedule
// schedq's Tick keeps; upstream runs them from timers instead.
func (u *Upstream) tick(now time.Time) {
	if u.anchor.IsZero() {
		u.anchor, u.nextBackoff, u.nextLeftover = now, now.Add(backoffFlushEvery), now.Add(leftoverFlushEvery)
		return
	}
	after := func(every time.Duration) time.Time {
		return u.anchor.Add((now.Sub(u.anchor)/every + 1) * every)
	}
	if !now.Before(u.nextBackoff) {
		upstreamFlushBackoff(u.q, u.logger)
		u.nextBackoff = after(backoffFlushEvery)
	}
	if !now.Before(u.nextLeftover) {
		upstreamFlushLeftover(u.q, u.logger)
		u.nextLeftover = after(leftoverFlushEvery)
	}
}

// backoffPoppable reports whether upstream's Pop would take from backoffQ.
func backoffPoppable(q *queue.PriorityQueue) bool {
	for _, p := range q.PodsInBackoffQ() {
		if pi, ok := q.GetPod(p.Name, p.Namespace, nil); ok && pi.UnschedulablePlugins.Len()+pi.PendingPlugins.Len() > 0 {
			return true
		}
	}
	return false
}

func clusterEvent(e schedq.Event) fwk.ClusterEvent {
	return fwk.ClusterEvent{Resource: fwk.EventResource(e.Kind), ActionType: fwk.ActionType(e.Action), CustomLabel: e.Label}
}

// preEnqueue adapts the queue's gate to upstream's PreEnqueue interface.
type preEnqueue struct{ p schedq.PreEnqueue[*v1.Pod] }

func (p preEnqueue) Name() string { return p.p.Name }
func (p preEnqueue) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	if p.p.Admit(pod) {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "gated")
}
