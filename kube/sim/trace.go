package sim

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

// Op is one queue operation of a run, for replaying the run's stream of
// operations on another queue (see bench/compare).
type Op struct {
	// At is the virtual time of the operation.
	At time.Duration
	// Kind is add, update, delete, pop, done, doneMembers, fail, park, move, moveMatching (a
	// move with a match function, for an assigned pod's affinity), activate
	// (Key, and Pod as the simulator knows it) or tick
	// (a step at which the queue's Tick had work: the flushes that are due
	// on their schedule from the start of the run run then).
	Kind     string // done and fail carry the attempt's Cycle
	Pod, Old *v1.Pod
	Key      types.NamespacedName
	Event    schedq.Event
	OldObj   any
	NewObj   any
	Failure  schedq.Failure
	Cycle    int64
	// Placed are the indexes of the members placed, for doneMembers.
	Placed []int
	// Group names the group of a group attempt's pop, done and fail (Pod
	// is then nil); SetGroup and DeleteGroup are not traced.
	Group string
}

func (s *sim) trace(op Op) {
	if s.o.Trace != nil {
		op.At = s.now.Sub(epoch)
		s.o.Trace(op)
	}
}
