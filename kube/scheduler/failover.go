package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// FailureAnnotation holds, on a pod found unschedulable, the failure
// record that lets a new leader park it behind the plugins that rejected
// it instead of trying it again at once. docs/failover.md describes the
// design.
const FailureAnnotation = "schedq.io/unschedulable"

// FailureRecord is the value of FailureAnnotation (as JSON): the
// rejecting plugins, and fingerprints of the pod and of the cluster the
// scheduler saw when it tried the pod. Hashes are 16 hex digits; times are
// Unix seconds on the API server's clock.
type FailureRecord struct {
	// Plugins rejected the pod.
	Plugins []string `json:"plugins"`
	// Self hashes the pod's spec and labels as tried.
	Self string `json:"self"`
	// Nodes hashes the nodes' scheduling-relevant fields; NodesAt is the
	// latest change of a node the scheduler had seen; NodesWindow hashes
	// the nodes changed in the warmMargin seconds up to NodesAt.
	Nodes       string `json:"nodes"`
	NodesAt     int64  `json:"nodesAt"`
	NodesWindow string `json:"nodesWindow"`
	// Pods hashes the assigned pods the API server had confirmed; PodsAt
	// is the latest bind second among the pods seen.
	Pods   string `json:"pods"`
	PodsAt int64  `json:"podsAt"`
	// Nominated hashes the other pods' nominations the cycle counted
	// (those of the pod's priority or higher); empty if none.
	Nominated string `json:"nominated,omitempty"`
}

// record is a FailureRecord parsed.
type record struct {
	plugins []string
	self    uint64
	clusterState
}

// clusterState is the cluster part of a record, read from the cache.
type clusterState struct {
	nodes, nodesWin, pods uint64
	nodesAt, podsAt       int64
	// noms is the cycle's nominationsHash (the cache does not know it).
	noms uint64
}

// nominationHash is the hash of p's nomination to node; a set of
// nominations hashes to the XOR of theirs.
func nominationHash(p *v1.Pod, node string) uint64 {
	h := newHasher()
	h.add(string(p.UID), node)
	return uint64(h)
}

// stateLocked returns the cache's fingerprints. The caller holds the lock
// (View does).
func (c *Cache) stateLocked() clusterState {
	n, p := &c.fp.nodes, &c.fp.pods
	return clusterState{nodes: n.all, nodesAt: n.latest, nodesWin: n.xorRange(n.latest-warmMargin, n.latest),
		pods: p.all, podsAt: p.latest}
}

// report reports a failed attempt, with its failure record if plugins
// found it unschedulable (computed only if the reporter asks for it).
func (s *Scheduler) report(ctx context.Context, pod *v1.Pod, reason string, out Outcome) {
	var record func() FailureRecord
	if out.Result == Unschedulable && len(out.Plugins) > 0 {
		record = func() FailureRecord { return newFailureRecord(pod, out.Plugins, out.state) }
	}
	s.reporter.Unschedulable(ctx, pod, reason, out.Message, record)
}

func hex64(x uint64) string { return fmt.Sprintf("%016x", x) }

// newFailureRecord is the record of pod found unschedulable by plugins in
// the cluster described by st.
func newFailureRecord(pod *v1.Pod, plugins []string, st clusterState) FailureRecord {
	ps := slices.Clone(plugins)
	slices.Sort(ps)
	fr := FailureRecord{Plugins: ps, Self: hex64(selfHash(pod)),
		Nodes: hex64(st.nodes), NodesAt: st.nodesAt, NodesWindow: hex64(st.nodesWin),
		Pods: hex64(st.pods), PodsAt: st.podsAt}
	if st.noms != 0 {
		fr.Nominated = hex64(st.noms)
	}
	return fr
}

// parseRecord reads pod's failure record. ok is false if the pod has none,
// it does not parse, or the pod's PodScheduled condition no longer says
// Unschedulable (a later error, say, replaced it).
func parseRecord(pod *v1.Pod) (record, bool) {
	raw, ok := pod.Annotations[FailureAnnotation]
	if !ok || !unschedulable(pod) {
		return record{}, false
	}
	var fr FailureRecord
	if err := json.Unmarshal([]byte(raw), &fr); err != nil || len(fr.Plugins) == 0 {
		return record{}, false
	}
	r := record{plugins: fr.Plugins, clusterState: clusterState{nodesAt: fr.NodesAt, podsAt: fr.PodsAt}}
	for _, f := range []struct {
		s string
		x *uint64
	}{{fr.Self, &r.self}, {fr.Nodes, &r.nodes}, {fr.NodesWindow, &r.nodesWin}, {fr.Pods, &r.pods}, {fr.Nominated, &r.noms}} {
		if f.s == "" && f.x == &r.noms {
			continue // no nomination was counted
		}
		v, err := strconv.ParseUint(f.s, 16, 64)
		if err != nil {
			return record{}, false
		}
		*f.x = v
	}
	return r, true
}

func unschedulable(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable
		}
	}
	return false
}

// parkable returns the record of a pending pod that may be parked at once:
// it has a record, and its spec and labels are those the record was made
// with.
func parkable(pod *v1.Pod) (record, bool) {
	r, ok := parseRecord(pod)
	if !ok || r.self != selfHash(pod) {
		return record{}, false
	}
	return r, true
}

// warmMargin (seconds) is the window before a record's latest change in
// which a change made after the record may still carry an earlier
// timestamp: whole seconds, and API servers' clocks that disagree.
const warmMargin = 5

// EventWarmStartUnexplained wakes a parked pod whose cluster changed in a
// way the warm start cannot attribute to an object (a node deleted, say).
var EventWarmStartUnexplained = schedq.Event{Kind: schedq.AnyKind, Action: schedq.AnyAction, Label: "WarmStartUnexplained"}

// warmStart parks pods behind their records. Pods parked while the
// informers deliver their initial lists wait in pending until every list
// is in (finish); from then on each is reconciled as it is parked.
type warmStart struct {
	mu      sync.Mutex
	synced  bool
	pending []warmPod
	batch   *[]warmPod // parks during AddPods, reconciled together
	others  []string   // registered informers of other resources
	// seen are the other resources whose initial lists held an object:
	// those are replayed as every action; a kind with no object left
	// can only have lost objects a record saw (see replayed).
	seen map[string]bool
	// bound holds a bound member of each pod group that the pods'
	// initial list held, for regate: the gang gate counts them, but
	// their initial adds tell the queue nothing.
	bound map[string]*v1.Pod

	finishOnce sync.Once
}

type warmPod struct {
	key types.NamespacedName
	rec record
	// Computed by planLocked: the nodes changed since the record; the
	// nodes of the record's window did; no node explains the change; the
	// assigned pods of the record changed; the nominations counted
	// against it changed (set by reconcile).
	nodesDirty, windowDirty, unexplained, podsDirty, nomsDirty bool
}

// nodeChanged reports whether a node whose latest change is at may be
// one that changed since wp's record.
func (wp *warmPod) nodeChanged(at int64) bool {
	return wp.nodesDirty && (at > wp.rec.nodesAt || wp.windowDirty && at >= wp.rec.nodesAt-warmMargin)
}

// park queues pod as a failure behind its record's plugins, if it has a
// usable record, and reports whether it did.
func (w *warmStart) park(h *Handlers, pod *v1.Pod) bool {
	rec, ok := parkable(pod)
	if !ok || !h.wakeable(pod, rec.plugins) {
		return false
	}
	// Queued as if an attempt had failed so.
	err := h.Queue.Park(pod, schedq.Failure{RejectedBy: rec.plugins})
	if err != nil {
		h.check("park", pod, err)
		return errors.Is(err, schedq.ErrAlreadyQueued) || errors.Is(err, schedq.ErrClosed)
	}
	wp := warmPod{key: framework.Key(pod), rec: rec}
	w.mu.Lock()
	switch {
	case !w.synced:
		w.pending = append(w.pending, wp)
		w.mu.Unlock()
		return true
	case w.batch != nil:
		*w.batch = append(*w.batch, wp)
		w.mu.Unlock()
		return true
	}
	w.mu.Unlock()
	w.reconcile(h, []warmPod{wp})
	return true
}

// AddPods adds pods as AddPod does, but reconciles the ones it parks with
// the cluster once for all of them rather than once each: reconciling
// reads every change since the records, so a queue rebuilt after a term
// would otherwise cost the parked pods times the bound pods. Unlike
// AddPod it does not take the pod events' lock (see Cache): a queue
// rebuild calls it holding the switch queue's lock, which a pod handler
// holding the events' lock may be waiting for.
//
// mayPark, if not nil, says which pods the warm start may park behind
// their records: a rebuild parks only the pods the queue it replaces held
// parked, since a pod that queue had woken or tried since its record was
// woken by a change the record's fingerprints may not show.
func (h *Handlers) AddPods(pods []*v1.Pod, mayPark func(*v1.Pod) bool) {
	w := h.warm
	if w == nil {
		for _, p := range pods {
			h.addPod(p, false)
		}
		return
	}
	var batch []warmPod
	w.mu.Lock()
	w.batch = &batch
	w.mu.Unlock()
	for _, p := range pods {
		h.addPodParking(p, false, mayPark == nil || mayPark(p))
	}
	w.mu.Lock()
	w.batch = nil
	w.mu.Unlock()
	w.reconcile(h, batch)
}

// wakeable reports whether events can wake pod, which the plugins
// rejected: each registered some (when the Hints are known), in pod's
// own profile (HintProfiles). O(plugins × profiles).
func (h *Handlers) wakeable(pod *v1.Pod, plugins []string) bool {
	if h.Hints == nil {
		return true
	}
	for _, p := range plugins {
		if len(h.Hints[p]) == 0 {
			return false
		}
		if profs, ok := h.HintProfiles[p]; ok && !slices.Contains(profs, pod.Spec.SchedulerName) {
			return false
		}
	}
	return true
}

// repark parks a pod that this queue holds in activeQ and never tried,
// when an update brings a new failure record (another replica, the
// leader, tried it): a standby's queue follows the leader's failures.
func (w *warmStart) repark(h *Handlers, oldPod, newPod *v1.Pod) bool {
	newRec, ok := parkable(newPod)
	if !ok || !h.wakeable(newPod, newRec.plugins) {
		return false
	}
	if oldRec, ok := parseRecord(oldPod); ok && slices.Equal(oldRec.plugins, newRec.plugins) &&
		oldRec.clusterState == newRec.clusterState {
		return false // not a new failure
	}
	key := framework.Key(newPod)
	if info, loc, found := h.Queue.Get(key); !found || loc != schedq.InActive || info.Attempts > 0 {
		return false
	}
	if err := h.Queue.Delete(key); err != nil {
		return false
	}
	if !w.park(h, newPod) {
		h.check("add", newPod, h.Queue.Add(newPod))
	}
	return true
}

// finish ends the initial lists: the pods parked so far are reconciled
// with the whole cluster, and later ones at once.
func (w *warmStart) finish(h *Handlers) {
	w.finishOnce.Do(func() {
		w.mu.Lock()
		w.synced = true
		pods := w.pending
		w.pending = nil
		w.mu.Unlock()
		dirty := w.reconcile(h, pods)
		w.regate(h)
		if len(pods) > 0 {
			h.log().Info("warm start: pods parked behind the plugins that rejected them",
				"parked", len(pods), "cluster changed since their failure", dirty)
		}
	})
}

// regate asks the gates again, once the initial lists are in, for the
// pods gated meanwhile. A gate may read a store that another kind's
// initial list fills (DynamicResources' PreEnqueue reads the claims; the
// gang gate the members' tally, which bound pods listed after a pending
// member complete): run as the pod was listed, it may not have seen an
// object listed after it, and the initial adds, which the warm start
// keeps from the queue, would not ask it again before the queue's
// periodic check of gated pods (5 minutes on). One move per kind the
// initial lists held, without an object, to the gated pods only, and one
// assigned pod's addition per pod group with bound members listed, with
// one of them, to that group's gated members only. O((kinds + groups) x
// gated pods).
func (w *warmStart) regate(h *Handlers) {
	w.mu.Lock()
	var kinds []string
	for _, r := range w.others {
		if w.seen[r] {
			kinds = append(kinds, r)
		}
	}
	groups := slices.Sorted(maps.Keys(w.bound))
	bound := w.bound
	w.bound = nil
	w.mu.Unlock()
	gated := func(info *schedq.Info[*v1.Pod]) bool { return info.GatedBy != "" }
	for _, r := range kinds {
		ev := clusterevent.New(r, clusterevent.Add)
		if err := h.Queue.Move(ev, nil, nil, gated); err != nil && !errors.Is(err, schedq.ErrClosed) {
			h.log().Warn("queue", "op", "warm regate", "event", ev.Label, "err", err)
		}
	}
	for _, g := range groups {
		ofGroup := func(info *schedq.Info[*v1.Pod]) bool {
			return info.GatedBy != "" && framework.GroupName(info.Item) == g
		}
		if err := h.Queue.Move(clusterevent.AssignedPodAdd, nil, bound[g], ofGroup); err != nil && !errors.Is(err, schedq.ErrClosed) {
			h.log().Warn("queue", "op", "warm regate", "event", clusterevent.AssignedPodAdd.Label, "podGroup", g, "err", err)
		}
	}
}

// listedBound records p, a bound pod of the pods' initial list, if it is
// a group member (see regate). Safe for concurrent use.
func (w *warmStart) listedBound(p *v1.Pod) {
	g := framework.GroupName(p)
	if g == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bound == nil {
		w.bound = map[string]*v1.Pod{}
	}
	w.bound[g] = p
}

// warmMove is one move request of a reconciliation, for the parked pods
// its match accepts.
type warmMove struct {
	ev    schedq.Event
	obj   any
	match func(wp *warmPod, queued *v1.Pod) bool
}

func always(*warmPod, *v1.Pod) bool { return true }

// listed records that the initial list of the other resource res held an
// object. Safe for concurrent use.
func (w *warmStart) listed(res string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	w.seen[res] = true
}

// replayed is the actions the reconciliation replays the other resource
// res as, one event each, without an object. Its objects may have been
// added, updated or deleted since a record, and a plugin may hear only
// one of those (VolumeBinding hears CSI drivers updated, NodeVolumeLimits
// volume attachments deleted); one event of all three would reach none of
// them, since an event's action must not exceed the registration's
// (clusterevent.Match). An initial list that held an object replays each
// action; an empty one a deletion only, since the objects a record saw
// may all be gone. The caller holds w.mu.
func (w *warmStart) replayed(res string) []schedq.Action {
	if w.seen[res] {
		return []schedq.Action{clusterevent.Add, clusterevent.Update, clusterevent.Delete}
	}
	return []schedq.Action{clusterevent.Delete}
}

// reconcile replays, for each of pods, the changes made since its record
// that its plugins may care about, through their hints. It returns how
// many pods had any.
func (w *warmStart) reconcile(h *Handlers, pods []warmPod) int {
	if len(pods) == 0 {
		return 0
	}
	var moves []warmMove
	h.Cache.View(func(framework.Snapshot) { moves = h.Cache.planLocked(pods, h.AffinityMatch, h.pluginHearsAssignedAdd) })
	w.mu.Lock()
	for _, r := range w.others {
		for _, a := range w.replayed(r) {
			moves = append(moves, warmMove{ev: clusterevent.New(r, a), match: always})
		}
	}
	w.mu.Unlock()
	if h.nominationsChanged(pods) {
		// As a nomination let go is told (freeNominatedRoom), without its pod.
		moves = append(moves, warmMove{ev: clusterevent.AssignedPodDelete, match: func(wp *warmPod, _ *v1.Pod) bool { return wp.nomsDirty }})
	}
	byKey := make(map[types.NamespacedName]*warmPod, len(pods))
	dirty := 0
	for i := range pods {
		byKey[pods[i].key] = &pods[i]
		if pods[i].nodesDirty || pods[i].podsDirty || pods[i].nomsDirty {
			dirty++
		}
	}
	for _, m := range moves {
		err := h.Queue.Move(m.ev, nil, m.obj, func(info *schedq.Info[*v1.Pod]) bool {
			wp := byKey[framework.Key(info.Item)]
			return wp != nil && m.match(wp, info.Item)
		})
		if err != nil && !errors.Is(err, schedq.ErrClosed) {
			h.log().Warn("queue", "op", "warm move", "event", m.ev.Label, "err", err)
		}
	}
	return dirty
}

// nominationsChanged sets nomsDirty on the pods whose record counted
// other nominations than the queue holds now (those of the pod's priority
// or higher but its own): a nomination let go, by a pod deleted while
// pending or bound elsewhere, frees room that neither fingerprint shows.
// It reports whether any pod's did. O(pods x nominated pods).
func (h *Handlers) nominationsChanged(pods []warmPod) bool {
	type nom struct {
		key  types.NamespacedName
		prio int32
		hash uint64
	}
	var noms []nom
	for _, node := range h.Queue.NominatedTargets() {
		for _, p := range h.Queue.Nominated(node) {
			noms = append(noms, nom{framework.Key(p), framework.Priority(p), nominationHash(p, node)})
		}
	}
	anyDirty := false
	for i := range pods {
		wp := &pods[i]
		info, _, found := h.Queue.Get(wp.key)
		if !found {
			continue
		}
		prio, cur := framework.Priority(info.Item), uint64(0)
		for _, n := range noms {
			if n.prio >= prio && n.key != wp.key {
				cur ^= n.hash
			}
		}
		wp.nomsDirty = cur != wp.rec.noms
		anyDirty = anyDirty || wp.nomsDirty
	}
	return anyDirty
}

// planLocked compares each record with the cache and returns the moves
// that replay what changed since: nodes changed since as NodeAdd, a
// change among the pods assigned then as an assigned pod deleted and
// updated (without objects: the hints then queue the pod), pods bound
// since as AssignedPodAdd (if affinity is set, to the pods whose affinity
// they satisfy and to those a plugin of whose record hears the event).
// The caller holds the lock.
func (c *Cache) planLocked(pods []warmPod, affinity func(queued, assigned *v1.Pod, ns labels.Set) bool, hears func(plugin string) bool) []warmMove {
	nodes, assigned := &c.fp.nodes, &c.fp.pods
	latest := nodes.latestNow()
	firstNode, firstPod := int64(math.MaxInt64), int64(math.MaxInt64)
	var anyPods, anyUnexplained bool
	for i := range pods {
		wp := &pods[i]
		r := &wp.rec
		wp.nodesDirty = r.nodes != nodes.all
		wp.windowDirty = nodes.xorRange(r.nodesAt-warmMargin, r.nodesAt) != r.nodesWin
		wp.unexplained = wp.nodesDirty && !wp.nodeChanged(latest)
		wp.podsDirty = assigned.upTo(r.podsAt) != r.pods
		switch {
		case wp.unexplained:
			anyUnexplained = true
		case wp.nodesDirty && wp.windowDirty:
			firstNode = min(firstNode, r.nodesAt-warmMargin)
		case wp.nodesDirty:
			firstNode = min(firstNode, r.nodesAt+1)
		}
		anyPods = anyPods || wp.podsDirty
		firstPod = min(firstPod, r.podsAt-warmMargin)
	}
	var moves []warmMove
	changed := nodes.since(firstNode) // cheap when nothing changed: firstNode is then the far future
	slices.Sort(changed)
	for _, name := range changed {
		e := nodes.entries[name]
		at := e.at
		moves = append(moves, warmMove{ev: clusterevent.NodeAdd, obj: e.obj,
			match: func(wp *warmPod, _ *v1.Pod) bool { return wp.nodeChanged(at) }})
	}
	if anyUnexplained {
		moves = append(moves, warmMove{ev: EventWarmStartUnexplained, match: func(wp *warmPod, _ *v1.Pod) bool { return wp.unexplained }})
	}
	if anyPods {
		podsDirty := func(wp *warmPod, _ *v1.Pod) bool { return wp.podsDirty }
		moves = append(moves,
			warmMove{ev: clusterevent.AssignedPodDelete, match: podsDirty},
			warmMove{ev: clusterevent.New(clusterevent.AssignedPod, clusterevent.UpdatePodLabel|clusterevent.UpdatePodScaleDown), match: podsDirty})
	}
	since := assigned.since(firstPod)
	slices.SortFunc(since, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	for _, key := range since {
		e := assigned.entries[key]
		ap, at, ns := e.obj.(*v1.Pod), e.at, c.namespaces[key.Namespace]
		moves = append(moves, warmMove{ev: clusterevent.AssignedPodAdd, obj: ap, match: func(wp *warmPod, queued *v1.Pod) bool {
			return at >= wp.rec.podsAt-warmMargin &&
				(affinity == nil || affinity(queued, ap, ns) || slices.ContainsFunc(wp.rec.plugins, hears))
		}})
	}
	return moves
}
