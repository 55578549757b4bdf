package profile

import (
	"context"

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

// normalizer is what a ScoreTable needs of its framework: the score
// plugins, and the list of those a state does not skip, reused.
type normalizer struct {
	scorers []scorer
	active  []int // indexes into scorers of this call's plugins
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
// from the instances captured. Nil if one was not captured (no
// ScoreTable can then be made).
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
