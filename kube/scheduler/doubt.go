package scheduler

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// A binding in doubt is one whose term ended (its context was cancelled)
// before the API server's answer came: the request may have been made all
// the same. Forgetting the pod then would free its room in the cache while
// the pod may be bound there; a new term of the same process, whose pod
// informer has not shown the binding yet (it lags, or its watch broke in
// the outage that ended the term), would place another pod in that room.
// So the pod stays assumed on its node, counted by every cycle, until the
// pod informer shows it bound (AddPod confirms it) or deleted (RemovePod),
// or a read from the API server settles it (Handlers.SettleInDoubt).
// docs/failover.md describes it.

// InDoubt is a binding in doubt: Pod, kept assumed on Node.
type InDoubt struct {
	Pod  *v1.Pod
	Node string
}

// keepInDoubt keeps pod assumed on node as a binding in doubt, and
// reports whether it did: if ctx (the term's) has ended and err is no
// answer of the API server's (the request was cancelled, timed out, or
// got a 5xx, see answerLost). The framework's reservations are undone as
// for a failed binding, but for its claims' allocations in flight, which
// DynamicResources' PreBind may have written: those are held in the DRA
// manager (profile.Framework.HoldClaims) until a read of each claim
// settles it. The cache's accounting and those allocations, which every
// plugin of the next term reads, are what stay.
func (s *Scheduler) keepInDoubt(ctx context.Context, pod *v1.Pod, node string, pb *pendingBinding, err error) bool {
	if ctx.Err() == nil || !(errors.Is(err, context.Canceled) || answerLost(err)) {
		return false
	}
	if !s.cache.keepInDoubt(pod) {
		return false
	}
	claims := 0
	if pb.fw != nil {
		claims = s.profileFor(pod).fw.HoldClaims(pb.fw.pod)
		pb.fw.unreserve(ctx)
	}
	s.o.Logger.Info("binding in doubt: its term ended before the answer; the pod keeps its room until it is known",
		"pod", framework.Key(pod), "node", node, "claimsHeld", claims, "err", err)
	return true
}

// keepInDoubt marks pod's assumption (this UID) as a binding in doubt;
// false if pod is not assumed.
func (c *Cache) keepInDoubt(pod *v1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.assumed[framework.Key(pod)]
	if !ok || a.uid != pod.UID {
		return false
	}
	c.markWritten(framework.Key(pod))
	a.doubt = true
	// The binding is its ended term's no more: a node deleted from now on
	// must not abort it as an unstarted one (its request may have waited
	// for a slot), which would forget the pod and give it back to that
	// term's queue, discarded by then, leaving it in no queue and out of
	// doubt. Only the informer and SettleInDoubt end it.
	a.b = nil
	return true
}

// InDoubt returns the bindings in doubt, by pod key. O(assumed pods).
func (c *Cache) InDoubt() []InDoubt {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []InDoubt
	for key, a := range c.assumed {
		if !a.doubt {
			continue
		}
		if pi := c.podInfoLocked(key); pi != nil {
			out = append(out, InDoubt{Pod: pi.Pod, Node: a.node})
		}
	}
	slices.SortFunc(out, func(x, y InDoubt) int {
		return strings.Compare(framework.Key(x.Pod).String(), framework.Key(y.Pod).String())
	})
	return out
}

// InDoubtOn returns the node that the pod of key is held on as a binding
// in doubt, if it is one.
func (c *Cache) InDoubtOn(key types.NamespacedName) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a, ok := c.assumed[key]
	if !ok || !a.doubt {
		return "", false
	}
	return a.node, true
}

// RegisterInDoubt registers on reg the gauge scheduler_bindings_in_doubt:
// how many pods c holds as bindings in doubt, read at each scrape
// (O(assumed pods)). Such a pod is pending but in no queue, and its
// binding was counted as an error (bindings_total): the gauge is what
// shows it.
func RegisterInDoubt(reg prometheus.Registerer, c *Cache) error {
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Subsystem: "scheduler", Name: "bindings_in_doubt",
		Help: "Pods kept on their node because their term ended before their binding's answer came, until the pod informer or a read settles them.",
	}, func() float64 { return float64(c.countInDoubt()) }))
}

// countInDoubt returns the number of bindings in doubt. O(assumed pods).
func (c *Cache) countInDoubt() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, a := range c.assumed {
		if a.doubt {
			n++
		}
	}
	return n
}

// settleInDoubt ends the doubt about pod (this UID), if it is still in
// doubt: it forgets the pod if forget, else keeps it assumed as an
// ordinary assumption, which the informer confirms; on the node that at
// (the pod as read, if not nil) is bound to, moved there if it is not the
// node of its binding. It reports whether the pod was in doubt.
func (c *Cache) settleInDoubt(pod *v1.Pod, at *framework.PodInfo, forget bool) bool {
	c.lock()
	defer c.unlock()
	key := framework.Key(pod)
	a, ok := c.assumed[key]
	if !ok || a.uid != pod.UID || !a.doubt {
		return false
	}
	c.markWritten(key)
	a.doubt = false
	switch {
	case forget:
		c.removeLocked(key)
		delete(c.assumed, key)
	case at != nil && at.Pod.Spec.NodeName != a.node:
		c.removeLocked(key)
		c.placeLocked(at, at.Pod.Spec.NodeName)
		a.node = at.Pod.Spec.NodeName
	}
	return true
}

// SettleInDoubt settles d given the pod as the API server has it now
// (nil: not found), read after the term that sent the binding ended:
//   - bound (the same pod, to any node): it stays assumed, no longer in
//     doubt, until the pod informer shows it bound; on the node it is
//     bound to (another leader may have bound it elsewhere meanwhile), so
//     that the informer's lag leaves that node's room counted;
//   - gone, replaced by a pod of another UID, or bound and finished
//     (it holds no room): it is forgotten;
//   - not bound: it is forgotten and queued again, in activeQ even if it
//     carries a failure record (the warm start does not park it: the
//     record is older than the place its term found for it).
//
// A forgotten pod's room, or the room a pod moved to the node it is bound
// to left, is offered to the parked pods, as an assigned pod's deletion. If the informer has settled d meanwhile, nothing is
// done. Holds the pod events' lock throughout, as the informer's pod
// handlers do (see Cache), so that neither sees the other half done: the
// informer's deletion or binding of the pod, seen just after the read,
// takes the queued pod out again. Within it, takes the cache's lock,
// releases it, then the queue's: never both.
func (h *Handlers) SettleInDoubt(d InDoubt, now *v1.Pod) {
	h.Cache.lockEvents()
	defer h.Cache.unlockEvents()
	same := now != nil && now.UID == d.Pod.UID
	if same && assigned(now) {
		at, err := framework.NewPodInfo(now)
		if err != nil {
			h.log().Warn("cache", "pod", framework.Key(now), "err", err)
			at = nil // kept where it was assumed
		}
		if h.Cache.settleInDoubt(d.Pod, at, false) && at != nil && now.Spec.NodeName != d.Node {
			// Moved: the room it held on d.Node is free.
			h.check("move", d.Pod, h.Queue.Move(clusterevent.AssignedPodDelete, assumedOn(d.Pod, d.Node), nil, nil))
		}
		return
	}
	if !h.Cache.settleInDoubt(d.Pod, nil, true) {
		return
	}
	h.check("move", d.Pod, h.Queue.Move(clusterevent.AssignedPodDelete, assumedOn(d.Pod, d.Node), nil, nil))
	if same {
		// Its term found it a place after any failure record it carries,
		// through room the record may not show (a forgotten assumption, a
		// nomination let go): that record is stale, so it is not parked.
		h.addPodParking(now, false, false)
	}
}
