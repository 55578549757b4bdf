package plugins

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// MatchesRequiredAffinity reports whether assigned, a pod just bound in a
// namespace with labels nsLabels, satisfies one of queued's required pod
// affinity terms: the handlers wake only such queued pods on an assigned
// pod's arrival (scheduler.Handlers.AffinityMatch). False for a pod
// without required pod affinity, or whose terms do not parse. O(terms).
func MatchesRequiredAffinity(queued *v1.Pod, assigned *v1.Pod, nsLabels labels.Set) bool {
	a := queued.Spec.Affinity
	if a == nil || a.PodAffinity == nil || len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		return false
	}
	pi, err := framework.NewPodInfo(queued)
	if err != nil {
		return false
	}
	for _, t := range pi.RequiredAffinity {
		if t.Matches(assigned, nsLabels) {
			return true
		}
	}
	return false
}

// eventObjects converts a hint's old and new objects to T, where either may
// be nil (an add has no old object, a delete no new one).
func eventObjects[T any](oldObj, newObj any) (oldT, newT T, err error) {
	if oldObj != nil {
		var ok bool
		if oldT, ok = oldObj.(T); !ok {
			return oldT, newT, fmt.Errorf("old object: want %T, got %T", oldT, oldObj)
		}
	}
	if newObj != nil {
		var ok bool
		if newT, ok = newObj.(T); !ok {
			return oldT, newT, fmt.Errorf("new object: want %T, got %T", newT, newObj)
		}
	}
	return oldT, newT, nil
}

// hintIf queues the pod if queue is true, else skips it.
func hintIf(queue bool) schedq.Hint {
	if queue {
		return schedq.HintQueue
	}
	return schedq.HintSkip
}
