package sim

import (
	"math"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
)

// Replay runs a scenario (with its trace or snapshot) in virtual time and
// forks forecast states off it at chosen instants. Not safe for
// concurrent use.
type Replay struct {
	s    *sim
	pods map[types.UID]*v1.Pod // every pod that arrived
	// arrived lists the arrivals in order, for ForecastState.Recent.
	arrived []Arrival
	// Window is how far back Recent reaches (default one hour).
	Window time.Duration
	// end is the run's last instant, which Until moves s.end short of.
	end time.Time
}

// NewReplay prepares a run of sc.
func NewReplay(sc *Scenario) (*Replay, error) {
	r := &Replay{pods: map[types.UID]*v1.Pod{}, Window: time.Hour}
	s, err := newSim(sc, Options{Trace: r.observe})
	if err != nil {
		return nil, err
	}
	r.s, r.end = s, s.end
	return r, nil
}

// End returns the replay's last virtual instant and, for a message, what
// sets it: the scenario's duration, else its trace's last pod end, else
// the default duration (15m). See Scenario.KnownEnd.
func (r *Replay) End() (time.Duration, string) {
	if _, why, ok := r.s.sc.KnownEnd(); ok {
		return r.end.Sub(epoch), why
	}
	return r.end.Sub(epoch), "the trace's last pod end"
}

func (r *Replay) observe(op Op) {
	if op.Kind == "add" && op.Pod != nil && r.pods[op.Pod.UID] == nil {
		r.pods[op.Pod.UID] = op.Pod
		r.arrived = append(r.arrived, Arrival{Pod: op.Pod, At: r.s.now})
	}
}

// Epoch is the replay's virtual time zero.
func (r *Replay) Epoch() time.Time { return epoch }

// At calls fn with the state at virtual time t, once the events planned
// for t have happened and before the scheduler's next attempt, when a
// later Until or Run reaches t: never for a t past End.
func (r *Replay) At(t time.Duration, fn func(*ForecastState)) {
	r.s.at(epoch.Add(t), func() { fn(r.State()) })
}

// Until runs the replay to virtual time t (or its end, if sooner).
func (r *Replay) Until(t time.Duration) error {
	r.s.end = earliest(r.end, epoch.Add(t))
	if err := r.s.loop(); err != nil {
		return err
	}
	r.s.now = r.s.end
	return nil
}

// Run runs the replay to its end, then stops its framework (Started,
// Known and History read what the run recorded).
func (r *Replay) Run() error {
	defer r.s.close()
	return r.s.loop()
}

// Started returns when the pod with uid was bound, if it was.
func (r *Replay) Started(uid types.UID) (time.Time, bool) {
	st := r.s.stats[uid]
	if st == nil || st.bound.IsZero() {
		return time.Time{}, false
	}
	return st.bound, true
}

// Known returns the runtime the replay gives p, if any: the trace's, or
// the one drawn for its scenario group's lifetime. Only a pod the replay
// made has one: p must carry the UID the replay gave it, with its name;
// a pod made elsewhere (added by a what-if) named as one of the replay's
// (finished, or not arrived yet) has none, whatever its name and labels.
func (r *Replay) Known(p *v1.Pod) (time.Duration, bool) {
	if st := r.s.stats[p.UID]; st == nil || st.key != framework.Key(p) {
		return 0, false
	}
	return r.s.lifetime(p)
}

// History returns the runtimes of the pods that finished by now, filed
// by labels (see History), with those of the pods deleted or preempted
// while running as censored (History.ObserveRunning): they would have
// run longer. A forecast adds the pods still running. O(n log n).
func (r *Replay) History(labels ...string) *History {
	h := NewHistory(labels...)
	uids := make([]types.UID, 0, len(r.s.stats))
	for uid, st := range r.s.stats {
		if st.ext.end != "" && st.ext.end != endWithdrawn && !st.bound.IsZero() && r.pods[uid] != nil {
			uids = append(uids, uid)
		}
	}
	slices.Sort(uids)
	for _, uid := range uids {
		st := r.s.stats[uid]
		if d := st.ext.ended.Sub(st.bound); st.ext.end == endFinished {
			h.Observe(r.pods[uid], d)
		} else if d > 0 {
			h.ObserveRunning(r.pods[uid], d)
		}
	}
	return h
}

// State copies the state the scheduler holds now. O(n log n) in pods and
// nodes; the objects are shared, read-only.
func (r *Replay) State() *ForecastState {
	s := r.s
	// The recent arrivals span what was replayed, at most the Window:
	// before the replay's start nothing arrived, and a forecast repeats
	// them at the rate seen.
	st := &ForecastState{Now: s.now, Window: min(r.Window, s.now.Sub(epoch))}
	switch {
	case s.x.gpu != nil:
		st.gpuWorkload = s.x.gpu.workload
	case s.x.gpuDRA != nil:
		st.gpuWorkload = s.x.gpuDRA.workload
	}
	for _, g := range sortedKeys(s.cl.nodeGroups) {
		for _, name := range s.cl.nodeGroups[g] {
			if n := s.cl.nodes[name]; n != nil {
				st.Nodes = append(st.Nodes, n)
			}
		}
	}
	nss := map[string]bool{"default": true}
	for name := range s.x.namespaces { // a snapshot's, with their labels
		nss[name] = true
	}
	unbound := map[string]*v1.Pod{}
	for _, k := range sortedPodKeys(s.cl.pods) {
		p := s.cl.pods[k]
		nss[p.Namespace] = true
		switch b := s.stats[p.UID]; {
		case p.Spec.NodeName == "" && b != nil && b.bindingTo != "":
			// Its binding is under way: it runs from when the binding
			// completes, as the live scheduler's copy has a pod it
			// assumed run, not tried again.
			c := *p
			c.Spec.NodeName = b.bindingTo
			rp := RunningPod{Pod: &c, Started: b.bindingDone}
			if s.x.gpu != nil {
				rp.GPUs = slices.Clone(s.x.gpu.assigned[p.UID])
			}
			st.Running = append(st.Running, rp)
		case p.Spec.NodeName == "" && p.DeletionTimestamp == nil:
			unbound[k.String()] = p
		case p.Spec.NodeName != "":
			rp := RunningPod{Pod: p, Started: r.started(p)}
			if s.x.gpu != nil {
				rp.GPUs = slices.Clone(s.x.gpu.assigned[p.UID])
			}
			st.Running = append(st.Running, rp)
		}
	}
	for _, name := range sortedKeys(nss) {
		ns := s.x.namespaces[name]
		if ns == nil {
			ns = &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		}
		st.Namespaces = append(st.Namespaces, ns)
	}
	for _, k := range sortedKeys(s.obj.byKey) {
		st.Objects = append(st.Objects, s.obj.byKey[k])
	}
	st.Budgets = slices.Clip(s.x.budgets)
	st.Pending, st.Queued = r.pendingOrder(unbound)
	st.tieBreak, _ = s.tieBreak.MarshalBinary() // a PCG's never fails
	if s.busyUntil.After(s.now) {
		st.busyUntil = s.busyUntil
	}
	st.PodGroups = r.podGroups(unbound)
	for i := len(r.arrived) - 1; i >= 0 && s.now.Sub(r.arrived[i].At) < r.Window; i-- {
		st.Recent = append(st.Recent, r.arrived[i])
	}
	slices.Reverse(st.Recent)
	return st
}

func (r *Replay) started(p *v1.Pod) time.Time {
	if st := r.s.stats[p.UID]; st != nil && !st.bound.IsZero() {
		return st.bound
	}
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return epoch
}

// pendingOrder lists the unbound pods: those in flight first, then the
// queue's in the order they wait, with their nominations; and how the
// queue holds each pod it lists (QueuedOf).
func (r *Replay) pendingOrder(unbound map[string]*v1.Pod) ([]*v1.Pod, map[types.UID]QueuedPod) {
	page := r.s.core.Pending(pendingAll, r.s.now)
	listed := make(map[string]bool, len(page.Items))
	var order []*v1.Pod
	queued := map[types.UID]QueuedPod{}
	for _, it := range page.Items {
		if p := unbound[it.Key.String()]; p != nil {
			listed[it.Key.String()] = true
			order = append(order, r.nominated(p))
			if qp, ok := QueuedOf(it.Explanation); ok {
				queued[p.UID] = qp
			}
		}
	}
	var out []*v1.Pod
	for _, k := range sortedKeys(unbound) {
		if !listed[k] {
			out = append(out, r.nominated(unbound[k]))
		}
	}
	return append(out, order...), queued
}

var pendingAll = pendingOptions(math.MaxInt32)

// nominated returns p carrying the queue's nomination, or none if the
// queue holds none: its status may still name a node whose nomination
// the queue dropped, which the forecast's handlers would take over.
func (r *Replay) nominated(p *v1.Pod) *v1.Pod {
	node, _ := r.s.core.Nomination(framework.Key(p))
	if node == p.Status.NominatedNodeName {
		return p
	}
	c := *p
	c.Status.NominatedNodeName = node
	return &c
}

// podGroups returns the PodGroups of the gangs with unbound members.
func (r *Replay) podGroups(unbound map[string]*v1.Pod) []*schedulingPodGroup {
	if !r.s.gangsOn() {
		return nil
	}
	want := map[string]int32{}
	for _, p := range unbound {
		if g := framework.GroupName(p); g != "" {
			want[g] = framework.Priority(p)
		}
	}
	var out []*schedulingPodGroup
	for _, gs := range r.s.x.gangs.order {
		prio, ok := want[gs.name]
		if !ok {
			continue
		}
		ns, name := splitKey(gs.name)
		out = append(out, r.s.podGroupObject(ns, name, int32(gs.minCount), prio))
	}
	return out
}
