package scheduler

import (
	"bytes"
	"container/heap"
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
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
// Unlike kube-scheduler's, the batch is kept by schedq's cycle rather
// than inside the framework, so that its age is measured on schedq's
// clock. It is used only by the scheduling loop's goroutine.
type fwBatch struct {
	sig   fwk.PodSignature
	rest  scoreHeap // candidates not yet handed out, best first
	last  string    // the node the last cycle chose
	cycle uint64    // that cycle's number
	born  time.Time
	hints uint64 // hints taken, for tests and metrics
}

// drop ends the batch.
func (b *fwBatch) drop() { b.rest, b.sig, b.last = b.rest[:0], nil, "" }

// keep starts a batch from a cycle that chose node and left the others
// in rest. O(1).
func (s *Scheduler) keepBatch(node string, rest scoreHeap) {
	if s.sig == nil || len(rest) == 0 {
		s.batch.drop()
		return
	}
	s.batch = fwBatch{sig: s.sig, rest: rest, last: node, cycle: s.fwCycle, born: s.o.Now(), hints: s.batch.hints}
}

// fwHint returns the batch's best node for pod if the batch applies and
// pod passes the filters there, with the nominated pods. On a hint the
// batch goes on with the hinted node as its last choice; without one the
// batch is dropped and the cycle searches as usual. O(candidates) to
// rescore the last node, plus one or two nodes' filters.
func (s *Scheduler) fwHint(ctx context.Context, cs fwk.CycleState, pod *v1.Pod) (string, bool) {
	b := &s.batch
	usable := s.sig != nil && !s.hasNom && len(b.rest) > 0 &&
		b.cycle+1 == s.fwCycle && bytes.Equal(s.sig, b.sig) && s.o.Now().Sub(b.born) < batchMaxAge
	if !usable || !s.refreshBatch(ctx, cs, pod) {
		b.drop()
		return "", false
	}
	fw := s.o.Framework.Framework()
	hint := heap.Pop(&b.rest).(fwk.NodePluginScores).Name
	ni, err := s.o.Framework.Snapshot().NodeInfos().Get(hint)
	if err != nil || !fw.RunFilterPluginsWithNominatedPods(ctx, cs, pod, ni).IsSuccess() {
		b.drop()
		return "", false
	}
	b.last, b.cycle = hint, s.fwCycle
	b.hints++
	return hint, true
}

// refreshBatch filters the batch's last choice for pod and, if pod still
// fits there, scores it again and puts it back among the candidates,
// normalised with them. False if the batch cannot be used: a node is
// gone, or a plugin erred.
func (s *Scheduler) refreshBatch(ctx context.Context, cs fwk.CycleState, pod *v1.Pod) bool {
	fw := s.o.Framework.Framework()
	nodes := s.o.Framework.Snapshot().NodeInfos()
	last, err := nodes.Get(s.batch.last)
	if err != nil {
		return false
	}
	st := fw.RunFilterPlugins(ctx, cs, pod, last)
	if !st.IsSuccess() {
		return st.IsRejected()
	}
	scores := s.batch.rest
	infos := make([]fwk.NodeInfo, 0, len(scores)+1)
	for _, sc := range scores {
		ni, err := nodes.Get(sc.Name)
		if err != nil {
			return false
		}
		infos = append(infos, ni)
	}
	infos = append(infos, last)
	state := cs.Clone()
	if !fw.RunPreScorePlugins(ctx, state, pod, infos).IsSuccess() {
		return false
	}
	raw, st := fw.RunRawScorePlugins(ctx, state, pod, last)
	if !st.IsSuccess() {
		return false
	}
	scores = append(scores, fwk.NodePluginScores{Name: last.Node().Name, RawScores: raw, Randomizer: s.o.Rand.Int()})
	if !s.o.Framework.NormalizeScores(ctx, state, pod, scores).IsSuccess() {
		return false
	}
	heap.Init(&scores)
	s.batch.rest = scores
	return true
}

// scoreHeap orders nodes by total score, highest first, ties by
// Randomizer, highest first, as kube-scheduler's sorted nodes are.
// It implements container/heap.
type scoreHeap []fwk.NodePluginScores

func (h scoreHeap) Len() int { return len(h) }
func (h scoreHeap) Less(i, j int) bool {
	if h[i].TotalScore != h[j].TotalScore {
		return h[i].TotalScore > h[j].TotalScore
	}
	return h[i].Randomizer > h[j].Randomizer
}
func (h scoreHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *scoreHeap) Push(x any)   { *h = append(*h, x.(fwk.NodePluginScores)) }
func (h *scoreHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
