// Package schedqdrv drives a schedq.Core with the same name-based API, fake
// plugins and event objects as the upstream driver, so that one operation
// sequence can run on both and the results be compared.
package schedqdrv

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/bench/compare/internal/upstream"
	"github.com/schedq/schedq/kube/clusterevent"
)

// Events, as schedq sees the upstream driver's events.
var events = map[upstream.Event]schedq.Event{
	upstream.NodeAdd:           clusterevent.NodeAdd,
	upstream.NodeUpdateTaint:   clusterevent.New(clusterevent.Node, clusterevent.UpdateNodeTaint),
	upstream.AssignedPodDelete: clusterevent.AssignedPodDelete,
	upstream.Wildcard:          {Kind: schedq.AnyKind, Action: schedq.AnyAction, Label: "WildCard"},
}

var podLabelUpdate = clusterevent.New(clusterevent.Pod, clusterevent.UpdatePodLabel)

// hint adapts an upstream hint function.
func hint(fn fwk.QueueingHintFn) schedq.HintFn[*v1.Pod] {
	logger := klog.Background()
	return func(p *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
		h, err := fn(logger, p, oldObj, newObj)
		if h == fwk.Queue {
			return schedq.HintQueue, err
		}
		return schedq.HintSkip, err
	}
}

// Key is a pod's identity in schedq: its namespace and name, as a struct,
// which unlike a "namespace/name" string costs no allocation.
func Key(p *v1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

// Config is the schedq configuration equivalent to the upstream driver's.
func Config(o upstream.Options) schedq.Config[types.NamespacedName, *v1.Pod] {
	reg := func(plugin string, ev schedq.Event) schedq.EventHint[*v1.Pod] {
		return schedq.EventHint[*v1.Pod]{Event: ev, Fn: hint(upstream.HintFor(plugin))}
	}
	return schedq.Config[types.NamespacedName, *v1.Pod]{
		Key: Key,
		Priority: func(p *v1.Pod) int32 {
			if p.Spec.Priority != nil {
				return *p.Spec.Priority
			}
			return 0
		},
		InitialBackoff:        o.InitialBackoff,
		MaxBackoff:            o.MaxBackoff,
		MaxInUnschedulable:    o.MaxInUnschedulable,
		DisablePopFromBackoff: o.DisablePopFromBackoff,
		// Every Tick at a later instant runs both flushes, as the driver's
		// Flush runs upstream's two.
		FlushBackoffInterval:       time.Nanosecond,
		FlushUnschedulableInterval: time.Nanosecond,
		Match:                      clusterevent.Match,
		// The fake plugins' hints read only a pod's wake label: members
		// with one wake label get the same verdicts.
		HintClass: func(p *v1.Pod) uint64 { return wakeClass(p.Labels[upstream.LabelWake]) },
		Hints: map[string][]schedq.EventHint[*v1.Pod]{
			upstream.PluginA:  {reg(upstream.PluginA, events[upstream.NodeAdd])},
			upstream.PluginB:  {reg(upstream.PluginB, events[upstream.NodeAdd]), reg(upstream.PluginB, events[upstream.NodeUpdateTaint])},
			upstream.PluginC:  {reg(upstream.PluginC, events[upstream.AssignedPodDelete])},
			upstream.GateName: {{Event: podLabelUpdate, Fn: hint(upstream.GateHint)}},
		},
		PreEnqueue: []schedq.PreEnqueue[*v1.Pod]{{Name: upstream.GateName, Admit: func(p *v1.Pod) bool {
			_, gated := p.Labels[upstream.LabelGated]
			return !gated
		}}},
		// As upstream derives pod update events: a label change, or else a
		// general update.
		UpdateEvents: func(oldPod, newPod *v1.Pod) []schedq.Event {
			res := clusterevent.TargetPod
			if newPod.Spec.NodeName != "" {
				res = clusterevent.AssignedPod
			}
			if !equality.Semantic.DeepEqual(oldPod.Labels, newPod.Labels) {
				return []schedq.Event{clusterevent.New(res, clusterevent.UpdatePodLabel)}
			}
			return []schedq.Event{clusterevent.New(res, clusterevent.Update)}
		},
	}
}

// Driver mirrors upstream.Driver on a schedq.Core. Not safe for concurrent use.
type Driver struct {
	c         *schedq.Core[types.NamespacedName, *v1.Pod]
	now       time.Time
	pods      map[string]*v1.Pod
	inflight  map[string]schedq.Attempt[types.NamespacedName, *v1.Pod]
	groups    map[string]schedq.Attempt[types.NamespacedName, *v1.Pod] // group attempts in flight
	violation error
}

// New builds a driver with the upstream driver's defaults.
func New(o upstream.Options) *Driver {
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	d := &Driver{now: o.Start, pods: map[string]*v1.Pod{}, inflight: map[string]schedq.Attempt[types.NamespacedName, *v1.Pod]{},
		groups: map[string]schedq.Attempt[types.NamespacedName, *v1.Pod]{}}
	cfg := Config(o)
	if o.Groups {
		cfg.Group = podGroup
	}
	cfg.CheckInvariants = func(err error) {
		if d.violation == nil {
			d.violation = err
		}
	}
	c, err := schedq.NewCore(cfg)
	if err != nil {
		panic(err)
	}
	d.c = c
	c.Tick(d.now) // anchors the flush schedule
	return d
}

// Violation returns the first broken invariant the queue found after one
// of its operations, or nil.
func (d *Driver) Violation() error { return d.violation }

func key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: upstream.Namespace, Name: name}
}

// AddLabeled creates a new pending pod. A name whose pod is in flight may
// be created again, as upstream's driver allows.
func (d *Driver) AddLabeled(name string, priority int32, labels map[string]string) {
	if _, ok := d.pods[name]; ok && d.inflight[name].Cycle == 0 {
		panic("schedq driver: duplicate pod " + name)
	}
	p := upstream.NewPod(name, priority, labels)
	d.pods[name] = p
	d.c.Add(p, d.now)
}

// Pop takes the head of the queue, or reports that nothing is poppable.
func (d *Driver) Pop() (string, bool) {
	info, ok := d.c.Pop(d.now)
	if !ok {
		return "", false
	}
	if info.Group != "" {
		d.groups[info.Group] = info
		for _, m := range info.Members {
			d.inflight[m.Key.Name] = m
		}
		return "group:" + info.Group, true
	}
	d.inflight[info.Item.Name] = info
	return info.Item.Name, true
}

// FailUnschedulable returns an in-flight pod as rejected by plugins.
func (d *Driver) FailUnschedulable(name string, plugins []string) error {
	return d.fail(name, schedq.Failure{RejectedBy: plugins})
}

// FailError returns an in-flight pod as failed by an error.
func (d *Driver) FailError(name string) error { return d.fail(name, schedq.Failure{}) }

func (d *Driver) fail(name string, f schedq.Failure) error {
	info, ok := d.inflight[name]
	if !ok {
		return fmt.Errorf("pod %s is not in flight", name)
	}
	delete(d.inflight, name)
	if cur, exists := d.pods[name]; exists {
		info.Item = cur
	} // else deleted during the attempt: the queue drops it
	return d.c.Requeue(info, f, d.now)
}

// Done finishes an in-flight pod: it got bound.
func (d *Driver) Done(name string) {
	info, ok := d.inflight[name]
	if !ok {
		return
	}
	delete(d.inflight, name)
	if err := d.c.Done(info, d.now); err != nil {
		panic(err)
	}
	delete(d.pods, name)
}

// Update replaces a pod's priority and labels.
func (d *Driver) Update(name string, newPriority int32, newLabels map[string]string) {
	old, ok := d.pods[name]
	if !ok {
		return
	}
	nw := upstream.UpdatedPod(old, newPriority, newLabels)
	d.pods[name] = nw
	d.c.Update(old, nw, d.now)
}

// Delete removes a pod.
func (d *Driver) Delete(name string) {
	if _, ok := d.pods[name]; !ok {
		return
	}
	delete(d.pods, name)
	d.c.Delete(key(name), d.now)
}

// MoveAll delivers a cluster event with the same objects as upstream's.
func (d *Driver) MoveAll(e upstream.Event, policy upstream.HintPolicy) {
	_, oldObj, newObj := upstream.EventArgs(e, policy)
	d.c.Move(events[e], oldObj, newObj, nil, d.now)
}

// Activate force-activates a pod.
func (d *Driver) Activate(name string) {
	if _, ok := d.pods[name]; ok {
		d.c.Activate([]types.NamespacedName{key(name)}, d.now)
	}
}

// Step advances the clock.
func (d *Driver) Step(dt time.Duration) { d.now = d.now.Add(dt) }

// Flush runs the backoff flush and then the leftover flush, through the
// queue's Tick.
func (d *Driver) Flush() { d.c.Tick(d.now) }

// Where reports which part of the queue holds the pod, in the upstream
// driver's words.
func (d *Driver) Where(name string) string {
	if _, ok := d.pods[name]; !ok {
		if _, ok := d.inflight[name]; !ok {
			return upstream.Absent
		}
	}
	_, loc, ok := d.c.Get(key(name))
	if !ok {
		return upstream.Absent
	}
	return loc.String()
}

// wakeClass hashes a wake label (FNV-1a) into a Config.HintClass.
func wakeClass(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}
