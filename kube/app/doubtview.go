package app

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

// inDoubtView is the debug endpoints' queue view, whose Explain of a pod
// the queue does not hold says so when the cache holds the pod as a
// binding in doubt (docs/failover.md): a pending pod of ours, out of the
// queue until its binding is settled, which the plain answer ("unknown,
// bound, or not ours") would hide. inDoubt is Cache.InDoubtOn. So does
// held (Cache.HeldApart), for a group member out of the queue while its
// group attempt's bindings end: its own under way, or failed and waiting
// for the others before it goes back with its group.
type inDoubtView struct {
	queueView
	inDoubt func(types.NamespacedName) (string, bool)
	held    func(types.NamespacedName) (string, bool)
}

// Explain implements queueView.
func (v inDoubtView) Explain(key types.NamespacedName) (schedq.Explanation[types.NamespacedName], error) {
	x, err := v.queueView.Explain(key)
	if !errors.Is(err, schedq.ErrNotFound) {
		return x, err
	}
	if node, ok := v.inDoubt(key); ok {
		return x, inDoubtError{key: key, node: node}
	}
	if v.held != nil {
		if why, ok := v.held(key); ok {
			return x, heldError{key: key, why: why}
		}
	}
	return x, err
}

// heldError is Explain's answer for a pod the cache holds apart from the
// queue (Cache.HeldApart); it is a schedq.ErrNotFound.
type heldError struct {
	key types.NamespacedName
	why string
}

func (e heldError) Error() string {
	return fmt.Sprintf("pod %s is not in schedq's queue: %s", e.key, e.why)
}

func (e heldError) Unwrap() error { return schedq.ErrNotFound }

// inDoubtError is Explain's answer for a pod held in doubt; it is a
// schedq.ErrNotFound.
type inDoubtError struct {
	key  types.NamespacedName
	node string
}

func (e inDoubtError) Error() string {
	return fmt.Sprintf("pod %s is not in schedq's queue: it is held on node %s as a binding in doubt (a term ended before the API server answered its binding); the pod informer or the next read of the pod settles it", e.key, e.node)
}

func (e inDoubtError) Unwrap() error { return schedq.ErrNotFound }

// notInQueueMessage is the message of a debug endpoint's 404 for key, which
// the queue view's Explain did not find (err is a schedq.ErrNotFound): a
// binding in doubt and a group member held apart say so (pending pods of
// ours, held out of the queue), others get the plain "unknown, bound, or
// not ours". held reports the first two.
func notInQueueMessage(key types.NamespacedName, err error) (msg string, held bool) {
	var doubt inDoubtError
	var apart heldError
	switch {
	case errors.As(err, &doubt):
		return doubt.Error(), true
	case errors.As(err, &apart):
		return apart.Error(), true
	}
	return fmt.Sprintf("pod %s is not in schedq's queue: it is unknown, bound, or not ours", key), false
}
