package scheduler

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
)

// NamespaceFairness is the queue's fair sharing between namespaces: a
// pod's tenant is its namespace, weighted by weights (a namespace not in
// it weighs 1), its usage counting pops and fading over halfLife (0: the
// queue's default). Priority still comes first: fairness orders the pods
// of one priority. The real scheduler and the simulator both use it.
func NamespaceFairness(weights map[string]float64, halfLife time.Duration) *schedq.Fairness[*v1.Pod] {
	f := &schedq.Fairness[*v1.Pod]{Tenant: PodTenant, HalfLife: halfLife}
	if len(weights) > 0 {
		w := make(map[string]float64, len(weights))
		for ns, v := range weights {
			w[ns] = v
		}
		f.Weight = func(ns string) float64 { return w[ns] } // missing: 0, which counts as 1
	}
	return f
}

// PodTenant is a pod's tenant under NamespaceFairness: its namespace.
func PodTenant(pod *v1.Pod) string { return pod.Namespace }
