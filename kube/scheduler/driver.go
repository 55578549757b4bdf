package scheduler

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/plugins"
	"github.com/schedq/schedq/kube/profile"
)

// EquipQueue gives cfg what a queue takes from the cache c the
// handlers feed: the gang gate (UseGangGate) and, if wakeBudget, the wake
// budget on c (UseWakeBudget, room as fws' NodeResourcesFit counts it).
// Both drivers (the scheduler's run and each of its terms' queues, the
// simulator) call it, and nothing else of the two, so that their queues
// gate and wake the same pods. Call it before the queue is built.
func EquipQueue(cfg *schedq.Config[types.NamespacedName, *v1.Pod], c *Cache, wakeBudget bool, fws ...*profile.Framework) {
	UseGangGate(cfg, c)
	if wakeBudget {
		UseWakeBudget(cfg, c, fws...)
	}
}

// UseWakeBudget gives cfg the wake budget on c, with room as fws'
// NodeResourcesFit counts it (WakeBudgetOn: one profile's framework, or
// every profile's), by hint class (ClassBudget). EquipQueue calls it.
func UseWakeBudget(cfg *schedq.Config[types.NamespacedName, *v1.Pod], c *Cache, fws ...*profile.Framework) {
	cfg.Budget = WakeBudgetOn(c, fws...)
	cfg.ClassBudget = true // see WakeBudget
}

// NewHandlers returns the handlers both drivers run on queue q and cache
// c for the pods of schedulerName: the targeted move for assigned pods
// (plugins.MatchesRequiredAffinity) and cfg's hints for the warm start
// (cfg is the queue's config, its framework's hints added). The caller
// sets what only it has: Logger, Events, ColdStart.
func NewHandlers(q Queue, c *Cache, schedulerName string, cfg schedq.Config[types.NamespacedName, *v1.Pod]) *Handlers {
	return &Handlers{Queue: q, Cache: c, SchedulerName: schedulerName,
		AffinityMatch: plugins.MatchesRequiredAffinity, Hints: cfg.Hints}
}
