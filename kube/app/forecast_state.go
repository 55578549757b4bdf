package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"slices"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	resourceinformers "k8s.io/client-go/informers/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/scheduler"
	"github.com/schedq/schedq/kube/sim"
)

// copyChunk is how many queue items or nodes one hold of the queue's or
// the cache's lock copies for a forecast's state.
const copyChunk = 1000

// liveState copies the scheduler's state for a forecast: the cache's nodes
// and the pods on them, the queue's pending pods in the order they wait
// with their nominations, and the PodGroups. The pod informer's list is
// read before the cache, so that a pod bound during the copy is in it,
// pending or running, and once. Neither the queue's lock nor
// the cache's is held for the whole copy: the queue's order is listed
// once (two holds of O(queued), copying what the order needs and then
// the listing's keys, with no explanation), and its pods are explained
// copyChunk at a time (see copyQueue), the cache read a chunk of
// copyChunk nodes at a time. The copy is therefore not one instant of the
// scheduler but a few milliseconds of it, which a forecast of minutes
// does not notice.
//
// copy is safe to call concurrently with the scheduler (it takes the
// cache's, the queue's and the stores' own locks); the forecaster calls it
// from one run at a time.
type liveState struct {
	queue      queueView
	cache      *scheduler.Cache
	pods       cache.Store // the pod informer's: pending pods' objects
	namespaces cache.Store // the namespace informer's
	groups     lister      // the PodGroup informer's store (podGroupStore); nil: none
	// objects are the stores of the volumes, claims and DRA objects the
	// plugins watch (forecastStores): sim.ForecastState.Objects.
	objects []cache.Store
	// claims lists DRA's claims as the scheduler's DynamicResources sees
	// them (its claim tracker): with the allocations in flight of pods
	// whose binding is under way, which the informer's claims lack until
	// DynamicResources' PreBind has written them (after VolumeBinding's,
	// which may wait minutes for a volume). Nil without DRA; then objects
	// hold the claims, if any.
	claims claimLister
	// budgets lists the PodDisruptionBudgets (the preemption's lister,
	// PreemptionOptions.Budgets): sim.ForecastState.Budgets. Nil: none.
	budgets func() []*policyv1.PodDisruptionBudget
	// templates lists the ResourceClaimTemplates (templateInformer); nil
	// without DRA. Until it has synced, the state says it has none
	// (sim.ForecastState.TemplatesUnlisted).
	templates     cache.SharedIndexInformer
	schedulerName string
	// profiles are the schedulerNames of the scheduler's profiles if it
	// runs several (nil with one): the pods of each are pending in the
	// forecasts, under their own names, for the simulator to schedule
	// each with its profile's framework (sim.SchedulerSpec.Profiles).
	profiles []string
	clock    clock.PassiveClock
}

// lister lists a store's objects: a cache.Store, or a podGroupStore.
type lister interface {
	List() []any
}

// liveProfiles are liveState.profiles for the scheduler of o: its
// profiles' schedulerNames if it runs several, else nil. O(profiles).
func liveProfiles(o Options) []string {
	if len(o.profiles()) > 1 {
		return o.schedulerNames()
	}
	return nil
}

// ours reports whether name, a pod's spec.schedulerName, is one of the
// scheduler's profiles'. O(profiles).
func ours(schedulerName string, profiles []string, name string) bool {
	if profiles == nil {
		return name == schedulerName
	}
	return slices.Contains(profiles, name)
}

// simName is the schedulerName a pending pod of the scheduler named name
// takes in the simulator: sim.SchedulerName with one profile, its own
// with several (see liveState.profiles). O(1).
func simName(profiles []string, name string) string {
	if profiles == nil {
		return sim.SchedulerName
	}
	return name
}

// CopyStats says how the state was copied: how long it took, and the
// longest single hold of the queue's or the cache's lock (an upper bound:
// the time of the call that held it).
type CopyStats struct {
	Took         time.Duration `json:"took"`
	MaxQueueHold time.Duration `json:"maxQueueHold"`
	MaxCacheHold time.Duration `json:"maxCacheHold"`
	QueueHolds   int           `json:"queueHolds"`
	CacheHolds   int           `json:"cacheHolds"`
}

// copy takes the state. O(nodes + pods + queued log queued).
func (l *liveState) copy() (*sim.ForecastState, CopyStats) {
	var cs CopyStats
	start := l.clock.Now()
	st := &sim.ForecastState{Now: start}
	seen := map[types.UID]bool{}
	// The pod informer first: the cache holds a pod the scheduler binds
	// (assumed) before the informer sees it bound, so a pod bound during
	// the copy is unbound in this list or on a node in the cache's copy,
	// never in neither.
	pods := l.pods.List()
	assumed := map[types.UID]*v1.Pod{}
	l.copyCache(st, seen, assumed, &cs)
	order, nominated, queued := l.copyQueue(&cs)
	st.Pending = l.pending(pods, order, nominated, seen)
	st.Queued = queuedByUID(st.Pending, queued)
	for _, obj := range l.namespaces.List() {
		if ns, ok := obj.(*v1.Namespace); ok {
			st.Namespaces = append(st.Namespaces, ns)
		}
	}
	slices.SortFunc(st.Namespaces, func(a, b *v1.Namespace) int { return compareKeys(a.Name, b.Name) })
	st.Objects = l.copyObjects()
	if l.budgets != nil {
		st.Budgets = l.budgets()
	}
	if l.claims != nil {
		claims := listClaims(l.claims)
		st.Objects = append(st.Objects, claims...)
		unassumeUnallocated(st, assumed, claims, l.profiles)
	}
	if l.templates != nil {
		if l.templates.HasSynced() {
			st.Objects = append(st.Objects, storeObjects(l.templates.GetStore())...)
		} else {
			st.TemplatesUnlisted = true
		}
	}
	if l.groups != nil {
		for _, obj := range l.groups.List() {
			if pg, ok := obj.(*schedulingv1beta1.PodGroup); ok {
				st.PodGroups = append(st.PodGroups, pg)
			}
		}
		slices.SortFunc(st.PodGroups, func(a, b *schedulingv1beta1.PodGroup) int {
			return compareKeys(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
	}
	cs.Took = l.clock.Since(start)
	return st, cs
}

// copyCache copies the nodes and their pods, copyChunk nodes per hold of
// the cache's lock.
func (l *liveState) copyCache(st *sim.ForecastState, seen map[types.UID]bool, assumed map[types.UID]*v1.Pod, cs *CopyStats) {
	var names []string
	l.hold(&cs.MaxCacheHold, &cs.CacheHolds, func() {
		l.cache.View(func(s framework.Snapshot) {
			for _, ni := range s.Nodes() {
				names = append(names, ni.Node.Name)
			}
		})
	})
	for i := 0; i < len(names); i += copyChunk {
		part := names[i:min(i+copyChunk, len(names))]
		l.hold(&cs.MaxCacheHold, &cs.CacheHolds, func() {
			l.cache.View(func(s framework.Snapshot) {
				for _, name := range part {
					if ni, ok := s.Node(name); ok {
						l.addNode(st, ni, name, seen, assumed)
					}
				}
			})
		})
	}
}

// addNode copies node ni and its pods; the pods assumed (binding under
// way) go in assumed too, as the cache has them (unbound).
func (l *liveState) addNode(st *sim.ForecastState, ni *framework.NodeInfo, name string, seen map[types.UID]bool, assumed map[types.UID]*v1.Pod) {
	st.Nodes = append(st.Nodes, ni.Node)
	for _, pi := range ni.Pods {
		p := pi.Pod
		if seen[p.UID] {
			continue
		}
		seen[p.UID] = true
		if p.Spec.NodeName != name { // assumed: its binding is under way
			assumed[p.UID] = p
			c := *p
			c.Spec.NodeName = name
			p = &c
		}
		started := st.Now
		if p.Status.StartTime != nil {
			started = p.Status.StartTime.Time
		}
		st.Running = append(st.Running, sim.RunningPod{Pod: p, Started: started})
	}
}

// copyQueue lists the queue's pending pods in the order they wait, with
// their nominations and how the queue holds each (group members aside):
// where, and its history there (attempts, failures, rejecting plugins,
// timestamp, backoff expiry). A forecast restores them so
// (sim.ForecastState.Queued): queued as new, its run would begin by
// trying every parked and backing-off pod again, attempts the scheduler
// does not make, room freed meanwhile would go to whichever pod that
// pass had reached instead of to the pods the events wake, and each pod
// failing again would back off as after its first failure.
//
// The order is listed once, unexplained (one O(queued) hold of the
// queue's lock to copy what the order needs, the sort outside it, and
// one O(queued) hold to cut the listing, with no explanation), then the
// listed pods are explained copyChunk at a time, by key, each chunk one
// hold of O(copyChunk): O(queued) in all. Until 2026-11-30 each chunk
// listed the whole queue again, O(queued²/copyChunk) in all, and each
// hold was O(queued). A pod that left the queue between the listing and
// its chunk is left out, as the queue no longer lists it (it is in
// flight, bound, or deleted); one that moved is explained where it is.
func (l *liveState) copyQueue(cs *CopyStats) ([]string, map[string]string, map[string]sim.QueuedPod) {
	var all schedq.PendingPage[types.NamespacedName]
	l.hold(&cs.MaxQueueHold, &cs.QueueHolds, func() {
		all = l.queue.Pending(schedq.PendingOptions[*v1.Pod]{Limit: math.MaxInt, Unexplained: true})
	})
	order := make([]string, 0, len(all.Items))
	nominated := map[string]string{}
	queued := make(map[string]sim.QueuedPod, len(all.Items))
	for i := 0; i < len(all.Items); i += copyChunk {
		part := all.Items[i:min(i+copyChunk, len(all.Items))]
		l.hold(&cs.MaxQueueHold, &cs.QueueHolds, func() {
			l.queue.ExplainListed(part)
		})
		for _, it := range part {
			if it.Location == 0 {
				continue // left the queue since it was listed
			}
			key := it.Key.String()
			order = append(order, key)
			if it.NominatedTarget != "" {
				nominated[key] = it.NominatedTarget
			}
			if qp, ok := sim.QueuedOf(it.Explanation); ok {
				queued[key] = qp
			}
		}
	}
	return order, nominated, queued
}

// pending returns the unbound pods of this scheduler in pods, the pod
// informer's list: those the queue does not list (in flight, or members
// of a gang the queue holds as one) first, by key, then the queue's in
// its order, each carrying its nomination. Pods seen on a node are left
// out.
func (l *liveState) pending(pods []any, order []string, nominated map[string]string, seen map[types.UID]bool) []*v1.Pod {
	unbound := map[string]*v1.Pod{}
	for _, obj := range pods {
		p, ok := obj.(*v1.Pod)
		if !ok || p.Spec.NodeName != "" || !ours(l.schedulerName, l.profiles, p.Spec.SchedulerName) || p.DeletionTimestamp != nil ||
			p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed || seen[p.UID] {
			continue
		}
		unbound[p.Namespace+"/"+p.Name] = p
	}
	// A pod the queue lists carries the queue's nomination, none if it
	// holds none: the status may still name a node whose nomination the
	// queue dropped (docs/preemption.md), which the forecast's handlers
	// would take over. One it does not list keeps its status's.
	withNomination := func(key string, listed bool) *v1.Pod {
		p := unbound[key]
		node, ok := nominated[key]
		if !ok && !listed {
			node = p.Status.NominatedNodeName
		}
		name := simName(l.profiles, p.Spec.SchedulerName)
		if node == p.Status.NominatedNodeName && p.Spec.SchedulerName == name {
			return p
		}
		c := *p // shallow: the forecast changes no pod in place
		c.Spec.SchedulerName = name
		c.Status.NominatedNodeName = node
		return &c
	}
	var queued, out []*v1.Pod
	listed := map[string]bool{}
	for _, key := range order {
		if unbound[key] != nil {
			listed[key] = true
			queued = append(queued, withNomination(key, true))
		}
	}
	for _, key := range sortedNames(unbound) {
		if !listed[key] {
			out = append(out, withNomination(key, false))
		}
	}
	return append(out, queued...)
}

// queuedByUID is queued (by key) for the pods of pending, by UID; nil
// if none is listed.
func queuedByUID(pending []*v1.Pod, queued map[string]sim.QueuedPod) map[types.UID]sim.QueuedPod {
	var out map[types.UID]sim.QueuedPod
	for _, p := range pending {
		if qp, ok := queued[p.Namespace+"/"+p.Name]; ok {
			if out == nil {
				out = map[types.UID]sim.QueuedPod{}
			}
			out[p.UID] = qp
		}
	}
	return out
}

// unassumeUnallocated makes pending again, first in st.Pending (by key),
// each assumed pod of st.Running one of whose claims the tracker's list
// (claims) shows unallocated or lacks. The scheduler assumes a pod in its
// cache before DynamicResources' Reserve allocates its claims (or fails
// to), and the cache is copied before the claims: such a pod would run
// in the forecast with its devices free, for another pod to take. It is
// in flight, and pending (under its simName: profiles are
// liveState.profiles). O(running + claims).
func unassumeUnallocated(st *sim.ForecastState, assumed map[types.UID]*v1.Pod, claims []runtime.Object, profiles []string) {
	if len(assumed) == 0 {
		return
	}
	allocated := map[string]bool{}
	for _, o := range claims {
		if c, ok := o.(*resourceapi.ResourceClaim); ok {
			allocated[c.Namespace+"/"+c.Name] = c.Status.Allocation != nil
		}
	}
	var back []*v1.Pod
	st.Running = slices.DeleteFunc(st.Running, func(rp sim.RunningPod) bool {
		p := assumed[rp.Pod.UID]
		if p == nil || !slices.ContainsFunc(sim.ClaimNames(p), func(n string) bool { return !allocated[p.Namespace+"/"+n] }) {
			return false
		}
		c := *p // shallow: the forecast changes no pod in place
		c.Spec.SchedulerName = simName(profiles, p.Spec.SchedulerName)
		back = append(back, &c)
		return true
	})
	slices.SortFunc(back, func(a, b *v1.Pod) int { return compareKeys(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	st.Pending = append(back, st.Pending...)
}

// copyObjects lists the objects of l.objects, store by store, each sorted
// by key. They are the informers' objects, shared and read-only, as the
// pods are. O(k log k) for k objects; each store holds its own lock.
func (l *liveState) copyObjects() []runtime.Object {
	var out []runtime.Object
	for _, s := range l.objects {
		out = append(out, storeObjects(s)...)
	}
	return out
}

// storeObjects lists the objects of s, sorted by key. O(k log k).
func storeObjects(s cache.Store) []runtime.Object {
	var out []runtime.Object
	keys := s.ListKeys()
	slices.Sort(keys)
	for _, k := range keys {
		if obj, ok, _ := s.GetByKey(k); ok {
			if o, ok := obj.(runtime.Object); ok {
				out = append(out, o)
			}
		}
	}
	return out
}

// claimLister lists ResourceClaims and their allocations in flight: the
// part of fwk.ResourceClaimTracker the forecast reads.
type claimLister interface {
	List() ([]*resourceapi.ResourceClaim, error)
	Get(namespace, name string) (*resourceapi.ResourceClaim, error)
	GetPendingAllocation(claimUID types.UID) *resourceapi.AllocationResult
}

// listClaims lists l's claims, sorted by namespace and name, each with
// its allocation in flight if it has one (a copy then: the tracker's
// claims are shared) or written since the list (withAllocation); none if
// the list fails (the tracker's does not).
// O(k log k).
func listClaims(l claimLister) []runtime.Object {
	claims, err := l.List()
	if err != nil {
		return nil
	}
	slices.SortFunc(claims, func(a, b *resourceapi.ResourceClaim) int {
		return compareKeys(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	out := make([]runtime.Object, len(claims))
	for i, c := range claims {
		out[i] = withAllocation(l, c)
	}
	return out
}

// withAllocation returns c, listed unallocated or not, as allocated as
// the tracker knows it now: with its allocation in flight (a copy of c
// then), or, if there is none, as the tracker has it now. The second look
// closes the window between the list and the look-up in flight, in which
// a binding's PreBind may write the claim: it puts the written claim in
// the tracker before it drops the allocation in flight, so a claim gone
// from the one is in the other. O(1).
func withAllocation(l claimLister, c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	if c.Status.Allocation != nil {
		return c
	}
	if a := l.GetPendingAllocation(c.UID); a != nil {
		c = c.DeepCopy()
		c.Status.Allocation = copyPendingAllocation(a)
		return c
	}
	if now, err := l.Get(c.Namespace, c.Name); err == nil && now.UID == c.UID && now.Status.Allocation != nil {
		return now
	}
	return c
}

// copyPendingAllocation copies an allocation in flight, a, all but its
// AllocationTimestamp: DynamicResources' PreBind stamps that field of the
// tracker's very object on the binding's goroutine, without a lock, while
// the allocation is still in flight, so reading it here would be a data
// race. The forecast does not use it (it times out no binding condition).
// Devices and NodeSelector are written once, at Reserve, before the
// tracker publishes the allocation under its lock.
func copyPendingAllocation(a *resourceapi.AllocationResult) *resourceapi.AllocationResult {
	return &resourceapi.AllocationResult{Devices: *a.Devices.DeepCopy(), NodeSelector: a.NodeSelector.DeepCopy()}
}

// claimTracker returns the claim tracker of fw's DRA manager when DRA's
// claims are watched (w), nil otherwise (see liveState.claims).
func claimTracker(fw fwk.Handle, w map[string]cache.SharedIndexInformer) claimLister {
	if w[clusterevent.ResourceClaim] == nil || fw.SharedDRAManager() == nil {
		return nil
	}
	return fw.SharedDRAManager().ResourceClaims()
}

// forecastStores returns, in a fixed order, the stores of the watched
// informers (see watched) whose objects a forecast's state carries:
// volumes, volume claims, storage classes, CSI nodes and DRA's device
// classes and slices. A kind no plugin watches is left out; so are DRA's
// claims, which liveState.claims lists.
func forecastStores(w map[string]cache.SharedIndexInformer) []cache.Store {
	var out []cache.Store
	for _, kind := range []string{clusterevent.PersistentVolume, clusterevent.PersistentVolumeClaim,
		clusterevent.StorageClass, clusterevent.CSINode, clusterevent.DeviceClass,
		clusterevent.ResourceSlice} {
		if inf := w[kind]; inf != nil {
			out = append(out, inf.GetStore())
		}
	}
	return out
}

// templateInformer returns, when DRA's claims are watched (w), an
// informer of the ResourceClaimTemplates, which no plugin reads: the
// forecast makes from them the claims of pods the resourceclaim
// controller has not served yet, a what-if's pods above all; without
// them such a pod could never start in the forecast. Nil otherwise. It
// is not the shared factory's, whose sync the scheduler's start waits
// for: a role that does not grant the templates' list (kube-scheduler's
// own does not) must not hold up scheduling, only the forecasts' templates.
// A failed list or watch is logged once as a warning, then at debug
// level (the reflector retries for ever); a watch that ends as watches
// do (closed, or its resourceVersion expired) only at debug level.
func templateInformer(client kubernetes.Interface, w map[string]cache.SharedIndexInformer, log *slog.Logger) cache.SharedIndexInformer {
	if w[clusterevent.ResourceClaim] == nil {
		return nil
	}
	inf := resourceinformers.NewResourceClaimTemplateInformer(client, metav1.NamespaceAll, 0, cache.Indexers{})
	inf.SetWatchErrorHandlerWithContext(templateWatchErrors(log))
	return inf
}

// templateWatchErrors logs the templates' informer's errors (see
// templateInformer). Safe for concurrent use.
func templateWatchErrors(log *slog.Logger) cache.WatchErrorHandlerWithContext {
	var warned atomic.Bool
	return func(_ context.Context, _ *cache.Reflector, err error) {
		ended := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
		if !ended && !warned.Swap(true) {
			log.Warn("cannot list or watch ResourceClaimTemplates: what-ifs of pods that claim from one are refused until it can", "err", err)
			return
		}
		log.Debug("ResourceClaimTemplates: list or watch ended", "err", err)
	}
}

// hold runs f, which takes one lock once, and keeps the longest duration.
func (l *liveState) hold(longest *time.Duration, n *int, f func()) {
	t := l.clock.Now()
	f()
	*n++
	*longest = max(*longest, l.clock.Since(t))
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func compareKeys(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
