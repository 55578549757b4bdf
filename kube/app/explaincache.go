package app

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

// explanations shares a pod's explanation, and so its position in line
// (Explain: O(queued pods) under the queue's lock), between the requests
// of a TTL: a pod polled by many clients, or by one in a tight loop, is
// explained at most once per TTL, so that the cost of
// /debug/queue/{namespace}/{name} grows with the pods asked about, not
// with the rate of the requests. Each request still asks the queue
// whether the pod is queued, and where (Get: O(1)); a pod that left its
// place since (popped, parked, bound, deleted, updated, even if it came
// back to the same location: see place) is explained again at once, so
// an answer is never of a place the pod has left, and its
// position is at most a TTL old, which the answer says (explainAnswer's
// PositionAt). Safe for concurrent use.
type explanations struct {
	q   queueView
	ttl time.Duration
	now func() time.Time

	// mu guards the fields below, and is held across an Explain, so that
	// concurrent requests for one pod share one.
	mu      sync.Mutex
	byKey   map[types.NamespacedName]explained
	sweptAt time.Time
}

// explained is one explanation, when it was made, and the place it was
// made for.
type explained struct {
	x     schedq.Explanation[types.NamespacedName]
	at    time.Time
	place place
}

// place is what Get says of a pod's place, in O(1): its location, its
// object, its latest pop and its counts of attempts and failures. A pod
// that left its place and came back to one of the same location (deleted
// and created again, updated, tried and parked again) is at another
// place, which its location alone would not tell.
type place struct {
	loc                schedq.Location
	item               *v1.Pod
	cycle              int64
	attempts, unsched  int
	errs               int
	timestamp, backoff time.Time
}

// placeOf is the place of a pod Get found.
func placeOf(info schedq.Info[*v1.Pod], loc schedq.Location) place {
	return place{loc: loc, item: info.Item, cycle: info.Cycle, attempts: info.Attempts,
		unsched: info.UnschedulableCount, errs: info.ConsecutiveErrors,
		timestamp: info.Timestamp, backoff: info.BackoffExpiry}
}

// explain returns key's explanation, when it was made and how old it is: the one shared
// within the TTL if the pod is still where it was explained, else a new
// one (with Explain's error: not queued, in doubt, held apart). Entries
// older than the TTL are dropped once per TTL, so the map holds the pods
// asked about in the last TTL or two.
func (e *explanations) explain(key types.NamespacedName) (schedq.Explanation[types.NamespacedName], time.Time, time.Duration, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	if e.byKey == nil || now.Sub(e.sweptAt) >= e.ttl {
		for k, c := range e.byKey {
			if now.Sub(c.at) >= e.ttl {
				delete(e.byKey, k)
			}
		}
		if e.byKey == nil {
			e.byKey = map[types.NamespacedName]explained{}
		}
		e.sweptAt = now
	}
	info, loc, queued := e.q.Get(key)
	if c, ok := e.byKey[key]; ok && now.Sub(c.at) < e.ttl {
		if queued && c.place == placeOf(info, loc) {
			return c.x, c.at, now.Sub(c.at), nil
		}
	}
	// The place is read before the explanation: a pod that moves between
	// the two is explained again at the next request, never shared from a
	// place it has left.
	x, err := e.q.Explain(key)
	if err != nil {
		delete(e.byKey, key)
		return x, time.Time{}, 0, err
	}
	if !queued { // queued between the two: not shared
		delete(e.byKey, key)
		return x, now, 0, nil
	}
	e.byKey[key] = explained{x: x, at: now, place: placeOf(info, loc)}
	return x, now, 0, nil
}
