package profile

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// scorer is one of a framework's score plugins, in the framework's order,
// with its weight.
type scorer struct {
	name   string
	weight int64
	pl     fwk.ScorePlugin
}

// normalizer is what Framework.NormalizeScores needs: the score plugins
// and per-plugin buffers reused from call to call.
type normalizer struct {
	scorers []scorer
	active  []int // indexes into scorers of this call's plugins
	lists   []fwk.NodeScoreList
}

// captureScorers wraps every factory of r so that each score plugin it
// builds is recorded in into, by the plugin's name. The plugins are
// unchanged.
func captureScorers(r frameworkruntime.Registry, into map[string]fwk.ScorePlugin) {
	for name, inner := range r {
		r[name] = func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			p, err := inner(ctx, args, h)
			if sp, ok := p.(fwk.ScorePlugin); ok && err == nil {
				into[sp.Name()] = sp
			}
			return p, err
		}
	}
}

// newNormalizer lists f's score plugins, in f's order with f's weights,
// from the instances captured. Nil if one was not captured (the caller
// then uses the framework's own NormalizeScores).
func newNormalizer(f framework.Framework, captured map[string]fwk.ScorePlugin) *normalizer {
	n := &normalizer{}
	for _, p := range f.ListPlugins().Score.Enabled {
		pl, ok := captured[p.Name]
		if !ok {
			return nil
		}
		n.scorers = append(n.scorers, scorer{name: p.Name, weight: int64(p.Weight), pl: pl})
	}
	return n
}

// NormalizeScores sets each node's Scores and TotalScore from its
// RawScores exactly as the framework's NormalizeScores does (the same
// plugins not skipped in state, the same NormalizeScore calls over the
// same lists, the same weights and range check, the same errors' codes),
// without its per-call maps and per-node slices: a node's Scores is
// reused when it is large enough. It serves a batch that normalises its
// few hundred candidates again on every cycle. O(nodes x score plugins).
// Not safe for concurrent use.
func (f *Framework) NormalizeScores(ctx context.Context, state fwk.CycleState, pod *v1.Pod, scores []fwk.NodePluginScores) *fwk.Status {
	n := f.norm
	if n == nil {
		return f.fwk.NormalizeScores(ctx, state, pod, scores)
	}
	n.activate(state)
	if len(n.active) == 0 {
		for i := range scores {
			scores[i].Scores = make([]fwk.PluginScore, 0)
			scores[i].TotalScore = 0
		}
		return nil
	}
	n.fill(scores)
	for k, idx := range n.active {
		sc := n.scorers[idx]
		ext := sc.pl.ScoreExtensions()
		if ext == nil {
			continue
		}
		if st := ext.NormalizeScore(ctx, state, pod, n.lists[k]); !st.IsSuccess() {
			return fwk.AsStatus(fmt.Errorf("normalising the scores of plugin %q: %w", sc.name, st.AsError()))
		}
	}
	return n.weigh(scores)
}

// activate lists the scorers state does not skip, in order.
func (n *normalizer) activate(state fwk.CycleState) {
	skip := state.GetSkipScorePlugins()
	n.active = n.active[:0]
	for i, sc := range n.scorers {
		if !skip.Has(sc.name) {
			n.active = append(n.active, i)
		}
	}
}

// fill makes one list per active plugin of every node's raw score, as
// the framework does: the entry of a node without a raw score of that
// plugin is the zero NodeScore.
func (n *normalizer) fill(scores []fwk.NodePluginScores) {
	for len(n.lists) < len(n.active) {
		n.lists = append(n.lists, nil)
	}
	for k := range n.active {
		n.lists[k] = resize(n.lists[k], len(scores))
	}
	for i, ns := range scores {
		for k, idx := range n.active {
			n.lists[k][i] = rawScore(ns.Name, ns.RawScores, k, n.scorers[idx].name)
		}
	}
}

// rawScore is node's raw score of plugin among raws as a NodeScore, the
// zero one if it has none. The framework lists the raw scores in its
// plugins' order, one per plugin, so the k-th is tried first.
func rawScore(node string, raws []fwk.PluginScore, k int, plugin string) fwk.NodeScore {
	if k < len(raws) && raws[k].Name == plugin {
		return fwk.NodeScore{Name: node, Score: raws[k].Score}
	}
	var out fwk.NodeScore
	for _, raw := range raws {
		if raw.Name == plugin {
			out = fwk.NodeScore{Name: node, Score: raw.Score}
		}
	}
	return out
}

// weigh checks each normalised score's range and sets the weighted
// scores and totals.
func (n *normalizer) weigh(scores []fwk.NodePluginScores) *fwk.Status {
	for i := range scores {
		out := scores[i].Scores
		if cap(out) < len(n.active) {
			out = make([]fwk.PluginScore, len(n.active))
		}
		out = out[:len(n.active)]
		var total int64
		for k, idx := range n.active {
			sc := n.scorers[idx]
			s := n.lists[k][i].Score
			if s > fwk.MaxScore || s < fwk.MinScore {
				return fwk.AsStatus(fmt.Errorf("plugin %q: normalised score %d is outside [%d, %d]",
					sc.name, s, fwk.MinScore, fwk.MaxScore))
			}
			out[k] = fwk.PluginScore{Name: sc.name, Score: s * sc.weight}
			total += s * sc.weight
		}
		scores[i].Scores = out
		scores[i].TotalScore = total
	}
	return nil
}

// resize returns l with length n, reallocated only if too small.
func resize(l fwk.NodeScoreList, n int) fwk.NodeScoreList {
	if cap(l) < n {
		return make(fwk.NodeScoreList, n)
	}
	return l[:n]
}
