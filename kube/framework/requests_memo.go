package framework

import (
	"maps"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	v1 "k8s.io/api/core/v1"
)

// requestsMemo holds each pod object's requests, computed once, for as
// long as the object lives: the key is a weak pointer, and a cleanup
// removes the entry when the pod is collected.
var requestsMemo struct {
	sync.Mutex
	m map[weak.Pointer[v1.Pod]]memoEntry
}

type memoEntry struct {
	r   Resource
	err error
}

// RequestsOf returns what PodRequests returns for p, computed once per pod
// object: the wake budget's room checks and NodeResourcesFit's queueing
// hints ask for the requests of the same parked pods on every event, and
// computing them (component-helpers, quantity arithmetic) was most of a
// forecast's CPU time. Like every consumer of informer objects it takes a
// pod as immutable: a changed pod is a new object (an update event), so
// it gets its own entry. The result's Scalar map is the caller's own.
//
// O(1) after the first call for p (O(containers) for it). Safe for
// concurrent use: one mutex guards the memo, held only for a map access.
func RequestsOf(p *v1.Pod) (Resource, error) {
	k := weak.Make(p)
	requestsMemo.Lock()
	e, ok := requestsMemo.m[k]
	requestsMemo.Unlock()
	if !ok {
		e.r, e.err = PodRequests(p)
		requestsMemo.Lock()
		if requestsMemo.m == nil {
			requestsMemo.m = map[weak.Pointer[v1.Pod]]memoEntry{}
		}
		if _, dup := requestsMemo.m[k]; !dup {
			requestsMemo.m[k] = e
			runtime.AddCleanup(p, forget, k)
		}
		requestsMemo.Unlock()
	}
	if len(e.r.Scalar) > 0 {
		e.r.Scalar = maps.Clone(e.r.Scalar)
	}
	return e.r, e.err
}

// forget drops a collected pod's entry.
func forget(k weak.Pointer[v1.Pod]) {
	requestsMemo.Lock()
	delete(requestsMemo.m, k)
	requestsMemo.Unlock()
	if f := forgotten.Load(); f != nil {
		(*f)(k)
	}
}

// forgotten, if set, is told of each entry forget drops, once it is
// gone: a test waits for that, not for the cleanups' goroutine on the
// clock.
var forgotten atomic.Pointer[func(weak.Pointer[v1.Pod])]

// memoSize is the number of pods in the memo, for tests.
func memoSize() int {
	requestsMemo.Lock()
	defer requestsMemo.Unlock()
	return len(requestsMemo.m)
}
