package app

import (
	"context"
	"log/slog"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedq/schedq/kube/scheduler"
)

// newPreemption wires preemption: the PodDisruptionBudget informer (on
// factory, so it starts and syncs with the others), the API evictor
// behind the lease fence, and the preemption metrics on reg. The evictor
// is also returned as the bindings' nominator (scheduler.BindingNominator),
// so that one pod's nominations, from preemption and from a binding with
// PreBind work, are written in the order they were decided; its writes go
// through client, which the fence guards, and its Wait (the term's
// waitWrites) waits for the clearings too.
func newPreemption(factory informers.SharedInformerFactory, client kubernetes.Interface, rec events.EventRecorder,
	reg prometheus.Registerer, f *fence, log *slog.Logger, schedulerName string) (*scheduler.PreemptionOptions, scheduler.BindingNominator, error) {
	m, err := scheduler.NewPreemptionMetrics(reg)
	if err != nil {
		return nil, nil, err
	}
	pdbs := factory.Policy().V1().PodDisruptionBudgets()
	pdbs.Informer() // registered before the factory starts
	list := func() []*policyv1.PodDisruptionBudget {
		out, err := pdbs.Lister().List(labels.Everything())
		if err != nil {
			log.Warn("listing PodDisruptionBudgets", "err", err)
		}
		return out
	}
	ev := &scheduler.APIEvictor{Client: client, Recorder: rec, Logger: log, SchedulerName: schedulerName}
	return &scheduler.PreemptionOptions{Evictor: guardedEvictor{next: ev, fence: f}, Budgets: list, Metrics: m}, ev, nil
}

// guardedEvictor evicts nobody, and writes no nomination, once the lease
// may be lost: a replica that is no longer sure to lead must not delete
// pods.
type guardedEvictor struct {
	next  scheduler.Evictor
	fence *fence
}

// Preempt implements scheduler.Evictor.
func (g guardedEvictor) Preempt(ctx context.Context, p scheduler.Preemption, done func([]error)) {
	if err := g.fence.held(); err != nil {
		done([]error{err})
		return
	}
	g.next.Preempt(ctx, p, done)
}

// Wait waits for the preemptions next has under way.
func (g guardedEvictor) Wait() { g.next.Wait() }
