package sim

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
)

const schedulerName = SchedulerName

// SchedulerName is the name the simulated scheduler answers to: a pod of
// another schedulerName is not its own. A forecast of a live scheduler of
// another name gives its pods this one.
const SchedulerName = "schedq"

// epoch is virtual time zero: every run starts at the same instant.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Options control a run.
type Options struct {
	// Progress, if set, is called now and then with the virtual time, the
	// virtual end, and how many pods are bound out of how many arrived.
	Progress func(now, end time.Duration, bound, arrived int)
	// Status, if set, is called as often as Progress, with the pods
	// handled out of all the run will create (see Progress).
	Status func(Progress)
	// CheckInvariants runs the queue's invariant checker after every step
	// and checks that no pod is bound twice (checkBindOnce) and, after
	// every binding, that no node is over-committed (checkNode); the
	// first broken invariant fails the run (slow; for tests).
	CheckInvariants bool
	// Trace, if set, receives every queue operation in order.
	Trace func(Op)
	// Built, if set, is called once the run is built, before its first
	// step, with the longest virtual time it may run (a trace's end is
	// known by then); an error ends Run with it, before anything ran.
	Built func(end time.Duration) error
	// stop, if set, is asked before each step of the run (between two
	// steps nothing is half done): an error ends the run with it.
	stop func() error
	// cache, if set, is the scheduler's cache to start from (a forecast
	// base's, see ForecastBase) instead of an empty one.
	cache *scheduler.Cache
}

// event is something that happens at a virtual instant; seq keeps events
// of the same instant in the order they were planned.
type event struct {
	at  time.Time
	seq uint64
	fn  func()
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if !e[i].at.Equal(e[j].at) {
		return e[i].at.Before(e[j].at)
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// podStat follows one pod (one UID) through the run.
type podStat struct {
	key         types.NamespacedName
	priority    int32
	arrived     time.Time
	bound       time.Time
	attempts    int
	lastReasons string // the reason kinds of its last failure, without counts
	failed      bool
	lastMessage string
	bindingTo   string    // the node of its binding under way, if one is
	bindingDone time.Time // when that binding completes
	profile     string    // its profile's schedulerName, if the run has several
	ext         podExt
	place       place // where it is in the queue, and has been
}

// sim is one run.
type sim struct {
	sc    *Scenario
	o     Options
	now   time.Time
	end   time.Time
	queue events
	seq   uint64
	cl    *cluster
	core  *schedq.Core[types.NamespacedName, *v1.Pod]
	h     *scheduler.Handlers
	sched *scheduler.Scheduler
	// tieBreak is the source of the scheduler's Rand, which breaks ties
	// between equally scored nodes: a replay's forks carry its state
	// (ForecastState.tieBreak), so that a forecast breaks them as the
	// replay goes on to.
	tieBreak  *rand.PCG
	rec       *countingRecorder
	explained map[types.NamespacedName]schedq.Explanation[types.NamespacedName] // by explainAtEnd
	takenOver []string                                                          // the scheduler names whose pending snapshot pods the first profile places (takenOverBy)
	names     []string                                                          // the profiles' schedulerNames, in the file's order, if several (profiles.go)
	busyUntil time.Time

	ticked         bool                 // the queue's flush schedule is anchored
	popFromBackoff bool                 // the queue's Pop takes from backoffQ
	violation      error                // the first broken invariant, in checked runs
	binding        map[types.UID]string // in checked runs: the pods being bound, and where

	stats    map[types.UID]*podStat
	order    []*podStat // arrival order
	wasted   int
	attempts int
	binds    int // bindings under way
	planned  int // arrivals and cluster events still to come
	evicted  int // pods recreated after their node was removed
	// taintEvicted counts the pods recreated after a NoExecute taint
	// evicted them (evictIntolerant).
	taintEvicted int
	pre          *preemptions // nil: preemption off (preemption.go)
	series       []Sample
	peak         schedq.Counts          // exact, updated after every queue operation
	instant      schedq.Counts          // the largest sizes of the current instant
	pl           places                 // where each pod is, and has been (places.go)
	x            extras                 // lifetimes, inputs and allocation (inputs.go)
	build        buildProgress          // while the cluster is built (progress.go)
	fw           *profile.Framework     // the first of fws, whose informers the objects go to
	fws          []*profile.Framework   // kube-scheduler's, one per profile (upstream.go)
	obj          objects                // the objects its plugins read (upstream.go)
	gates        *scheduler.GateReasons // why fws' PreEnqueue plugins hold a pod back, made at the first report of one
}

// Run runs a scenario to its end and returns the report.
func Run(sc *Scenario, o Options) (*Report, error) {
	wallStart := time.Now()
	s, err := newSim(sc, o)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if o.Built != nil {
		if err := o.Built(s.end.Sub(epoch)); err != nil {
			return nil, err
		}
	}
	if err := s.loop(); err != nil {
		return nil, err
	}
	r := s.report()
	r.Wall = &WallClock{Seconds: time.Since(wallStart).Seconds()}
	if r.Wall.Seconds > 0 {
		r.Wall.CyclesPerSecond = float64(s.attempts) / r.Wall.Seconds
	}
	return r, nil
}

func newSim(sc *Scenario, o Options) (*sim, error) {
	sc, err := sc.withConfigFile()
	if err != nil {
		return nil, err
	}
	s := &sim{sc: sc, o: o, now: epoch, cl: newCluster(), stats: map[types.UID]*podStat{}, rec: newCountingRecorder(), pl: newPlaces()}
	s.rec.left = s.stayEnded
	dur := sc.Duration
	if dur == 0 {
		dur = defaultDuration
	}
	s.end = epoch.Add(dur)

	s.newGPUDevices()
	cfg := s.queueConfig()
	q := sc.Queue
	fws, err := s.newFrameworks(context.Background(), &cfg)
	if err != nil {
		return nil, err
	}
	s.fw, s.fws = fws[0], fws
	cache := o.cache
	if cache == nil {
		cache = scheduler.NewCache()
	}
	scheduler.EquipQueue(&cfg, cache, q.WakeBudget == nil || *q.WakeBudget, s.fws...) // as the scheduler's
	core, err := schedq.NewCore(cfg)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	s.core = core
	qv := coreQueue{c: core, s: s}
	s.h = scheduler.NewHandlers(qv, cache, schedulerName, cfg)
	s.h.Profiles = s.names
	s.tieBreak = rand.NewPCG(sc.Seed, sc.Seed^0x5eed)
	so := scheduler.Options{
		PercentageOfNodesToScore: sc.Scheduler.PercentageOfNodesToScore,
		Rand:                     rand.New(s.tieBreak),
		Now:                      func() time.Time { return s.now },
		Logger:                   discardLogger,
		Profiles:                 s.fws,
		SyncPreBind:              true,
	}
	s.sched, err = scheduler.New(qv, cache, binder{s}, reporter{s}, so)
	if err != nil {
		return nil, err
	}
	features, err := s.features()
	if err != nil {
		return nil, err
	}
	if err := s.sched.Enable(features); err != nil {
		return nil, err
	}
	s.build = buildProgress{total: sc.toBuild()}
	if err := s.plan(); err != nil {
		return nil, err
	}
	s.build.over = true
	return s, nil
}

// queueConfig is the queue's configuration as the scenario's queue
// settings give it, with the run's recorder and, if asked, the invariant
// checker (the first violation kept, with its virtual time). The
// frameworks' hints and the wake budget are added after.
func (s *sim) queueConfig() schedq.Config[types.NamespacedName, *v1.Pod] {
	cfg := scheduler.QueueConfig()
	q := s.sc.Queue
	if q.backoffOff() {
		cfg.DisableBackoff = true
	} else {
		cfg.InitialBackoff, cfg.MaxBackoff = q.InitialBackoff, deref(q.MaxBackoff)
	}
	cfg.MaxInUnschedulable = q.MaxInUnschedulable
	cfg.FlushBackoffInterval, cfg.FlushUnschedulableInterval = q.FlushBackoffInterval, q.FlushUnschedulableInterval
	if s.o.CheckInvariants {
		cfg.CheckInvariants = func(err error) {
			if s.violation == nil {
				s.violation = fmt.Errorf("at %v: %w", s.now.Sub(epoch), err)
			}
		}
	}
	cfg.DisablePopFromBackoff = q.PopFromBackoff != nil && !*q.PopFromBackoff
	cfg.DisableQueueingHints = q.QueueingHints != nil && !*q.QueueingHints
	s.popFromBackoff = !cfg.DisablePopFromBackoff
	cfg.Recorder = s.rec
	cfg.Fairness = q.fairness()
	return cfg
}

// plan creates the scenario's objects and nodes and plans its pods'
// arrivals, its events and its inputs (trace, snapshot).
func (s *sim) plan() error {
	sc := s.sc
	s.createObjects(sc.Objects)
	for _, g := range sc.Nodes {
		s.addNodes(g)
	}
	for i := range sc.Pods {
		s.planArrivals(&sc.Pods[i])
	}
	for i := range sc.Events {
		e := sc.Events[i]
		s.planned++
		s.at(epoch.Add(e.At), func() { s.planned--; s.apply(e) })
	}
	return s.loadInputs()
}

// newGPUDevices makes the device model that the framework's GPUDevices
// plugin runs (gpu_framework.go), in a replay of the device model.
func (s *sim) newGPUDevices() {
	if s.sc.gpuMode() == gpuModeDevice {
		s.x.gpu = newGPUDevices(s.sc)
	}
}

// at plans fn at t.
func (s *sim) at(t time.Time, fn func()) {
	s.seq++
	heap.Push(&s.queue, event{at: t, seq: s.seq, fn: fn})
}

func (s *sim) planArrivals(g *PodGroup) {
	for i := range g.Count {
		t := epoch.Add(g.Arrival.At)
		if g.Arrival.Rate > 0 {
			t = t.Add(time.Duration(float64(i) / g.Arrival.Rate * float64(time.Second)))
		}
		s.planned++
		s.buildStep()
		s.at(t, func() {
			s.planned--
			p := s.cl.makePod(g, i)
			s.claimGPUs(g, p)
			s.gangMember(g, i, p)
			s.cl.podGroups[g.Name] = append(s.cl.podGroups[g.Name], framework.Key(p))
			s.arrive(p)
		})
	}
}

// arrive creates a pod. Its key must already be in its group's list: a
// new pod's is added as it is made, a recreated pod keeps its name.
func (s *sim) arrive(p *v1.Pod) {
	key := framework.Key(p)
	s.cl.pods[key] = p
	st := &podStat{key: key, arrived: s.now, priority: framework.Priority(p)}
	if s.names != nil {
		st.profile = p.Spec.SchedulerName
	}
	s.stats[p.UID] = st
	s.order = append(s.order, st)
	s.pl.add(key, st, p.Annotations[gangAnnotation] != "")
	s.x.alloc.podArrived(s.now, p)
	if len(p.Spec.ResourceClaims) > 0 {
		s.makeClaims(p)
	}
	s.h.AddPod(p)
}

func (s *sim) addNodes(g NodeGroup) {
	for _, n := range s.cl.makeNodes(g) {
		s.cl.nodes[n.Name] = n
		s.cl.nodeGroups[g.Name] = append(s.cl.nodeGroups[g.Name], n.Name)
		s.x.alloc.nodeAdded(s.now, n)
		s.h.AddNode(n)
		s.buildStep()
	}
}

// loop advances virtual time until the scenario is done.
func (s *sim) loop() error {
	ctx := context.Background()
	lastProgress := time.Now()
	for steps := 0; ; steps++ {
		if s.o.stop != nil {
			if err := s.o.stop(); err != nil {
				return err
			}
		}
		// Everything planned for now happens first.
		for len(s.queue) > 0 && !s.queue[0].at.After(s.now) {
			heap.Pop(&s.queue).(event).fn()
		}
		if s.tickDue() {
			s.trace(Op{Kind: "tick"})
		}
		s.core.Tick(s.now) // flushes what is due; cheap when nothing is
		s.settle(types.NamespacedName{}, false)
		popped := false
		if !s.now.Before(s.busyUntil) {
			if a, ok := s.core.Pop(s.now); ok {
				s.settleAttempt(a)
				s.trace(Op{Kind: "pop", Pod: a.Item, Cycle: a.Cycle, Group: a.Group})
				s.attempt(ctx, a)
				popped = true
			}
		}
		s.sample()
		if err := s.checkGangs(); err != nil {
			return err
		}
		if s.violation != nil {
			return s.violation
		}
		if s.o.Progress != nil && steps%256 == 0 && time.Since(lastProgress) > 100*time.Millisecond {
			lastProgress = time.Now()
			s.o.Progress(s.now.Sub(epoch), s.end.Sub(epoch), s.bound(), len(s.order))
		}

		// What happens next, and when.
		c := s.core.Counts()
		next := s.end
		if len(s.queue) > 0 {
			next = earliest(next, s.queue[0].at)
		}
		busy := s.now.Before(s.busyUntil)
		if popped {
			if !busy {
				continue // try the next pod at the same instant's end
			}
			next = earliest(next, s.busyUntil)
		} else if busy && s.poppable() {
			next = earliest(next, s.busyUntil)
		}
		idle := len(s.queue) == 0 && s.binds == 0 && c.Backoff == 0 && c.InFlight == 0 && !s.poppable()
		if idle {
			// Only parked pods are left (or none), and no event will come.
			break
		}
		if d, ok := s.core.NextDeadline(); ok {
			next = earliest(next, d)
		}
		if !next.Before(s.end) && !s.now.Before(s.end) {
			break
		}
		if !next.After(s.now) {
			next = s.now.Add(time.Nanosecond)
		}
		s.now = next
	}
	if s.o.Progress != nil {
		s.o.Progress(s.now.Sub(epoch), s.end.Sub(epoch), s.bound(), len(s.order))
	}
	return nil
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// tickDue reports whether the queue's Tick has work now, for the trace:
// the queue's own NextDeadline has come, or this is the very first step,
// which anchors its flush schedule at the epoch.
func (s *sim) tickDue() bool {
	if !s.ticked {
		s.ticked = true
		return true
	}
	d, ok := s.core.NextDeadline()
	return ok && !s.now.Before(d)
}

// poppable reports whether a Pop would return a pod (the queue says).
func (s *sim) poppable() bool { return s.core.Poppable() }

// attempt runs one scheduling cycle at now.
func (s *sim) attempt(ctx context.Context, info scheduler.Attempt) {
	s.forgetCalls()
	if info.Group != "" {
		s.groupAttempt(ctx, info)
		return
	}
	s.attempts++
	st := s.stats[info.Item.UID]
	if st != nil {
		st.attempts++
		s.onAttempt(st, info.Item)
	}
	cost := s.sc.Scheduler.AttemptCost
	if cost == 0 {
		cost = 5 * time.Millisecond
	}
	s.busyUntil = s.now.Add(cost)
	if m := s.x.gpuDRA; m != nil {
		defer m.attemptEnded()
	}
	out := s.sched.ScheduleOne(ctx, info)
	if out.Result != scheduler.Scheduled && st != nil {
		// An attempt that fails for the same reasons as the pod's last
		// failure learned nothing: the cluster had not changed in any way
		// that matters to this pod.
		reasons := reasonKinds(out)
		if st.failed && st.lastReasons == reasons {
			s.wasted++
		}
		st.failed, st.lastReasons = true, reasons
	}
}

// reasonKinds is a failed attempt's reasons, as the scheduler gave them
// (Outcome.Reasons, without the counts of nodes), joined: "Insufficient
// cpu|node(s) had untolerated taint {a: b}". An error has none: its message
// stands for them.
func reasonKinds(out scheduler.Outcome) string {
	if len(out.Reasons) == 0 {
		return out.Message
	}
	return strings.Join(out.Reasons, "|")
}

func (s *sim) bound() int {
	n := 0
	for _, st := range s.order {
		if !st.bound.IsZero() {
			n++
		}
	}
	return n
}

// apply runs a timed cluster event.
func (s *sim) apply(e EventSpec) {
	switch {
	case e.AddNodes != nil:
		s.addNodes(*e.AddNodes)
	case e.RemoveNodes != nil:
		for _, name := range s.pick(s.cl.nodeGroups[e.RemoveNodes.Group], e.RemoveNodes.Count) {
			s.removeNode(name)
		}
	case e.TaintNodes != nil:
		taint := e.TaintNodes.Taint.taint()
		for _, name := range s.pick(s.cl.nodeGroups[e.TaintNodes.Group], e.TaintNodes.Count) {
			s.updateNode(name, func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, taint) })
			s.evictIntolerant(name, taint)
		}
	case e.UntaintNodes != nil:
		for _, name := range s.pick(s.cl.nodeGroups[e.UntaintNodes.Group], e.UntaintNodes.Count) {
			s.updateNode(name, func(n *v1.Node) {
				n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == e.UntaintNodes.Taint.Key })
			})
		}
	case e.DeletePods != nil:
		var bound []types.NamespacedName
		for _, k := range s.cl.podGroups[e.DeletePods.Group] {
			// Running pods: a victim terminating is on its way out.
			if p := s.cl.pods[k]; p != nil && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				bound = append(bound, k)
			}
		}
		for _, k := range firstN(bound, e.DeletePods.Count) {
			p := s.cl.pods[k]
			s.ended(p, endDeleted)
			delete(s.cl.pods, k)
			s.h.DeletePod(p)
		}
	case e.RemoveGates != nil:
		var gated []types.NamespacedName
		for _, k := range s.cl.podGroups[e.RemoveGates.Group] {
			if p := s.cl.pods[k]; p != nil && len(p.Spec.SchedulingGates) > 0 {
				gated = append(gated, k)
			}
		}
		for _, k := range firstN(gated, e.RemoveGates.Count) {
			old := s.cl.pods[k]
			nw := old.DeepCopy()
			nw.Spec.SchedulingGates = nil
			s.cl.pods[k] = nw
			s.h.UpdatePod(old, nw)
		}
	case e.CreateObjects != nil:
		s.createObjects(e.CreateObjects)
	case e.DeleteObjects != nil:
		s.deleteObjects(e.DeleteObjects)
	}
}

// pick returns the first count existing names (all for 0).
func (s *sim) pick(names []string, count int) []string {
	var live []string
	for _, n := range names {
		if _, ok := s.cl.nodes[n]; ok {
			live = append(live, n)
		}
	}
	return firstN(live, count)
}

func firstN[T any](xs []T, n int) []T {
	if n == 0 || n > len(xs) {
		return xs
	}
	return xs[:n]
}

func (s *sim) updateNode(name string, change func(*v1.Node)) {
	old := s.cl.nodes[name]
	nw := old.DeepCopy()
	change(nw)
	s.cl.nodes[name] = nw
	s.h.UpdateNode(old, nw)
}

// removeNode deletes a node; its pods are deleted and, as their
// controllers would, created again as new pending pods. A preemption
// victim still terminating there leaves as removeVictim says.
func (s *sim) removeNode(name string) {
	n := s.cl.nodes[name]
	delete(s.cl.nodes, name)
	s.x.alloc.nodeRemoved(s.now, n)
	s.h.DeleteNode(n)
	var victims []*v1.Pod
	for _, k := range s.cl.podGroupsOrder() {
		if p := s.cl.pods[k]; p != nil && p.Spec.NodeName == name {
			victims = append(victims, p)
		}
	}
	for _, p := range victims {
		if p.DeletionTimestamp != nil && s.pre != nil {
			// A preemption victim terminating: its node's end ends its
			// grace period; it leaves as a victim, recreated or not as
			// the scenario says, never as a terminating copy.
			s.removeVictim(p)
			continue
		}
		s.recreate(p)
		s.evicted++
	}
}

// recreate deletes bound pod p and, as its controller would, creates it
// again as a new pending pod of the same name.
func (s *sim) recreate(p *v1.Pod) {
	s.ended(p, endDeleted)
	delete(s.cl.pods, framework.Key(p))
	s.h.DeletePod(p)
	again := p.DeepCopy()
	again.Spec.NodeName = ""
	again.UID = s.cl.nextUID()
	again.Status = v1.PodStatus{}
	s.arrive(again)
}

// podGroupsOrder lists every pod key in group order, for reproducible runs.
func (c *cluster) podGroupsOrder() []types.NamespacedName {
	names := make([]string, 0, len(c.podGroups))
	for g := range c.podGroups {
		names = append(names, g)
	}
	slices.Sort(names)
	var out []types.NamespacedName
	for _, g := range names {
		out = append(out, c.podGroups[g]...)
	}
	return out
}

// bindDone answers a binding, as the API server would.
func (s *sim) bindDone(pod *v1.Pod, node string, done func(error)) {
	key := framework.Key(pod)
	cur := s.cl.pods[key]
	// The API server's answers, of its kinds (the scheduler tells a pod
	// gone, 404, or bound or replaced meanwhile, 409, from a failure):
	// the binding's UID precondition and its checks that the pod is not
	// being deleted and not bound already fail as conflicts.
	switch {
	case cur == nil:
		s.gangBindFailed(pod)
		done(apierrors.NewNotFound(v1.Resource("pods"), pod.Name))
		return
	case cur.UID != pod.UID:
		s.gangBindFailed(pod)
		done(apierrors.NewConflict(v1.Resource("pods/binding"), pod.Name, fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", pod.UID, cur.UID)))
		return
	case cur.DeletionTimestamp != nil:
		// The API server binds no pod whose deletion has started, and a
		// deletionTimestamp is never removed; the scheduler has freed
		// its assumed room at the update that showed it.
		s.gangBindFailed(pod)
		done(apierrors.NewConflict(v1.Resource("pods/binding"), pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name)))
		return
	case cur.Spec.NodeName != "":
		s.gangBindFailed(pod)
		done(apierrors.NewConflict(v1.Resource("pods/binding"), pod.Name, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, cur.Spec.NodeName)))
		return
	case s.cl.nodes[node] == nil:
		// The API server would bind it (it does not check the node),
		// and the pod garbage collector delete it later; the simulator
		// refuses at once, and the pod is tried again.
		s.gangBindFailed(pod)
		done(fmt.Errorf("node %s not found", node))
		return
	}
	// The pod the scheduler gives is its assumed pod, cur with
	// spec.nodeName set, which its caches hold already: kept as the bound
	// pod, it is one object for the three. Otherwise (cur changed since),
	// a shallow copy: the simulator never changes a pod's maps or slices
	// in place (updates deep-copy first), so the bound pod shares them
	// with the pending one instead of doubling every pod's memory.
	nw := pod
	if pod.Spec.NodeName != node || !scheduler.SameButNode(cur, pod) {
		bound := *cur
		bound.Spec.NodeName = node
		nw = &bound
	}
	s.cl.pods[key] = nw
	if st := s.stats[pod.UID]; st != nil {
		st.bound = s.now
	}
	done(nil)
	s.h.UpdatePod(cur, nw)
	s.onBound(nw)
	s.gangBound(nw)
	s.checkNode(node)
}

// sample appends the sizes at the end of the current instant, and the
// largest sizes during it, to the series, unless nothing changed. In
// flight counts pods being bound too: the scheduler ends their attempt
// once the binding is answered.
func (s *sim) sample() {
	s.peaks()
	c, pk := s.core.Counts(), s.instant
	s.instant = c // the next instant starts from these sizes
	t := s.now.Sub(epoch)
	switch n := len(s.series); {
	case n > 0 && s.series[n-1].T == t:
		s.series[n-1].Counts = c
		s.series[n-1].Peak = maxCounts(s.series[n-1].Peak, pk)
	case n > 0 && s.series[n-1].Counts == c && pk == c:
	default:
		s.series = append(s.series, Sample{T: t, Counts: c, Peak: pk})
	}
}

// Sample is the size of each sub-queue at the end of a virtual instant,
// and (Peak) the largest size each reached during it.
type Sample struct {
	T time.Duration
	schedq.Counts
	Peak schedq.Counts
}

// defaultBindLatency is a write's latency when the scenario sets none.
const defaultBindLatency = 20 * time.Millisecond

// apiLatency is the virtual time a write to the API server takes (a
// binding, an eviction, a release): the scenario's bind latency.
func (s *sim) apiLatency() time.Duration {
	return orDefault(s.sc.Scheduler.BindLatency, defaultBindLatency)
}

// binder binds after the scenario's bind latency. It sends a binding at
// once: the scheduler's start guard runs first (scheduler.Started).
type binder struct{ s *sim }

func (b binder) Bind(_ context.Context, pod *v1.Pod, node string, start func() bool, done func(error)) {
	if !scheduler.Started(start, done) {
		return
	}
	lat := b.s.apiLatency()
	b.s.binds++
	b.s.checkBindOnce(pod, node)
	st := b.s.stats[pod.UID]
	if st != nil {
		st.bindingTo, st.bindingDone = node, b.s.now.Add(lat)
	}
	b.s.at(b.s.now.Add(lat), func() {
		b.s.binds--
		if st != nil {
			st.bindingTo = ""
		}
		delete(b.s.binding, pod.UID)
		b.s.bindDone(pod, node, done)
	})
}

// reporter keeps each pod's last failure message. It keeps no failure
// records (no leader follows) and emits no events: Scheduled and Warn do
// nothing (the scheduler's log says its warnings).
type reporter struct{ s *sim }

func (r reporter) Unschedulable(_ context.Context, pod *v1.Pod, _, message string, _ func() scheduler.FailureRecord) {
	if st := r.s.stats[pod.UID]; st != nil {
		st.lastMessage = message
	}
}

func (r reporter) Scheduled(context.Context, *v1.Pod, string) {}

func (r reporter) Warn(context.Context, runtime.Object, string, string) {}

// coreQueue is the scheduler's view of the queue's core, at the virtual
// now; it also traces every operation.
type coreQueue struct {
	c *schedq.Core[types.NamespacedName, *v1.Pod]
	s *sim
}

func (q coreQueue) Add(p *v1.Pod) error {
	if qp, ok := q.s.x.restoreAtAdd[framework.Key(p)]; ok {
		delete(q.s.x.restoreAtAdd, framework.Key(p))
		if qp.Location == schedq.InUnschedulable {
			q.s.trace(Op{Kind: "park", Pod: p, Failure: schedq.Failure{RejectedBy: qp.RejectedBy, WaitingOn: qp.WaitingOn}})
		} else {
			q.s.trace(Op{Kind: "add", Pod: p})
		}
		loc := qp.Location
		if loc == schedq.InGated {
			loc = schedq.InActive // its gate parks it again
		}
		err := q.c.Restore(p, loc, qp.Status, q.s.now)
		q.s.settle(framework.Key(p), true)
		return err
	}
	q.s.trace(Op{Kind: "add", Pod: p})
	q.c.Add(p, q.s.now)
	q.s.settle(framework.Key(p), true)
	return nil
}

func (q coreQueue) Update(o, n *v1.Pod) error {
	q.s.trace(Op{Kind: "update", Old: o, Pod: n})
	q.c.Update(o, n, q.s.now)
	q.s.settle(framework.Key(n), true)
	return nil
}

func (q coreQueue) Delete(k types.NamespacedName) error {
	err := q.c.Delete(k, q.s.now)
	q.s.settle(k, true)
	if err == nil {
		q.s.trace(Op{Kind: "delete", Key: k, Pod: q.s.cl.pods[k]})
	}
	return err
}

func (q coreQueue) Done(a scheduler.Attempt) error {
	q.s.trace(Op{Kind: "done", Key: a.Key, Cycle: a.Cycle, Group: a.Group})
	err := q.c.Done(a, q.s.now)
	q.s.settleAttempt(a)
	return err
}

func (q coreQueue) Requeue(a scheduler.Attempt, f schedq.Failure) error {
	q.s.trace(Op{Kind: "fail", Pod: a.Item, Cycle: a.Cycle, Failure: f, Group: a.Group})
	err := q.c.Requeue(a, f, q.s.now)
	q.s.settleAttempt(a)
	return err
}

func (q coreQueue) DoneMembers(a scheduler.Attempt, placed []int, message string, reasons ...string) error {
	q.s.trace(Op{Kind: "doneMembers", Cycle: a.Cycle, Group: a.Group, Placed: placed, Failure: schedq.Failure{Message: message, Reasons: reasons}})
	err := q.c.DoneMembers(a, placed, message, q.s.now, reasons...)
	q.s.settleAttempt(a)
	return err
}

func (q coreQueue) Park(p *v1.Pod, f schedq.Failure) error {
	q.s.trace(Op{Kind: "park", Pod: p, Failure: f})
	err := q.c.Park(p, f, q.s.now)
	q.s.settle(framework.Key(p), true)
	return err
}

func (q coreQueue) Move(ev schedq.Event, o, n any, m func(*schedq.Info[*v1.Pod]) bool) error {
	kind := "move"
	if m != nil {
		kind = "moveMatching"
	}
	q.s.trace(Op{Kind: kind, Event: ev, OldObj: o, NewObj: n})
	q.c.Move(ev, o, n, m, q.s.now)
	q.s.settle(types.NamespacedName{}, false)
	return nil
}

// Activate moves the pods to activeQ at once; the simulator's evictions
// never fail, so the scheduler does not call it there today.
func (q coreQueue) Activate(keys ...types.NamespacedName) error {
	for _, k := range keys {
		q.s.trace(Op{Kind: "activate", Key: k, Pod: q.s.cl.pods[k]})
	}
	q.c.Activate(keys, q.s.now)
	for _, k := range keys {
		q.s.settle(k, true)
	}
	return nil
}

func (q coreQueue) Get(k types.NamespacedName) (schedq.Info[*v1.Pod], schedq.Location, bool) {
	return q.c.Get(k)
}
