package scheduler

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	fwframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedq/schedq/kube/framework"
)

// Group attempts on kube-scheduler's framework (the members' profile's). The
// framework's snapshot is brought up to date once (Cache.UpdateSnapshot),
// then the members are placed one by one with the same functions as a
// lone pod (fwFind: PreFilter, Filter with the nominated pods, PreScore,
// Score, pick), each placed member being added to the snapshot
// (Snapshot.AssumePod) and reserved and permitted there, so that the next
// members' plugins count it. The members' cycle states are within one pod
// group cycle and placement, as kube-scheduler's are (memberCycleState),
// until the members placed are to be bound (leaveGroupCycle). No lock of
// schedq's is held while a plugin runs. The quorum is schedq's group
// plugin's (groupPlugin). Only if it is met do the placed members become
// assumptions in the Cache, in one step under its lock (Cache.Trial,
// which re-checks the quorum against what the cache holds then);
// otherwise they are unreserved and nothing is assumed.
//
// The snapshot is always restored (fwTrial.end: the members are forgotten
// in reverse order, Snapshot.ForgetPod), on every path, panics included.
// It must be: AssumePod keeps the node's generation, so the next
// UpdateSnapshot copies only the nodes the cache changed since and would
// otherwise leave a failed attempt's members in the others.

// fwTrial is a framework group attempt's members placed in the snapshot,
// in the order placed, and the attempt's pod group and placement cycle
// states. Only the scheduling loop uses it.
type fwTrial struct {
	s       *Scheduler
	snap    *backendcache.Snapshot
	members []fwMember
	// placed holds the keys of the members in the snapshot: it counts
	// their room, so their nominations must not count it again.
	placed    map[types.NamespacedName]struct{}
	group     *fwframework.CycleState // the pod group cycle's, shared by the members
	placement *fwframework.CycleState // the one implicit placement's
}

// newFWTrial returns a trial on snap with fresh pod group and placement
// cycle states, as kube-scheduler starts a pod group cycle when no
// placement plugin proposes placements: one placement, whose state knows
// the pod group's.
func newFWTrial(s *Scheduler, snap *backendcache.Snapshot) *fwTrial {
	tr := &fwTrial{s: s, snap: snap, placed: map[types.NamespacedName]struct{}{}, group: fwframework.NewCycleState()}
	tr.placement = fwframework.NewCycleState()
	tr.placement.SetPodGroupSchedulingCycle(tr.group)
	return tr
}

// memberCycleState returns a new cycle state for a member's placement,
// marked as within the trial's pod group cycle and placement, as
// kube-scheduler gives each member of a pod group cycle. Plugins share
// data among the members through it: DynamicResources lets a member reuse
// the allocation that another member's Reserve holds in flight for a
// claim they share, which it refuses to any pod outside the cycle.
func (tr *fwTrial) memberCycleState() *fwframework.CycleState {
	cs := newFWCycleState()
	cs.SetPodGroupSchedulingCycle(tr.group)
	cs.SetPlacementCycleState(tr.placement)
	return cs
}

// leaveGroupCycle ends the pod group cycle for the placed members' cycle
// states, before their bindings can start or be aborted, as kube-scheduler
// does before its binding cycles: from then on their plugins (Unreserve,
// PreBind) treat them as lone pods. A trial that failed has unreserved
// them already.
func (tr *fwTrial) leaveGroupCycle() {
	for _, m := range tr.members {
		m.cs.SetPodGroupSchedulingCycle(nil)
	}
}

// fwMember is a member placed in the snapshot and reserved on its node.
type fwMember struct {
	index int                     // into Attempt.Members
	pi    *framework.PodInfo      // for the cache
	pb    *pendingBinding         // its binding; pb.fw holds the framework's side
	cs    *fwframework.CycleState // pb.fw's state
	kept  bool                    // assumed in the cache: the binding unreserves
}

// scheduleGroupFramework is scheduleGroup on the framework: see above.
// O(members x examined nodes x plugins), with no lock held but the
// cache's read lock while the snapshot is updated and its write lock
// while the placements become assumptions (O(members)).
func (s *Scheduler) scheduleGroupFramework(ctx context.Context, a Attempt, gp framework.GroupPlugin) Outcome {
	start := s.o.Now()
	s.batch.drop() // the members change nodes the batch's scores describe
	snap := s.cur.fw.Snapshot()
	st, err := s.cache.UpdateSnapshot(snap)
	g := &groupTry{state: st}
	if err != nil {
		g.before = beforeUnknown
		return s.failGroup(ctx, a, start, g, Outcome{Result: Error, Message: "snapshot: " + err.Error()})
	}
	g.before = s.cache.GroupPlaced(a.Group)
	g.bindings = newGangBinds(s, a.Group, a.Spec.MinCount, g.before, 0)
	tr := newFWTrial(s, snap)
	defer tr.end(ctx) // a panic in a plugin
	s.fwPlaceMembers(ctx, a, gp, g, tr)
	if g.verdict == framework.QuorumMet {
		tr.leaveGroupCycle()
		s.fwAssumeMembers(a, gp, g, tr)
	}
	tr.end(ctx)
	s.batch.drop() // its scores counted the members, now out of the snapshot
	if g.erred > 0 {
		// No PostFilter: kube-scheduler runs them after an unschedulable
		// pod group cycle only.
		g.fitsNowhere = nil
		return s.failGroup(ctx, a, start, g, s.groupErrorOutcome(a, g))
	}
	if g.verdict != framework.QuorumMet {
		s.fwGroupPostFilter(ctx, g)
		return s.failGroup(ctx, a, start, g, s.groupOutcome(a, g))
	}
	return s.bindGroup(ctx, a, start, g)
}

// fwPlaceMembers places a's members in the snapshot until the quorum is
// met for all of them or can no longer be met, and records the verdict and
// the placements in g.
func (s *Scheduler) fwPlaceMembers(ctx context.Context, a Attempt, gp framework.GroupPlugin, g *groupTry, tr *fwTrial) {
	s.inTrial = true
	defer func() { s.inTrial = false }()
	for i, m := range a.Members {
		n := len(tr.members)
		if gp.Quorum(g.before+n, n, len(a.Members)-i, a.Spec.MinCount) == framework.QuorumLost {
			break
		}
		g.tried++
		out, cs := s.fwPlaceMember(ctx, m, i, g, tr)
		if out.Result == Scheduled {
			continue
		}
		g.fail(i, out)
		if out.Result == Error {
			// kube-scheduler's pod group cycle stops at a member's error
			// and fails the group with it, whatever the others do.
			g.erred = len(g.failed)
			break
		}
		if cs != nil {
			g.fitsNowhere = append(g.fitsNowhere, fwUnplaced{cs: cs, m: m, at: len(g.failed) - 1})
		}
	}
	n := len(tr.members)
	g.verdict = gp.Quorum(g.before+n, n, 0, a.Spec.MinCount)
	if g.erred > 0 {
		g.verdict = framework.QuorumLost
	}
	for _, m := range tr.members {
		g.placed = append(g.placed, m.index)
		g.nodes = append(g.nodes, m.pb.fw.node)
		g.pbs = append(g.pbs, m.pb)
	}
}

// fwUnplaced is a group member that fit nowhere: its cycle state, its
// attempt, and its outcome's index in groupTry.failed.
type fwUnplaced struct {
	cs fwk.CycleState
	m  Attempt
	at int
}

// fwGroupPostFilter runs, once a group attempt has failed and its members
// are out of the snapshot and unreserved, the PostFilter plugins but
// DefaultPreemption (fwPostFilter) for each member that fit nowhere, with
// its cycle state: kube-scheduler runs its PodGroupPostFilter plugins
// only after a pod group cycle that failed, never for a member during the
// cycle. Run during the attempt, DynamicResources' PostFilter could
// deallocate a claim that the members placed before share (it is reserved
// for them only at PreBind), and their PreBind would fail though the
// quorum was met.
func (s *Scheduler) fwGroupPostFilter(ctx context.Context, g *groupTry) {
	for _, u := range g.fitsNowhere {
		s.fwPostFilter(ctx, u.cs, u.m, &g.failed[u.at])
	}
	g.fitsNowhere = nil
}

// fwPlaceMember finds a node for the member m (a.Members[i]) with the
// framework's plugins, adds it to the snapshot there, and runs Reserve
// and Permit. Each member's placement is a cycle of its own for
// opportunistic batching (fwbatch.go), as kube-scheduler's pod group
// cycle runs its scheduling algorithm per member: a member of the same
// signature as the one placed before it takes that one's best remaining
// node as a hint; the batch ends with the group's attempt. A rejection at Reserve or Permit unreserves it and takes it
// out of the snapshot again. For a member that fits nowhere it returns
// its cycle state too, for fwGroupPostFilter; else nil.
func (s *Scheduler) fwPlaceMember(ctx context.Context, m Attempt, i int, g *groupTry, tr *fwTrial) (Outcome, fwk.CycleState) {
	pi, err := s.podInfo(m.Item)
	if err != nil {
		s.batch.drop()
		return Outcome{Result: Error, Message: "invalid pod: " + err.Error()}, nil
	}
	// The members placed before it are in the snapshot: their nominations
	// would count their room twice.
	s.readNominationsBut(m.Key, m.Item, tr.placed)
	s.fwCycle++
	s.sig = s.cur.fw.SignPod(ctx, m.Item)
	defer func() { s.ownNom, s.hasNom, s.sig = "", false, nil; clear(s.fwNom.pods) }()
	cs := tr.memberCycleState()
	out := s.fwFind(ctx, cs, pi)
	if out.clearNom != "" {
		s.unnominateAs(m.Key, m.Item.UID, out.clearNom)
	}
	if out.Result != Scheduled {
		s.batch.drop()
		return out, cs
	}
	out = s.fwReserveMember(ctx, m, i, pi, cs, out, g, tr)
	if out.Result != Scheduled {
		s.batch.drop()
	}
	return out, nil
}

// fwReserveMember adds the member m, found a node (out.Node) with the
// cycle state cs, to the snapshot there and runs Reserve and Permit; a
// rejection unreserves it and takes it out of the snapshot again.
func (s *Scheduler) fwReserveMember(ctx context.Context, m Attempt, i int, pi *framework.PodInfo, cs *fwframework.CycleState, out Outcome, g *groupTry, tr *fwTrial) Outcome {
	assumed := assumedOn(m.Item, out.Node)
	upi, err := fwframework.NewPodInfo(assumed)
	if err != nil {
		return Outcome{Result: Error, Message: "invalid pod: " + err.Error()}
	}
	if err := tr.snap.AssumePod(upi); err != nil {
		return Outcome{Result: Error, Message: fmt.Sprintf("snapshot: %v", err)}
	}
	fb := &fwBinding{fw: s.cur.fw.Framework(), state: cs, pod: assumed, node: out.Node, log: s.o.Logger, prof: s.cur.fw, noms: s.o.Nominations}
	member := memberAttempt(m)
	pb := &pendingBinding{gang: g.bindings, fw: fb}
	fb.requeue = func() { s.abortedMember(ctx, pb.current(member), g.bindings) }
	pb.abort = func() { fb.ended(ctx, true) } // unreserves, then requeues, once the plugins are done
	tr.members = append(tr.members, fwMember{index: i, pi: pi, pb: pb, cs: cs})
	tr.placed[m.Key] = struct{}{}
	if st := fb.reservePermit(ctx); st != nil {
		tr.drop(ctx)
		return onNodeOutcome(assumed, out.Node, st)
	}
	return out
}

// fwAssumeMembers makes the members placed in the snapshot assumptions in
// the cache, in one step under its lock, if the quorum is still met with
// what the cache holds then (a member may have been bound or deleted, a
// node deleted, since the snapshot; a member deleted is not placed, as
// Trial.Gone says): else none is assumed. It leaves in
// g's placements the members assumed and records the others as failed,
// and sets the tally of their bindings while the cache is still locked.
func (s *Scheduler) fwAssumeMembers(a Attempt, gp framework.GroupPlugin, g *groupTry, tr *fwTrial) {
	kept := make([]bool, len(tr.members))
	s.cache.Trial(func(_ framework.Snapshot, t *Trial) bool {
		n := 0
		for j, m := range tr.members {
			// A member deleted since the attempt began is not counted.
			if kept[j] = !t.Gone(m.pi.Pod.UID) && t.Place(m.pi, m.pb.fw.node, m.pb); kept[j] {
				n++
			}
		}
		g.verdict = gp.Quorum(t.Placed(a.Group), n, 0, a.Spec.MinCount)
		if g.verdict == framework.QuorumMet {
			// Counted before the lock is released: from then on a node's
			// deletion may abort a member, which counts its binding down.
			g.bindings.expect(n)
		}
		return g.verdict == framework.QuorumMet
	})
	met := g.verdict == framework.QuorumMet
	g.placed, g.nodes, g.pbs = g.placed[:0], g.nodes[:0], g.pbs[:0]
	for j := range tr.members {
		m := &tr.members[j]
		node := m.pb.fw.node
		switch {
		case met && kept[j]:
			m.kept = true
			g.placed = append(g.placed, m.index)
			g.nodes = append(g.nodes, node)
			g.pbs = append(g.pbs, m.pb)
		case !kept[j]:
			g.fail(m.index, Outcome{Result: Error, Message: fmt.Sprintf("pod %s: deleted, or already on a node, or node %s deleted, since the snapshot", framework.Key(m.pi.Pod), node)})
		}
	}
	if !met {
		g.fail(-1, Outcome{Result: Error, Message: "the group's quorum was lost while its members were placed"})
	}
}

// drop takes the last member placed out of the snapshot and unreserves it.
func (t *fwTrial) drop(ctx context.Context) {
	m := t.members[len(t.members)-1]
	t.members = t.members[:len(t.members)-1]
	delete(t.placed, framework.Key(m.pi.Pod))
	t.forget(m)
	m.pb.fw.unreserve(ctx)
}

// end restores the snapshot: every member is taken out of it, the last
// placed first (ForgetPod's order), then the members that did not become
// assumptions are unreserved. Calling it again does nothing.
func (t *fwTrial) end(ctx context.Context) {
	members := t.members
	t.members = nil
	clear(t.placed)
	for j := len(members) - 1; j >= 0; j-- {
		t.forget(members[j])
	}
	for j := len(members) - 1; j >= 0; j-- {
		if !members[j].kept {
			members[j].pb.fw.unreserve(ctx)
		}
	}
}

// forget takes m out of the snapshot. It cannot fail for a pod AssumePod
// took; if it does, upstream's next UpdateSnapshot forgets what is left
// (and logs it), so the error is only logged.
func (t *fwTrial) forget(m fwMember) {
	if err := t.snap.ForgetPod(klog.Background(), m.pb.fw.pod); err != nil {
		t.s.o.Logger.Error("group attempt: restoring the framework's snapshot", "pod", framework.Key(m.pi.Pod), "err", err)
	}
}
