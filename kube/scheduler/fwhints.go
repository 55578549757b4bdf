package scheduler

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/profile"
)

// UseFrameworkHints makes cfg (a QueueConfig) wake and gate pods as fw's
// plugins ask (profile.QueueHints): each plugin of fw sets its hints in
// cfg.Hints and its gate in cfg.PreEnqueue, replacing any of the same
// name; schedq's own plugins that fw lacks (GangScheduling, when
// GenericWorkload is off upstream) keep theirs. Call it before the queue
// is built. It also sets cfg.HintClass to PodHintClass, so that a move
// request asks each hint once per class of alike pods (the replicas of
// a template) instead of once per pod. O(plugins × events).
func UseFrameworkHints(ctx context.Context, cfg *schedq.Config[types.NamespacedName, *v1.Pod], fw *profile.Framework, logger klog.Logger) error {
	hints, gates, err := profile.QueueHints(ctx, fw.Framework(), logger)
	if err != nil {
		return err
	}
	return useHints(cfg, hints, gates)
}

// useHints sets hints and gates in cfg, replacing those of the same
// names, and PodHintClass: see UseFrameworkHints.
func useHints(cfg *schedq.Config[types.NamespacedName, *v1.Pod], hints map[string][]schedq.EventHint[*v1.Pod], gates []schedq.PreEnqueue[*v1.Pod]) error {
	merged := make(map[string][]schedq.EventHint[*v1.Pod], len(cfg.Hints)+len(hints))
	for name, h := range cfg.Hints {
		merged[name] = h
	}
	for name, h := range hints {
		merged[name] = h
	}
	cfg.Hints = merged
	upstream := map[string]bool{}
	for _, g := range gates {
		upstream[g.Name] = true
	}
	for _, g := range cfg.PreEnqueue {
		if !upstream[g.Name] {
			gates = append(gates, g)
		}
	}
	cfg.PreEnqueue = gates
	cfg.HintClass = PodHintClass
	return nil
}

// UseProfileHints is UseFrameworkHints for the frameworks of several
// profiles (Options.Profiles) on one queue, as kube-scheduler keeps a
// profile's hints and gates for that profile's pods: each profile's
// hints are added under their plugin's name, each answering for the pods
// whose spec.schedulerName is its profile's only (Skip for the others),
// so that a pod is woken by its own profile's hints alone, whichever
// profiles have the plugin and with whatever args; each gate name is one
// gate that asks the pod's profile's plugin of that name, and admits a
// pod whose profile has none. PodHintClass never classes together pods
// of two profiles: it reads the whole spec, spec.schedulerName included.
// With one framework it is UseFrameworkHints. O(profiles × plugins ×
// events).
func UseProfileHints(ctx context.Context, cfg *schedq.Config[types.NamespacedName, *v1.Pod], fws []*profile.Framework, logger klog.Logger) error {
	if len(fws) == 1 {
		return UseFrameworkHints(ctx, cfg, fws[0], logger)
	}
	hints := map[string][]schedq.EventHint[*v1.Pod]{}
	gates := map[string]map[string]func(*v1.Pod) bool{}
	var order []string // gate names, in the order first met
	for _, fw := range fws {
		h, g, err := profile.QueueHints(ctx, fw.Framework(), logger)
		if err != nil {
			return fmt.Errorf("profile %q: %w", fw.Name(), err)
		}
		for plugin, regs := range h {
			for _, r := range regs {
				hints[plugin] = append(hints[plugin], schedq.EventHint[*v1.Pod]{Event: r.Event, Fn: profileHint(fw.Name(), r.Fn)})
			}
		}
		for _, gate := range g {
			if gates[gate.Name] == nil {
				gates[gate.Name] = map[string]func(*v1.Pod) bool{}
				order = append(order, gate.Name)
			}
			gates[gate.Name][fw.Name()] = gate.Admit
		}
	}
	merged := make([]schedq.PreEnqueue[*v1.Pod], 0, len(order))
	for _, name := range order {
		merged = append(merged, schedq.PreEnqueue[*v1.Pod]{Name: name, Admit: profileGate(gates[name])})
	}
	return useHints(cfg, hints, merged)
}

// profileHint is fn answering for the pods of the profile named name
// only: Skip for another profile's pod. A nil fn (always Queue) queues
// that profile's pods. O(1) beyond fn.
func profileHint(name string, fn schedq.HintFn[*v1.Pod]) schedq.HintFn[*v1.Pod] {
	return func(p *v1.Pod, oldObj, newObj any) (schedq.Hint, error) {
		if p.Spec.SchedulerName != name {
			return schedq.HintSkip, nil
		}
		if fn == nil {
			return schedq.HintQueue, nil
		}
		return fn(p, oldObj, newObj)
	}
}

// profileGate is one gate name's gates by profile: a pod is asked by its
// profile's, and admitted if its profile has none of that name. O(1)
// beyond the gate.
func profileGate(byProfile map[string]func(*v1.Pod) bool) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool {
		admit, ok := byProfile[p.Spec.SchedulerName]
		return !ok || admit(p)
	}
}

// HintProfiles returns, by plugin name, the profiles of fws whose plugin
// of that name registered events (Handlers.HintProfiles): with several
// profiles a pod is woken by its own profile's registrations only
// (UseProfileHints), so a plugin that registered events in another
// profile alone wakes none of its pods. Nil with one framework.
// O(profiles × plugins × events).
func HintProfiles(ctx context.Context, fws []*profile.Framework, logger klog.Logger) (map[string][]string, error) {
	if len(fws) <= 1 {
		return nil, nil
	}
	out := map[string][]string{}
	for _, fw := range fws {
		h, _, err := profile.QueueHints(ctx, fw.Framework(), logger)
		if err != nil {
			return nil, fmt.Errorf("profile %q: %w", fw.Name(), err)
		}
		for plugin, regs := range h {
			if len(regs) > 0 {
				out[plugin] = append(out[plugin], fw.Name())
			}
		}
	}
	return out, nil
}
