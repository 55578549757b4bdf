package scheduler

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq/kube/framework"
)

// BindingNominator writes the status.nominatedNodeName of a pod whose
// binding has work to do before its request, as kube-scheduler v1.37.2
// does with NominatedNodeNameForExpectation (beta, on by default): a
// binding whose PreBind plugins have work (PreBindPreFlight succeeds:
// a volume to provision, devices to allocate) first names the chosen
// node in the pod's status, so that other components (the cluster
// autoscaler) see where the pod is about to go while PreBind runs. The
// API server clears it when it binds the pod
// (ClearingNominatedNodeNameAfterBinding); a binding that fails and
// gives the pod back clears it (ClearAfterBinding). The live scheduler's
// is its APIEvictor, which orders these writes with those of
// preemption, one pod at a time; the simulator has none (Options).
type BindingNominator interface {
	// NominateForBinding decides that pod's nomination is node, in
	// order with the other decisions about pod's nomination (called on
	// the scheduling loop), and returns its write, which the caller runs
	// exactly once, holding no lock; a decision made after this one and
	// written first supersedes it (the write is then skipped).
	NominateForBinding(pod *v1.Pod, node string) (write func(ctx context.Context) error)
	// ClearAfterBinding decides that pod's nomination is cleared (its
	// binding to node failed) and writes it on a goroutine of its own,
	// which the implementation's Wait waits for (APIEvictor.Wait); a
	// failure is logged. Safe to call from any goroutine, with any of
	// the scheduler's locks held: it only orders the write.
	ClearAfterBinding(ctx context.Context, pod *v1.Pod, node string)
}

// nominate decides the nomination of the pod whose binding b is about
// to run PreBind plugins that have work, and returns its write (nil
// without Options.Nominations, which b.noms is). Called on the
// scheduling loop, from startBinding, so that the decision is ordered
// with those of preemption; b remembers it, to clear it if the binding
// fails (unnominate).
func (b *fwBinding) nominate() func(ctx context.Context) error {
	if b.noms == nil {
		return nil
	}
	b.nominated.Store(true)
	return b.noms.NominateForBinding(b.pod, b.node)
}

// writeNomination runs write, the binding's nomination, on the
// binding's goroutine before PreBind. A failure is logged and the
// binding goes on, as kube-scheduler's does: the nomination only informs
// other components.
func (b *fwBinding) writeNomination(ctx context.Context, write func(ctx context.Context) error) {
	if write == nil {
		return
	}
	if err := write(ctx); err != nil {
		b.logger().Warn("could not write status.nominatedNodeName before PreBind; binding all the same",
			"pod", framework.Key(b.pod), "node", b.node, "err", err)
	}
}

// unnominate clears, once, the nomination the binding wrote
// (nominate), when the binding failed and gives the pod back:
// kube-scheduler clears it with the failure's status update. Called
// before the pod is given back, so that a nomination decided by the
// pod's next attempt is ordered after the clearing. Nothing if no
// nomination was written.
func (b *fwBinding) unnominate(ctx context.Context) {
	if b.noms == nil || !b.nominated.Swap(false) {
		return
	}
	b.noms.ClearAfterBinding(ctx, b.pod, b.node)
}
