package profile

import (
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

// EventSource is what a handler of cluster events is added to: an
// informer, or a store an informer feeds that sends its events once it
// holds the object (the DRA manager's claims and slices).
type EventSource interface {
	AddEventHandler(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
}

// EventSources returns, by kind (clusterevent.ResourceClaim,
// clusterevent.ResourceSlice), the stores of the DRA manager that
// DynamicResources reads instead of the informers: its assume cache of
// claims and its slice tracker. The queue's handlers for those kinds must
// be added to these, as kube-scheduler adds them, not to the informers:
// each of an informer's handlers runs on a goroutine of its own, so a
// claim's event could reach the queue before the assume cache holds the
// claim, and DynamicResources' PreEnqueue or a cycle would then still not
// see it, leaving the pod waiting for another event (or the 5-minute
// flush). A store's event comes once it holds the object. The assume
// cache also sends the scheduler's own writes (a claim's allocation,
// assumed once DynamicResources' PreBind has written it), on the
// goroutine that made them: a binding's, which holds no lock of schedq's,
// so the handler may take the queue's. Nil on the synchronous factory,
// which has no goroutines.
func (f *Framework) EventSources() map[string]EventSource { return f.sources }

// claimEvents is the assume cache of claims as an EventSource. Its
// handlers see the claims the informer lists first as initial adds
// (isInInitialList), as an informer's handlers do: the assume cache
// delivers every add as a new one, but until its own registration on the
// informer has synced, an add is one of the initial list.
type claimEvents struct{ c *assumecache.AssumeCache }

func (e claimEvents) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	w := &initialAdds{next: h}
	reg := e.c.AddEventHandler(w)
	w.reg.Store(&reg)
	return reg, nil
}

// initialAdds passes events on to next, an add as initial while reg (the
// source's registration) has not synced.
type initialAdds struct {
	next cache.ResourceEventHandler
	reg  atomic.Pointer[cache.ResourceEventHandlerRegistration]
}

func (w *initialAdds) OnAdd(obj any, initial bool) {
	if r := w.reg.Load(); r == nil || !(*r).HasSynced() {
		initial = true
	}
	w.next.OnAdd(obj, initial)
}

func (w *initialAdds) OnUpdate(oldObj, newObj any) { w.next.OnUpdate(oldObj, newObj) }
func (w *initialAdds) OnDelete(obj any)            { w.next.OnDelete(obj) }
