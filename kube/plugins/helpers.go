package plugins

import (
	"fmt"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// tolerationComparisonOperators mirrors kube-scheduler's
// TaintTolerationComparisonOperators feature gate, alpha and off in 1.36:
// tolerations with the Lt and Gt operators tolerate nothing.
const tolerationComparisonOperators = false

// noLog is handed to the component-helpers toleration functions, which log
// only when comparison operators are on. Hints must not do I/O anyway.
var noLog = logr.Discard()

// tolerates reports whether tolerations tolerate taint.
func tolerates(tolerations []v1.Toleration, taint *v1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(noLog, tolerations, taint, tolerationComparisonOperators)
}

// doNotSchedule selects the taints that keep pods off a node: NoSchedule
// and NoExecute. PreferNoSchedule only affects scoring.
func doNotSchedule(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// untoleratedTaint returns the first of a node's taints that keeps pod
// away.
func untoleratedTaint(pod *v1.Pod, taints []v1.Taint) (v1.Taint, bool) {
	if len(taints) == 0 {
		return v1.Taint{}, false
	}
	return corev1helpers.FindMatchingUntoleratedTaint(noLog, taints, pod.Spec.Tolerations, doNotSchedule, tolerationComparisonOperators)
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

// nodeEvent extracts the nodes of a node event. The new node is required.
func nodeEvent(oldObj, newObj any) (oldNode, newNode *v1.Node, err error) {
	oldNode, newNode, err = eventObjects[*v1.Node](oldObj, newObj)
	if err == nil && newNode == nil {
		err = fmt.Errorf("node event without a new node")
	}
	return oldNode, newNode, err
}

// podEvent extracts the pods of a pod event; at least one must be set.
func podEvent(oldObj, newObj any) (oldPod, newPod *v1.Pod, err error) {
	oldPod, newPod, err = eventObjects[*v1.Pod](oldObj, newObj)
	if err == nil && oldPod == nil && newPod == nil {
		err = fmt.Errorf("pod event without a pod")
	}
	return oldPod, newPod, err
}

// samePod reports whether a and b are the same pod: by UID when both have
// one, else by namespace and name.
func samePod(a, b *v1.Pod) bool {
	if a == nil || b == nil {
		return false
	}
	if a.UID != "" && b.UID != "" {
		return a.UID == b.UID
	}
	return a.Namespace == b.Namespace && a.Name == b.Name
}
