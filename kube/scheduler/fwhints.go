package scheduler

import (
	"context"

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
