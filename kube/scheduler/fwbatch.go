package scheduler

import (
	"bytes"
	"container/heap"
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedq/schedq/kube/profile"
)

// batchMaxAge is how long a batch's scores may serve later pods, as
// kube-scheduler's opportunistic batching allows (500 ms), measured on
// Options.Now: virtual time in the simulator, so that a run's bytes do
// not depend on how fast the machine is.
const batchMaxAge = 500 * time.Millisecond

// fwBatch is the framework path's opportunistic batching (kube-scheduler's
// OpportunisticBatching, beta and on by default in v1.37): a lone pod's
// cycle that scored several feasible nodes keeps the ones it did not
// choose, best first, and the very next cycle, if its pod has the same
// signature (Framework.SignPod), takes the best of them as a hint: the
// node is filtered alone and, if it fits, chosen without filtering and
// scoring a sample of the cluster again. The node the last cycle chose is
// filtered and, if the pod still fits there, scored again and put back
// among the candidates, so that pods that fit several to a node still
// fill the best node first.
//
// The scores of the other nodes are reused as they were: like
// kube-scheduler, schedq relies on the cycles being consecutive and the
// batch young for them to be current. A pod whose signature is nil (a
// plugin cannot sign it), a nominated pod, a failed cycle, a group
// attempt or a cycle of another pod in between ends the batch.
//
// The candidates' scores live in a profile.ScoreTable, which re-normalises
// them as the framework would with one NormalizeScore call per
// normalising plugin over a column, not a walk of every node's scores.
//
// Unlike kube-scheduler's, the batch is kept by schedq's cycle rather
// than inside the framework, so that its age is measured on schedq's
// clock. It is used only by the scheduling loop's goroutine.
type fwBatch struct {
	sig   fwk.PodSignature
	tab   *profile.ScoreTable // every candidate of the cycle that started the batch
	infos []fwk.NodeInfo      // their NodeInfos, by table index
	rnd   []int               // their random tie-breakers
	rest  candHeap            // live candidates not handed out, best first
	last  int                 // table index of the node the last cycle chose
	cycle uint64              // that cycle's number
	// removals is the cache's count of node removals when infos were
	// taken from the snapshot: while it holds, they are the snapshot's.
	removals uint64
	// pre is PreScore's list of nodes: the live candidates (those
	// waiting and the last choice) in table order, their positions in
	// prePos by table index, -1 for a node left out. While preOK, only
	// the last choice's NodeInfo changes in it; a node left out or
	// NodeInfos looked up again make it be listed again.
	pre    []fwk.NodeInfo
	prePos []int
	preOK  bool
	born   time.Time
	// spare is the table (and tie-breakers) of a batch ended, whose
	// memory the next batch takes.
	spare    *profile.ScoreTable
	spareRnd []int
	hints    uint64 // hints taken, for tests and metrics
}

// drop ends the batch.
func (b *fwBatch) drop() {
	if b.tab != nil {
		b.spare, b.spareRnd = b.tab, b.rnd
	}
	b.sig, b.tab, b.infos, b.rnd, b.rest.idx, b.preOK = nil, nil, nil, nil, b.rest.idx[:0], false
}

// keepBatch starts a batch from a cycle that chose scores[best] among
// the feasible nodes (scores[i] is feasible[i]'s, with its tie-breaker),
// the others kept as candidates. The batch keeps scores' raw scores.
// O(candidates).
func (s *Scheduler) keepBatch(best int, scores []fwk.NodePluginScores, feasible []fwk.NodeInfo) {
	s.batch.drop()
	var tab *profile.ScoreTable
	if s.sig != nil && len(scores) > 1 {
		tab = s.cur.fw.NewScoreTable(scores, s.batch.spare)
	}
	if tab == nil {
		return
	}
	rnd := s.batch.spareRnd
	if cap(rnd) < len(scores) {
		rnd = make([]int, len(scores))
	}
	b := fwBatch{sig: s.sig, tab: tab, infos: feasible, rnd: rnd[:len(scores)], last: best,
		cycle: s.fwCycle, removals: s.snapRemovals, born: s.o.Now(), hints: s.batch.hints, pre: s.batch.pre[:0], prePos: s.batch.prePos}
	b.rest = candHeap{idx: s.batch.rest.idx[:0], tab: tab, rnd: b.rnd}
	for i := range scores {
		b.rnd[i] = scores[i].Randomizer
		if i != best {
			b.rest.idx = append(b.rest.idx, i)
		}
	}
	heap.Init(&b.rest)
	s.batch = b
}

// fwHint returns the batch's best node for pod if the batch applies and
// pod passes the filters there, with the nominated pods. On a hint the
// batch goes on with the hinted node as its last choice; without one the
// batch is dropped and the cycle searches as usual. O(candidates x
// normalising plugins) to rescore the last node, plus one or two nodes'
// filters.
func (s *Scheduler) fwHint(ctx context.Context, cs fwk.CycleState, pod *v1.Pod) (string, bool) {
	b := &s.batch
	usable := s.sig != nil && !s.hasNom && b.tab != nil && len(b.rest.idx) > 0 &&
		b.cycle+1 == s.fwCycle && bytes.Equal(s.sig, b.sig) && s.o.Now().Sub(b.born) < batchMaxAge
	if !usable || !s.refreshBatch(ctx, cs, pod) || len(b.rest.idx) == 0 {
		b.drop()
		return "", false
	}
	fw := s.cur.fw.Framework()
	i := heap.Pop(&b.rest).(int)
	hint := b.tab.Name(i)
	ni, err := s.cur.fw.Snapshot().NodeInfos().Get(hint)
	if err != nil || !fw.RunFilterPluginsWithNominatedPods(ctx, cs, pod, ni).IsSuccess() {
		b.drop()
		return "", false
	}
	b.last, b.cycle = i, s.fwCycle
	b.hints++
	return hint, true
}

// refreshBatch filters the batch's last choice for pod and, if pod still
// fits there, scores it again and puts it back among the candidates,
// normalised with them. False if the batch cannot be used: a node is
// gone, or a plugin erred.
func (s *Scheduler) refreshBatch(ctx context.Context, cs fwk.CycleState, pod *v1.Pod) bool {
	fw := s.cur.fw.Framework()
	b := &s.batch
	nodes := s.cur.fw.Snapshot().NodeInfos()
	last, err := nodes.Get(b.tab.Name(b.last))
	if err != nil {
		return false
	}
	st := fw.RunFilterPlugins(ctx, cs, pod, last)
	if !st.IsSuccess() {
		b.tab.Kill(b.last)
		b.preOK = false
		return st.IsRejected()
	}
	if !s.resolveBatch() {
		return false
	}
	b.infos[b.last] = last
	if b.preOK {
		b.pre[b.prePos[b.last]] = last
	} else {
		b.listPre()
	}
	state := cs.Clone()
	if !fw.RunPreScorePlugins(ctx, state, pod, b.pre).IsSuccess() {
		return false
	}
	raw, st := fw.RunRawScorePlugins(ctx, state, pod, last)
	if !st.IsSuccess() {
		return false
	}
	b.rnd[b.last] = s.o.Rand.Int()
	b.tab.Set(b.last, raw)
	changed, st := b.tab.Normalize(ctx, state, pod)
	if !st.IsSuccess() {
		return false
	}
	if changed {
		b.rest.idx = append(b.rest.idx, b.last)
		heap.Init(&b.rest)
	} else {
		heap.Push(&b.rest, b.last)
	}
	return true
}

// resolveBatch makes sure every candidate still waiting is in the
// snapshot, with its NodeInfo: at no cost while no node was removed
// since the batch took them, else by looking each up again. O(1) or
// O(candidates).
func (s *Scheduler) resolveBatch() bool {
	b := &s.batch
	if b.removals == s.snapRemovals {
		return true
	}
	nodes := s.cur.fw.Snapshot().NodeInfos()
	for _, i := range b.rest.idx {
		ni, err := nodes.Get(b.tab.Name(i))
		if err != nil {
			return false
		}
		b.infos[i] = ni
	}
	b.removals, b.preOK = s.snapRemovals, false
	return true
}

// listPre lists the live candidates' NodeInfos in b.pre, in table order:
// the candidates waiting and the last choice, the nodes PreScore is
// given (in an order of their own: no PreScore depends on the order of
// its list). O(candidates).
func (b *fwBatch) listPre() {
	b.pre = b.pre[:0]
	if cap(b.prePos) < len(b.infos) {
		b.prePos = make([]int, len(b.infos))
	}
	b.prePos = b.prePos[:len(b.infos)]
	for i, ni := range b.infos {
		b.prePos[i] = -1
		if b.tab.Live(i) {
			b.prePos[i] = len(b.pre)
			b.pre = append(b.pre, ni)
		}
	}
	b.preOK = true
}

// scoreBefore orders nodes by total score, highest first, ties by
// Randomizer, highest first, as kube-scheduler's sorted nodes are.
func scoreBefore(a, b fwk.NodePluginScores) bool {
	if a.TotalScore != b.TotalScore {
		return a.TotalScore > b.TotalScore
	}
	return a.Randomizer > b.Randomizer
}

// candHeap is a batch's candidates not handed out (indexes into tab),
// best first in scoreBefore's order. It implements container/heap.
type candHeap struct {
	idx []int
	tab *profile.ScoreTable
	rnd []int
}

func (h *candHeap) Len() int { return len(h.idx) }
func (h *candHeap) Less(i, j int) bool {
	a, b := h.idx[i], h.idx[j]
	if ta, tb := h.tab.Total(a), h.tab.Total(b); ta != tb {
		return ta > tb
	}
	return h.rnd[a] > h.rnd[b]
}
func (h *candHeap) Swap(i, j int) { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *candHeap) Push(x any)    { h.idx = append(h.idx, x.(int)) }
func (h *candHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}
