package profile

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
)

// QueueHints turns a framework's plugins into what schedq's queue takes
// from them (schedq.Config.Hints and PreEnqueue):
//
//   - each plugin's EventsToRegister, one schedq.EventHint per event, keyed
//     by the plugin's name; kinds and action bits convert one for one
//     (clusterevent's are kube-scheduler's), and a Pod registration stays
//     one registration, since clusterevent.Match lets it hear AssignedPod,
//     UnscheduledPod and TargetPod events;
//   - a plugin that registers no event gets no entry: a pod it rejected
//     waits for its own update, a wildcard event or the flush, as upstream;
//   - each PreEnqueue plugin as a gate: the pod is admitted when the plugin
//     returns success.
//
// A plugin without EnqueueExtensions is registered by the framework
// runtime for every event of every kind, as kube-scheduler registers it.
// PreQueueingHintFn (alpha in v1.37, off) is not used.
//
// The hint functions and gates run under the queue's lock (see
// schedq.HintFn). Upstream's are pure functions of their arguments, or
// read an informer's or an assume cache's store, whose lock is a leaf: they
// call nothing that takes the queue's or schedq's cache's lock. A hint that
// returns an error counts as Queue, as upstream; logger gets the error.
//
// Cost: one EventsToRegister per plugin, O(plugins × events).
func QueueHints(ctx context.Context, fw framework.Framework, logger klog.Logger) (map[string][]schedq.EventHint[*v1.Pod], []schedq.PreEnqueue[*v1.Pod], error) {
	hints := map[string][]schedq.EventHint[*v1.Pod]{}
	var errs []error
	for _, ext := range fw.EnqueueExtensions() {
		events, err := ext.EventsToRegister(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: EventsToRegister: %w", ext.Name(), err))
			continue
		}
		for _, ev := range events {
			hints[ext.Name()] = append(hints[ext.Name()], schedq.EventHint[*v1.Pod]{
				Event: Event(ev.Event),
				Fn:    hintFn(logger, ext.Name(), ev.QueueingHintFn),
			})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	var gates []schedq.PreEnqueue[*v1.Pod]
	for _, pl := range fw.PreEnqueuePlugins() {
		gates = append(gates, schedq.PreEnqueue[*v1.Pod]{Name: pl.Name(), Admit: admit(ctx, logger, pl)})
	}
	return hints, gates, nil
}

// Event converts one of kube-scheduler's cluster events to schedq's, with
// kube-scheduler's label. O(1).
func Event(ev fwk.ClusterEvent) schedq.Event {
	e := clusterevent.New(string(ev.Resource), schedq.Action(ev.ActionType))
	if ev.CustomLabel != "" {
		e.Label = ev.CustomLabel
	}
	return e
}

// hintFn wraps an upstream queueing hint; nil stays nil (the queue
// treats it as always Queue, as upstream's default hint does). An event
// without objects (a new leader's replay of what changed while it
// waited, see scheduler's warm start) queues the pod without asking the
// hint, which upstream always calls with an object and which may
// dereference it. A hint that panics queues the pod too, with the panic
// as its error: it fails that pod's judgement, not the process.
func hintFn(logger klog.Logger, plugin string, fn fwk.QueueingHintFn) schedq.HintFn[*v1.Pod] {
	if fn == nil {
		return nil
	}
	return func(p *v1.Pod, oldObj, newObj any) (hint schedq.Hint, err error) {
		if oldObj == nil && newObj == nil {
			return schedq.HintQueue, nil
		}
		defer func() {
			if r := recover(); r != nil {
				hint, err = schedq.HintQueue, fmt.Errorf("queueing hint of %s panicked: %v", plugin, r)
				logger.Error(err, "queueing hint panicked; the pod is queued", "pod", klog.KObj(p))
			}
		}()
		h, err := fn(logger, p, oldObj, newObj)
		if err != nil {
			logger.V(4).Info("queueing hint failed; the pod is queued", "plugin", plugin, "pod", klog.KObj(p), "err", err)
			return schedq.HintQueue, err
		}
		if h == fwk.Queue {
			return schedq.HintQueue, nil
		}
		return schedq.HintSkip, nil
	}
}

// admit wraps a PreEnqueue plugin as a gate. A gate runs under the
// queue's lock, within Add, Update or Move: a panic there would leave
// the queue's operation half done and end the informer's goroutine, and
// the process with it. A plugin that panics holds the pod back instead
// (RunPreEnqueue), as an error of it does, and the panic is logged.
func admit(ctx context.Context, logger klog.Logger, pl fwk.PreEnqueuePlugin) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool {
		st := RunPreEnqueue(ctx, pl, p)
		if st.Code() == fwk.Error {
			logger.Error(st.AsError(), "PreEnqueue failed; the pod is held back", "pod", klog.KObj(p))
		}
		return st.IsSuccess()
	}
}

// RunPreEnqueue is pl's PreEnqueue for p, a panic in it returned as an
// Error status that names the plugin and the panic.
func RunPreEnqueue(ctx context.Context, pl fwk.PreEnqueuePlugin, p *v1.Pod) (st *fwk.Status) {
	defer func() {
		if r := recover(); r != nil {
			st = fwk.AsStatus(fmt.Errorf("PreEnqueue plugin %s panicked: %v", pl.Name(), r)).WithPlugin(pl.Name())
		}
	}()
	return pl.PreEnqueue(ctx, p)
}
