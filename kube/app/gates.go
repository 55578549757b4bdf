package app

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

// gatedQueueView is the queue view of the debug endpoints: the current
// queue, whose explanation of a pod gated at PreEnqueue (Explain, and the
// listing in pop order) also gives the gating plugin's own reason, asked
// again (scheduler.GateReasons): the queue keeps only the plugin's name.
// Each such pod costs a Get of the queue and one PreEnqueue call, with
// neither the queue's lock nor the scheduler cache's held: the debug
// endpoints' caches (explanations, pendingSnapshots) hold their own, which
// nothing takes under them, while they ask, and a PreEnqueue plugin takes
// only leaves (see scheduler.GateReasons).
type gatedQueueView struct {
	*switchQueue
	gates *scheduler.GateReasons
}

// Explain implements queueView.
func (v gatedQueueView) Explain(key types.NamespacedName) (schedq.Explanation[types.NamespacedName], error) {
	x, err := v.switchQueue.Explain(key)
	if err == nil {
		v.complete(&x)
	}
	return x, err
}

// Pending implements queueView; an unexplained listing is left so, its
// gated pods to be completed when ExplainListed explains them.
func (v gatedQueueView) Pending(o schedq.PendingOptions[*v1.Pod]) schedq.PendingPage[types.NamespacedName] {
	p := v.switchQueue.Pending(o)
	if !o.Unexplained {
		for i := range p.Items {
			v.complete(&p.Items[i].Explanation)
		}
	}
	return p
}

// ExplainListed implements queueView.
func (v gatedQueueView) ExplainListed(items []schedq.PendingItem[types.NamespacedName]) {
	v.switchQueue.ExplainListed(items)
	for i := range items {
		v.complete(&items[i].Explanation)
	}
}

// complete adds the gating plugin's reason to x if x's pod is gated.
func (v gatedQueueView) complete(x *schedq.Explanation[types.NamespacedName]) {
	if x.Location != schedq.InGated {
		return
	}
	if info, _, ok := v.switchQueue.Get(x.Key); ok {
		v.gates.Explain(x, info.Item)
	}
}
