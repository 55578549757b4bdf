// Package upstream drives the kube-scheduler scheduling queue
// (k8s.io/kubernetes/pkg/scheduler/backend/queue, v1.37.2) through a small,
// name-based, fully synchronous API, so that the same operation sequence can
// be replayed against another implementation and the resulting pod
// placements compared (differential testing).
package upstream

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"
)

// Where() answers.
const (
	Active        = "active"
	Backoff       = "backoff"
	Unschedulable = "unschedulable"
	Gated         = "gated"
	InFlight      = "inflight"
	Pending       = "pending"    // a member that arrived while its group was in flight
	Incomplete    = "incomplete" // a member whose group object is unknown
	Absent        = "absent"
)

// Namespace of every driver pod.
const Namespace = "default"

// Options configures a Driver. Zero values take the defaults noted.
type Options struct {
	InitialBackoff     time.Duration // default 1s (upstream default)
	MaxBackoff         time.Duration // default 10s (upstream default)
	MaxInUnschedulable time.Duration // default 5m (upstream default)
	// DisablePopFromBackoff builds the queue with the SchedulerPopFromBackoffQ
	// feature gate off (on by default in v1.37.2).
	DisablePopFromBackoff bool
	// Groups builds the queue with the GenericWorkload feature gate on
	// (off by default in v1.37.2), so that pods naming a PodGroup are
	// queued as its members.
	Groups bool
	Start  time.Time // fake clock start; default 2026-01-01T00:00:00Z
}

type inflight struct {
	info  *framework.QueuedPodInfo
	cycle int64
}

// Driver wraps one upstream PriorityQueue. It is not safe for concurrent use.
type Driver struct {
	q      *queue.PriorityQueue
	clk    *testingclock.FakeClock
	ctx    context.Context
	cancel context.CancelFunc
	logger klog.Logger

	pods     map[string]*v1.Pod   // latest version of every known pod
	inflight map[string]*inflight // popped and not yet returned
	incarn   map[string]int       // re-creations of a name while in flight
	noPopBO  bool                 // Options.DisablePopFromBackoff
	groups   map[string]Popped    // group attempts in flight, by group name
}

// New builds a driver around a fresh upstream queue. The queue's Run is
// never called: nothing runs in the background, and the flushes happen only
// when the driver asks (see linkname.go), so a replay is deterministic.
func New(o Options) *Driver {
	ctx, cancel := context.WithCancel(context.Background())
	q, clk := NewBenchQueue(ctx, o)
	return &Driver{
		q: q, clk: clk, ctx: ctx, cancel: cancel, logger: klog.FromContext(ctx),
		pods: map[string]*v1.Pod{}, inflight: map[string]*inflight{}, incarn: map[string]int{},
		noPopBO: o.DisablePopFromBackoff, groups: map[string]Popped{},
	}
}

// Close stops the queue and its goroutines.
func (d *Driver) Close() {
	d.q.Close()
	d.cancel()
}

// Queue exposes the underlying upstream queue (read-only use recommended).
func (d *Driver) Queue() *queue.PriorityQueue { return d.q }

// Now is the fake clock's current time.
func (d *Driver) Now() time.Time { return d.clk.Now() }

// NewPod builds the pod object the driver uses for name.
func NewPod(name string, priority int32, labels map[string]string) *v1.Pod {
	p := priority
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: Namespace, UID: types.UID("uid-" + name),
			Labels: maps.Clone(labels),
		},
		Spec: v1.PodSpec{SchedulerName: Profile, Priority: &p},
	}
}

// Add creates a new pending pod.
func (d *Driver) Add(name string, priority int32) { d.AddLabeled(name, priority, nil) }

// AddLabeled creates a new pending pod with labels (see LabelGated, LabelWake).
// A name whose pod is in flight may be created again: the new pod gets a
// UID of its own, as a pod deleted and recreated during its attempt does.
func (d *Driver) AddLabeled(name string, priority int32, labels map[string]string) {
	_, flying := d.inflight[name]
	if _, ok := d.pods[name]; ok && !flying {
		panic("upstream driver: duplicate pod " + name)
	}
	pod := NewPod(name, priority, labels)
	if flying {
		d.incarn[name]++
		pod.UID = types.UID(fmt.Sprintf("uid-%s-%d", name, d.incarn[name]))
	}
	d.pods[name] = pod
	d.q.Add(d.ctx, pod)
}

// Poppable reports whether upstream Pop would return without blocking: the
// activeQ is non-empty, or (SchedulerPopFromBackoffQ, on unless
// Options.DisablePopFromBackoff) the
// backoffQ proper holds a pod. Pods that failed with an error (no rejector
// plugins) live in a separate error-backoff heap that Pop does not take from.
func (d *Driver) Poppable() bool {
	if len(d.q.PodsInActiveQ()) > 0 {
		return true
	}
	if d.noPopBO {
		return false
	}
	for _, p := range d.q.PodsInBackoffQ() {
		if pi, ok := d.q.GetPod(p.Name, p.Namespace, nil); ok &&
			(pi.UnschedulablePlugins.Len() > 0 || pi.PendingPlugins.Len() > 0) {
			return true
		}
	}
	return false
}

// Pop takes the head of the queue. It returns ok=false instead of blocking
// when nothing is poppable.
func (d *Driver) Pop() (name string, ok bool) {
	if !d.Poppable() {
		return "", false
	}
	e, err := d.q.Pop(d.logger)
	if err != nil || e == nil {
		return "", false
	}
	if g, ok := e.(*framework.QueuedPodGroupInfo); ok {
		return d.popGroup(g), true
	}
	pi, ok := e.(*framework.QueuedPodInfo)
	if !ok {
		panic(fmt.Sprintf("upstream driver: popped a %s, not a pod", e.Type()))
	}
	d.inflight[pi.Pod.Name] = &inflight{info: pi, cycle: d.q.SchedulingCycle()}
	return pi.Pod.Name, true
}

// FailUnschedulable returns an in-flight pod as rejected by plugins.
func (d *Driver) FailUnschedulable(name string, plugins []string) error {
	return d.fail(name, plugins)
}

// FailError returns an in-flight pod as failed by an error (no rejector
// plugins): upstream puts it in the error backoff heap.
func (d *Driver) FailError(name string) error { return d.fail(name, nil) }

func (d *Driver) fail(name string, plugins []string) error {
	f, ok := d.inflight[name]
	if !ok {
		return fmt.Errorf("pod %s is not in flight", name)
	}
	delete(d.inflight, name)
	cur, exists := d.pods[name]
	if !exists {
		// Deleted while in flight: like the scheduler, do not requeue.
		d.q.Done(f.info.Pod.UID)
		return nil
	}
	// The scheduler refreshes the PodInfo from its informer cache before
	// requeueing; mirror that with the latest version we know.
	pi, _ := framework.NewPodInfo(cur.DeepCopy())
	f.info.PodInfo = pi
	f.info.ClearRejectorPlugins()
	f.info.UnschedulablePlugins = sets.New(plugins...)
	f.info.PendingPlugins = sets.New[string]()
	return d.q.AddUnschedulablePodIfNotPresent(d.logger, f.info, f.cycle)
}

// Done finishes an in-flight pod successfully (it got bound).
func (d *Driver) Done(name string) {
	f, ok := d.inflight[name]
	if !ok {
		return
	}
	delete(d.inflight, name)
	d.q.Done(f.info.Pod.UID)
	delete(d.pods, name)
}

// Update replaces a pod's priority and labels (labels are replaced, not merged).
func (d *Driver) Update(name string, newPriority int32, newLabels map[string]string) {
	old, ok := d.pods[name]
	if !ok {
		return
	}
	nw := UpdatedPod(old, newPriority, newLabels)
	d.pods[name] = nw
	d.q.Update(d.ctx, old, nw)
}

// UpdatedPod returns a new version of old with the given priority and
// labels (replaced, not merged).
func UpdatedPod(old *v1.Pod, priority int32, labels map[string]string) *v1.Pod {
	nw := old.DeepCopy()
	nw.Spec.Priority = &priority
	nw.Labels = maps.Clone(labels)
	nw.ResourceVersion = fmt.Sprint(len(old.ResourceVersion) + 1)
	return nw
}

// Delete removes a pod.
func (d *Driver) Delete(name string) {
	p, ok := d.pods[name]
	if !ok {
		return
	}
	delete(d.pods, name)
	d.q.Delete(d.logger, p)
}

// MoveAll delivers a cluster event; the fake plugins answer per policy.
func (d *Driver) MoveAll(e Event, policy HintPolicy) {
	ev, oldObj, newObj := EventArgs(e, policy)
	d.q.MoveAllToActiveOrBackoffQueue(d.logger, ev, oldObj, newObj, nil)
}

// EventArgs builds the upstream event plus synthetic old/new objects for e,
// stamped with the hint policy the fake plugins will apply.
func EventArgs(e Event, policy HintPolicy) (ev fwk.ClusterEvent, oldObj, newObj interface{}) {
	lbl := map[string]string{labelPolicy: string(policy)}
	switch e {
	case NodeAdd:
		newObj = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: lbl}}
	case NodeUpdateTaint:
		oldObj = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: lbl}}
		newObj = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: lbl},
			Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}}}
	case AssignedPodDelete:
		oldObj = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: Namespace, Labels: lbl},
			Spec: v1.PodSpec{NodeName: "n1"}}
	}
	return clusterEvent(e), oldObj, newObj
}

// Activate force-activates a pod parked in backoff/unschedulable.
func (d *Driver) Activate(name string) {
	if p, ok := d.pods[name]; ok {
		d.q.Activate(d.logger, map[string]*v1.Pod{name: p})
	}
}

// Step advances the fake clock. It does not by itself flush anything.
func (d *Driver) Step(dt time.Duration) { d.clk.Step(dt) }

// FlushBackoff runs one flushBackoffQCompleted pass (what upstream does once
// per second) and returns when it is complete.
func (d *Driver) FlushBackoff() { flushBackoffQCompleted(d.q, d.logger) }

// FlushUnschedulable runs one flushUnschedulablePodsLeftover pass (upstream
// does it every 30s wall time) synchronously.
func (d *Driver) FlushUnschedulable() { flushUnschedulablePodsLeftover(d.q, d.logger) }

// Where reports which part of the queue holds the pod: its queued copy if
// it has one (a pod recreated during its attempt), else its attempt.
func (d *Driver) Where(name string) string {
	p, ok := d.pods[name]
	if !ok {
		return d.flying(name)
	}
	if has(d.q.PodsInActiveQ(), name) {
		return Active
	}
	if has(d.q.PodsInBackoffQ(), name) {
		return Backoff
	}
	if has(d.q.UnschedulablePods(), name) {
		if pi, ok := d.q.GetPod(name, p.Namespace, nil); ok && pi.Gated() {
			return Gated
		}
		return Unschedulable
	}
	if has(d.q.PendingPodGroupPods(), name) {
		return Pending
	}
	if has(d.q.IncompletePodGroupPodsPods(), name) {
		return Incomplete
	}
	return d.flying(name)
}

// flying is InFlight if the queue has an attempt of name in flight, else
// Absent.
func (d *Driver) flying(name string) string {
	if _, ok := d.inflight[name]; ok {
		for _, p := range d.q.InFlightPods() {
			if p.Name == name {
				return InFlight
			}
		}
	}
	return Absent
}

// Snapshot maps every known pod name to Where(name).
func (d *Driver) Snapshot() map[string]string {
	out := make(map[string]string, len(d.pods))
	for n := range d.pods {
		out[n] = d.Where(n)
	}
	return out
}

// ActiveOrder lists the activeQ in pop order (priority desc, then timestamp).
func (d *Driver) ActiveOrder() []string {
	infos := []*framework.QueuedPodInfo{}
	for _, p := range d.q.PodsInActiveQ() {
		if pi, ok := d.q.GetPod(p.Name, p.Namespace, nil); ok {
			infos = append(infos, pi)
		}
	}
	slices.SortStableFunc(infos, func(a, b *framework.QueuedPodInfo) int {
		switch {
		case Less(a, b):
			return -1
		case Less(b, a):
			return 1
		}
		return 0
	})
	out := make([]string, len(infos))
	for i, pi := range infos {
		out[i] = pi.Pod.Name
	}
	return out
}

func has(pods []*v1.Pod, name string) bool {
	for _, p := range pods {
		if p.Name == name {
			return true
		}
	}
	return false
}
