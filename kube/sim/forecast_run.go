package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/scheduler"
)

// forecastRun is one forward run of a state in a fresh simulator. The
// simulator's epoch stands for the state's Now.
type forecastRun struct {
	s     *sim
	st    *ForecastState
	o     *ForecastOptions
	asked []*v1.Pod // the state's pending pods, then any extra ones
	// earliest is just before the earliest queue timestamp of the
	// state's pods (earliestQueued), once read.
	earliest time.Time
	source   map[types.UID]string // of the pods that arrive in the run
	runSrc   []string             // of the running pods, by their index
	endsAt   []sourcedEnd         // running pods' planned ends, as they happen
	unknown  int
	left     int // asked pods not yet bound
	minOf    map[string]int
	members  map[string][]*v1.Pod // a gang's pending members, and those recreated by its release
	// bound counts a gang's members running at the copy and not released
	// since: they count towards its minCount.
	bound map[string]int
	// fired holds the running pods whose planned end came.
	fired   map[types.UID]bool
	isAsked map[types.UID]bool
	counted map[types.UID]bool
	// base, if not nil, lent the cache, which close gives back.
	base *ForecastBase
	// arrivalsEnd, if not zero, is where the assumed arrivals stopped
	// short of the horizon (MaxAssumedArrivals).
	arrivalsEnd time.Duration
}

type sourcedEnd struct {
	at     time.Time
	source string
}

// newForecastRun builds the run: the state's nodes, running pods with
// their ends planned, PodGroups, then the pending pods and extra in order.
// With o.Base, the cluster comes from the base, taken until close.
func newForecastRun(sc *Scenario, st *ForecastState, o *ForecastOptions, extra []*v1.Pod) (*forecastRun, error) {
	r, err := buildForecastRun(sc, st, o, extra)
	if err != nil && r != nil {
		r.close()
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// close stops the run's framework and gives the base back, if the run
// took one. Idempotent.
func (r *forecastRun) close() { r.release(false) }

// release stops the run's framework (its plugins, and the metrics
// recorder's goroutine that kube-scheduler's framework starts: without
// this, every forecast of a live scheduler left one running) and gives
// the base back, if the run took one; broken (the run panicked, its
// writes to the cache may be half done) has the base built again at its
// next run instead of rolled back. Idempotent.
func (r *forecastRun) release(broken bool) {
	if r.s != nil {
		r.s.close()
	}
	if r.base != nil {
		r.base.give(broken)
		r.base = nil
	}
}

// closeOnPanic, deferred by whoever runs r, gives the base back broken
// if the run panicked, and panics again: the caller's panic is not
// swallowed, and the base does not stay taken by a run that is gone.
// Called with recover() from the deferred function itself.
func (r *forecastRun) closeOnPanic(p any) {
	if p == nil {
		r.close()
		return
	}
	r.release(true)
	panic(p)
}

func buildForecastRun(sc *Scenario, st *ForecastState, o *ForecastOptions, extra []*v1.Pod) (*forecastRun, error) {
	fsc := forkedScenario(sc, o.Horizon)
	o.History = o.historyFor(st, extra)
	r := &forecastRun{st: st, o: o, source: map[types.UID]string{}, minOf: map[string]int{},
		members: map[string][]*v1.Pod{}, bound: map[string]int{}, fired: map[types.UID]bool{},
		isAsked: map[types.UID]bool{}, counted: map[types.UID]bool{}}
	so := Options{Trace: r.observe}
	if o.Context != nil {
		so.stop = o.Context.Err
	}
	defer func() {
		if p := recover(); p != nil { // the base, if taken, is given back
			r.closeOnPanic(p)
		}
	}()
	if b := o.Base; b != nil {
		if !b.of(st) {
			return nil, errors.New("forecast: the base given is not of this state")
		}
		c, err := b.take()
		if err != nil {
			return nil, err
		}
		r.base, so.cache = b, c
	}
	s, err := newSim(fsc, so)
	if err != nil {
		return r, err
	}
	r.s = s
	if err := r.resume(); err != nil {
		return r, err
	}
	if err := r.addCluster(); err != nil {
		return r, err
	}
	if err := r.addPods(extra); err != nil {
		return r, err
	}
	r.left = len(r.asked)
	if r.left == 0 {
		s.end = s.now // nothing to forecast: the run ends at once
	}
	if o.Arrivals {
		r.planArrivals()
	}
	return r, nil
}

// forkedScenario returns a copy of sc for a forecast of the given
// horizon: no pods, events, trace or snapshot of its own (the state
// brings them), and the replay's GPU model kept.
func forkedScenario(sc *Scenario, horizon time.Duration) *Scenario {
	fsc := *sc
	switch m := sc.gpuMode(); m {
	case gpuModeDevice:
		// The replay's GPUs stay devices: the running pods' GPUs are
		// placed again, best fit, as the device model places any pod it
		// has no record of.
		fsc.forkedGPU = m
	case gpuModeDRA:
		// The replay's claims are in the state's objects; its GPU policy
		// (GPUDevices' score, the devices listed fullest first) must
		// stay too, or the forecast would place by the profile's
		// default scores and DRA's first fit in the slices' order.
		fsc.forkedGPU = m
	}
	fsc.Pods, fsc.Events, fsc.Trace, fsc.Snapshot, fsc.Duration = nil, nil, nil, "", horizon
	return &fsc
}

// resume carries over where the state's scheduler was: its tie-breaks'
// source, the end of an attempt under way, the budgets, and a silent log.
func (r *forecastRun) resume() error {
	s, st := r.s, r.st
	if st.tieBreak != nil {
		if err := s.tieBreak.UnmarshalBinary(st.tieBreak); err != nil {
			return fmt.Errorf("forecast: the state's tie-breaks: %w", err)
		}
	}
	if st.busyUntil.After(st.Now) {
		s.busyUntil = epoch.Add(st.busyUntil.Sub(st.Now))
	}
	s.x.released = r.released
	s.x.budgets = st.Budgets // read-only: budgetsNow copies them
	// A forecast logs nothing: the live scheduler runs one every few
	// seconds, and its own log already says what the handlers would.
	s.h.Logger = slog.New(slog.DiscardHandler)
	return nil
}

// addCluster adds the state's namespaces, nodes and objects (a base, if
// taken, already holds the namespaces and nodes in its cache).
func (r *forecastRun) addCluster() error {
	s, st := r.s, r.st
	for _, ns := range st.Namespaces {
		if r.base == nil {
			s.h.Cache.SetNamespace(ns)
		}
		if err := s.namespaceToPlugins(ns); err != nil { // the run's own frameworks
			return fmt.Errorf("forecast: namespace %s: %w", ns.Name, err)
		}
	}
	for _, n := range st.Nodes {
		r.pace()
		s.cl.nodes[n.Name] = n
		if r.base == nil {
			s.h.AddNode(n)
		}
	}
	r.useGPUWorkload()
	return r.addObjects(st.Objects)
}

// addPods adds the state's running pods with their ends, its PodGroups,
// and the pods asked about: the pending ones, restored where the queue
// held them, then extra.
func (r *forecastRun) addPods(extra []*v1.Pod) error {
	s, st := r.s, r.st
	n := len(st.Running) + len(st.Pending) + len(extra)
	switch {
	case r.base != nil && len(s.cl.pods) == 0:
		s.cl.pods = maps.Clone(r.base.pods) // addRunning adds none
	case len(s.cl.pods) == 0:
		s.cl.pods = make(map[types.NamespacedName]*v1.Pod, n)
	}
	r.source = make(map[types.UID]string, len(st.Pending)+len(extra))
	r.runSrc = make([]string, len(st.Running))
	s.queue = slices.Grow(s.queue, len(st.Running))
	seen := uids{own: map[types.UID]bool{}}
	if r.base != nil {
		seen.base = r.base.uids
	}
	for i, rp := range st.Running {
		r.pace()
		if err := r.addRunning(i, rp, seen); err != nil {
			return err
		}
	}
	heap.Init(&s.queue) // the ends, appended by addRunning
	for _, pg := range st.PodGroups {
		// A PodGroup the queue refuses (no policy, or both) is left to
		// AddPodGroup, which reports it; its members wait, as live.
		if spec, err := scheduler.GroupSpecOf(pg); err == nil {
			r.minOf[scheduler.GroupKey(pg)] = spec.MinCount
		}
		s.h.AddPodGroup(pg)
	}
	r.asked = append(slices.Clip(st.Pending), extra...)
	for i, p := range r.asked {
		r.pace()
		if i < len(st.Pending) {
			r.restoreIfQueued(p)
		}
		if err := r.addPending(p, seen); err != nil {
			return err
		}
	}
	return nil
}

// uids are the UIDs of a state's pods seen so far: base, if set, the
// running pods' that a ForecastBase checked, then own.
type uids struct{ base, own map[types.UID]bool }

// add refuses an empty UID or one seen already. O(1).
func (u uids) add(p *v1.Pod) error {
	if p.UID == "" || u.base[p.UID] || u.own[p.UID] {
		return fmt.Errorf("pod %s: its UID %q is empty or not unique in the state", framework.Key(p), p.UID)
	}
	u.own[p.UID] = true
	return nil
}

// checkRunning refuses a running pod with an empty or repeated UID, or
// not on a node of the state (onNode false).
func checkRunning(p *v1.Pod, seen uids, onNode bool) error {
	if err := seen.add(p); err != nil {
		return err
	}
	if !onNode {
		return fmt.Errorf("pod %s runs on node %q, which is not in the state", framework.Key(p), p.Spec.NodeName)
	}
	return nil
}

// addRunning binds a running pod and plans its end at its estimate.
// Its end is appended to the simulator's events, which the caller then
// makes a heap again.
func (r *forecastRun) addRunning(i int, rp RunningPod, seen uids) error {
	s, p := r.s, rp.Pod
	key := framework.Key(p)
	if g := framework.GroupName(p); g != "" {
		r.bound[g]++
	}
	if s.x.gpu != nil && len(rp.GPUs) > 0 {
		s.x.gpu.assigned[p.UID] = slices.Clone(rp.GPUs) // the GPUs it holds
	}
	if r.base == nil { // else the base checked it, and its cache holds it
		if err := checkRunning(p, seen, s.cl.nodes[p.Spec.NodeName] != nil); err != nil {
			return err
		}
		s.cl.pods[key] = p
		s.h.AddPod(p)
	}
	if len(p.Spec.ResourceClaims) > 0 && !s.holdClaims(p) {
		return fmt.Errorf("forecast: %w", s.violation)
	}
	if r.o.noEnds {
		return nil
	}
	left, src := r.o.remaining(p, r.st.Now.Sub(rp.Started))
	if grace, ok := r.graceLeft(p); ok && (src == SourceUnknown || grace < left) {
		// Terminating: it leaves when its grace period ends, whatever
		// its runtime, and that end is no estimate.
		r.planLeave(p, grace)
		return nil
	}
	r.runSrc[i] = src
	if src == SourceUnknown {
		r.unknown++
		return nil
	}
	uid := p.UID
	s.seq++
	s.queue = append(s.queue, event{at: s.now.Add(left), seq: s.seq, fn: func() {
		cur := s.cl.pods[key]
		if cur == nil || cur.UID != uid {
			return // preempted meanwhile
		}
		r.fired[uid] = true
		r.endsAt = append(r.endsAt, sourcedEnd{s.now, src})
		if cur.DeletionTimestamp != nil {
			// A victim of the run in its grace period: its run ends
			// early, and it leaves as the victim it is.
			s.leaveTerminating(cur)
			return
		}
		s.ended(cur, endFinished)
		delete(s.cl.pods, key)
		s.h.DeletePod(cur)
	}})
	return nil
}

// graceLeft returns how much of its grace period terminating pod p has
// left at the state's instant (0 if none), and false if p is not
// terminating. The API server stamps a deletion with the end of the grace
// period (and sets deletionGracePeriodSeconds); the simulator's evictions
// stamp its start, the victim's grace period (preemptions.graceOf) before
// its end.
func (r *forecastRun) graceLeft(p *v1.Pod) (time.Duration, bool) {
	if p.DeletionTimestamp == nil {
		return 0, false
	}
	end := p.DeletionTimestamp.Time
	if p.DeletionGracePeriodSeconds == nil && r.s.pre != nil {
		end = end.Add(r.s.pre.graceOf(p))
	}
	return max(end.Sub(r.st.Now), 0), true
}

// planLeave plans terminating running pod p to leave after left, as a
// victim (leaveTerminating), if it is still there. Its end is in the
// simulator's events, which the caller then makes a heap again.
func (r *forecastRun) planLeave(p *v1.Pod, left time.Duration) {
	s, key, uid := r.s, framework.Key(p), p.UID
	s.seq++
	s.queue = append(s.queue, event{at: s.now.Add(left), seq: s.seq, fn: func() {
		if cur := s.cl.pods[key]; cur != nil && cur.UID == uid {
			s.leaveTerminating(cur)
		}
	}})
}

// leaveTerminating removes terminating pod p: as a victim (counted
// preempted, recreated if the scenario says so) when preemption is on,
// otherwise as deleted.
func (s *sim) leaveTerminating(p *v1.Pod) {
	if s.pre != nil {
		s.removeVictim(p)
		return
	}
	s.ended(p, endDeleted)
	delete(s.cl.pods, framework.Key(p))
	s.h.DeletePod(p)
}

// released notes that gang release deleted old and recreated it as
// again: a member running at the copy no longer counts towards its
// gang's minCount, and again is one of the members the gang waits for.
// A running pod has no stats; one that arrived in the run has.
func (r *forecastRun) released(old, again *v1.Pod) {
	g := framework.GroupName(old)
	if g == "" {
		return
	}
	if r.s.stats[old.UID] == nil {
		r.bound[g]--
	}
	r.members[g] = append(r.members[g], again)
}

// addPending adds a pending pod to the queue, with its runtime once bound.
func (r *forecastRun) addPending(p *v1.Pod, seen uids) error {
	if err := seen.add(p); err != nil {
		return err
	}
	if p.Spec.NodeName != "" {
		return fmt.Errorf("pod %s is bound to %s: a pending pod has no node", framework.Key(p), p.Spec.NodeName)
	}
	p = r.s.ownPod(p)
	if g := framework.GroupName(p); g != "" {
		r.members[g] = append(r.members[g], p)
	}
	r.isAsked[p.UID] = true
	r.setLifetime(p)
	if len(p.Spec.ResourceClaims) > 0 {
		// Its claims from templates may be made now and named in its
		// status, which must not reach the state's pod.
		c := *p
		c.Status.ResourceClaimStatuses = slices.Clip(c.Status.ResourceClaimStatuses)
		p = &c
	}
	r.s.arrive(p)
	return nil
}

// restoreIfQueued has the queue restore p, a pending pod of the state,
// when it arrives where the state's queue held it, with its history
// there (ForecastState.Queued), its times moved to the run's clock, if
// it is no group member. A pod the queue did not list (in flight at the
// copy) joins activeQ never tried, stamped as the earliest of the
// queue's pods, so that it goes first among its equals, as it went.
func (r *forecastRun) restoreIfQueued(p *v1.Pod) {
	if framework.GroupName(p) != "" {
		return
	}
	qp, ok := r.st.Queued[p.UID]
	if !ok {
		qp = QueuedPod{Location: schedq.InActive, Status: schedq.Status{Timestamp: r.earliestQueued()}}
	}
	if r.s.x.restoreAtAdd == nil {
		r.s.x.restoreAtAdd = map[types.NamespacedName]QueuedPod{}
	}
	for _, t := range []*time.Time{&qp.Timestamp, &qp.InitialAttemptTimestamp, &qp.BackoffExpiry} {
		if !t.IsZero() {
			*t = epoch.Add(t.Sub(r.st.Now))
		}
	}
	r.s.x.restoreAtAdd[framework.Key(p)] = qp
}

// earliestQueued is just before the earliest timestamp of the state's
// queued pods and its instant. O(pods) once.
func (r *forecastRun) earliestQueued() time.Time {
	if r.earliest.IsZero() {
		r.earliest = r.st.Now
		for _, qp := range r.st.Queued {
			if qp.Timestamp.Before(r.earliest) {
				r.earliest = qp.Timestamp
			}
		}
		r.earliest = r.earliest.Add(-time.Nanosecond)
	}
	return r.earliest
}

// useGPUWorkload gives the run's GPU policy the replay's typical
// workload, which FGD rates a placement against: without it FGD would
// choose other GPUs than in the replay.
func (r *forecastRun) useGPUWorkload() {
	w := r.st.gpuWorkload
	switch x := &r.s.x; {
	case w == nil:
	case x.gpu != nil:
		x.gpu.workload = w
	case x.gpuDRA != nil:
		x.gpuDRA.workload = w
	}
}

// addObjects creates copies of the state's volumes, claims and DRA
// objects, before any pending pod arrives, so that their claims exist.
// An object of another kind, or one listed twice, is refused. O(objects).
func (r *forecastRun) addObjects(objs []runtime.Object) error {
	seen := make(map[string]bool, len(objs))
	for _, obj := range objs {
		r.pace()
		if !isClusterObject(obj) {
			return fmt.Errorf("forecast: the state's object %T is not one of %s", obj, objectKinds)
		}
		key := objectKey(obj)
		if seen[key] {
			m := obj.(metav1.Object)
			return fmt.Errorf("forecast: the state lists %T %s/%s twice", obj, m.GetNamespace(), m.GetName())
		}
		seen[key] = true
		if !r.s.put(obj.DeepCopyObject()) {
			return fmt.Errorf("forecast: %w", r.s.violation)
		}
	}
	if !r.s.settleDeletedClaims() {
		return fmt.Errorf("forecast: %w", r.s.violation)
	}
	return nil
}

// setLifetime gives a pod its estimated runtime once bound.
func (r *forecastRun) setLifetime(p *v1.Pod) {
	d, src := r.o.remaining(p, 0)
	r.source[p.UID] = src
	if src == SourceUnknown {
		return
	}
	if r.s.x.traceLife == nil {
		r.s.x.traceLife = map[types.NamespacedName]time.Duration{}
	}
	r.s.x.traceLife[framework.Key(p)] = d
}

// pace calls ForecastOptions.Pace, if set: before each object the run
// builds and each operation of the queue.
func (r *forecastRun) pace() {
	if r.o.Pace != nil {
		r.o.Pace()
	}
}

// observe follows the queue's operations: once every asked pod is bound
// the run ends. It paces the run first (ForecastOptions.Pace). O(1) per
// operation, O(members) for a group's, the pace aside.
func (r *forecastRun) observe(op Op) {
	r.pace()
	if op.Kind != "done" || r.left == 0 {
		return
	}
	if op.Group != "" {
		for _, p := range r.members[op.Group] {
			r.count(p.UID)
		}
	} else if p := r.s.cl.pods[op.Key]; p != nil {
		r.count(p.UID)
	}
	if r.left == 0 {
		r.s.end = r.s.now
	}
}

// count notes that an asked pod is bound, once.
func (r *forecastRun) count(uid types.UID) {
	st := r.s.stats[uid]
	if !r.isAsked[uid] || r.counted[uid] || st == nil || st.bound.IsZero() {
		return
	}
	r.counted[uid] = true
	r.left--
}

// planArrivals repeats the state's recent arrivals, window after window,
// until the horizon or MaxAssumedArrivals.
func (r *forecastRun) planArrivals() {
	st, s := r.st, r.s
	if st.Window <= 0 || len(st.Recent) == 0 {
		return
	}
	n := 0
	for k := 0; time.Duration(k)*st.Window < r.o.Horizon; k++ {
		for _, a := range st.Recent {
			off := a.At.Sub(st.Now.Add(-st.Window)) + time.Duration(k)*st.Window
			if off < 0 || off >= r.o.Horizon {
				continue
			}
			if n == MaxAssumedArrivals {
				r.arrivalsEnd = off
				return
			}
			n++
			p := a.Pod.DeepCopy()
			p.Name = fmt.Sprintf("%s-fa%d", p.Name, n)
			p.UID = types.UID(fmt.Sprintf("forecast-arrival-%d", n))
			p.Spec.NodeName = ""
			p.Status = v1.PodStatus{}
			p = s.ownPod(p)
			s.at(s.now.Add(off), func() {
				r.setLifetime(p)
				s.arrive(p)
			})
		}
	}
}
