package profile

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// ScoreNodes scores pod on nodes as the framework's RunScorePlugins does
// (the same plugins, those state does not skip, in order, with the same
// NormalizeScore calls, weights, range checks and error messages), but
// runs the NormalizeScore plugins and the weighting on the caller's
// goroutine, and only the Score plugins on the framework's parallelizer.
// A panic in a NormalizeScore is then the caller's to recover, with its
// reason, as one in Filter is: on the parallelizer it would be recorded
// in the panic sink only after the framework's call returned, and the
// pod placed by scores not normalised. A Score plugin that panics (with
// a sink in ctx, WithPanicSink) leaves its node without its name
// (ScoredAll), and the answer is then the raw scores, not normalised.
// Without the framework's score plugins (no ScoreTable can be made), it
// is the framework's RunScorePlugins. O(nodes x plugins).
func (f *Framework) ScoreNodes(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) ([]fwk.NodePluginScores, *fwk.Status) {
	return f.ScoreNodesInto(ctx, state, pod, nodes, nil)
}

// ScoreNodesInto is ScoreNodes, its answer made in buf's memory when buf
// has the capacity (buf's elements are overwritten, not read): a caller
// that scores in every cycle and gives up the answer before the next
// (keeping the RawScores, which are never buf's) can pass the last one.
// O(nodes x plugins).
func (f *Framework) ScoreNodesInto(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo, buf []fwk.NodePluginScores) ([]fwk.NodePluginScores, *fwk.Status) {
	if f.norm == nil {
		return f.fwk.RunScorePlugins(ctx, state, pod, nodes)
	}
	active := f.norm.activeIn(state)
	var scores []fwk.NodePluginScores
	if cap(buf) >= len(nodes) {
		scores = buf[:len(nodes)]
		clear(scores) // a node a panicking Score plugin leaves has no name (ScoredAll)
	} else {
		scores = make([]fwk.NodePluginScores, len(nodes))
	}
	if len(active) == 0 {
		for i, ni := range nodes {
			scores[i] = fwk.NodePluginScores{Name: ni.Node().Name, RawScores: []fwk.PluginScore{}, Scores: []fwk.PluginScore{}}
		}
		return scores, nil
	}
	if err := f.rawScores(ctx, state, pod, nodes, active, scores); err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("running Score plugins: %w", err))
	}
	if !ScoredAll(scores) {
		return scores, nil // a Score plugin panicked: the caller repanics
	}
	return scores, f.norm.weigh(ctx, state, pod, active, scores)
}

// rawScores runs the active score plugins on every node, on the
// framework's parallelizer, into scores; the first error stops it. The
// nodes' RawScores share one array, each capped at its own length (so
// that an append to one never writes into the next): one allocation per
// call, not one per node.
func (f *Framework) rawScores(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo, active []scorer, scores []fwk.NodePluginScores) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
	)
	k := len(active)
	all := make([]fwk.PluginScore, len(nodes)*k)
	f.fwk.Parallelizer().Until(ctx, len(nodes), func(i int) {
		raw := all[i*k : (i+1)*k : (i+1)*k]
		for k, sc := range active {
			s, st := sc.pl.Score(ctx, state, pod, nodes[i])
			if !st.IsSuccess() {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("plugin %q failed with: %w", sc.name, st.AsError())
				}
				mu.Unlock()
				cancel()
				return
			}
			raw[k] = fwk.PluginScore{Name: sc.name, Score: s}
		}
		scores[i] = fwk.NodePluginScores{Name: nodes[i].Node().Name, RawScores: raw}
	}, "Score")
	mu.Lock()
	defer mu.Unlock()
	return first
}

// activeIn lists the scorers state does not skip, in order: a new list,
// for one call.
func (n *normalizer) activeIn(state fwk.CycleState) []scorer {
	skip := state.GetSkipScorePlugins()
	out := make([]scorer, 0, len(n.scorers))
	for _, sc := range n.scorers {
		if !skip.Has(sc.name) {
			out = append(out, sc)
		}
	}
	return out
}

// weigh normalises the raw scores of each active plugin that has a
// NormalizeScore over every node, in the plugins' order, then checks each
// score's range and sets each node's weighted Scores and TotalScore.
// The lists and the nodes' Scores each share one array (each node's
// capped at its length): two allocations per call, not one per plugin
// and one per node.
func (n *normalizer) weigh(ctx context.Context, state fwk.CycleState, pod *v1.Pod, active []scorer, scores []fwk.NodePluginScores) *fwk.Status {
	lists := make([]fwk.NodeScoreList, len(active))
	all := make([]fwk.NodeScore, len(active)*len(scores))
	for k, sc := range active {
		list := all[k*len(scores) : (k+1)*len(scores) : (k+1)*len(scores)]
		for i := range scores {
			list[i] = fwk.NodeScore{Name: scores[i].Name, Score: scores[i].RawScores[k].Score}
		}
		if ext := sc.pl.ScoreExtensions(); ext != nil {
			if st := ext.NormalizeScore(ctx, state, pod, list); !st.IsSuccess() {
				return fwk.AsStatus(fmt.Errorf("running Normalize on Score plugins: %w",
					fmt.Errorf("plugin %q failed with: %w", sc.name, st.AsError())))
			}
		}
		lists[k] = list
	}
	ws := make([]fwk.PluginScore, len(scores)*len(active))
	for i := range scores {
		weighted := ws[i*len(active) : (i+1)*len(active) : (i+1)*len(active)]
		var total int64
		for k, sc := range active {
			s := lists[k][i].Score
			if s > fwk.MaxScore || s < fwk.MinScore {
				return fwk.AsStatus(fmt.Errorf("applying score defaultWeights on Score plugins: plugin %q returns an invalid score %v, it should in the range of [%v, %v] after normalizing",
					sc.name, s, fwk.MinScore, fwk.MaxScore))
			}
			weighted[k] = fwk.PluginScore{Name: sc.name, Score: s * sc.weight}
			total += s * sc.weight
		}
		scores[i].Scores, scores[i].TotalScore = weighted, total
	}
	return nil
}
