package profile

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// ScoreTable keeps the raw scores of a fixed list of candidate nodes from
// cycle to cycle, some of them live, and gives the live ones' total
// scores as the framework's NormalizeScores would give them over the live
// nodes: it serves the scheduler's batch, which re-scores one node per
// cycle among a few hundred. The table keeps each plugin's raw scores in
// a column and the weighted sum of the plugins without a NormalizeScore
// per node, so that a cycle costs one NormalizeScore call per normalising
// plugin over a copied column and one addition per node and such plugin,
// not a walk of every node's scores.
//
// The normalisers see the live nodes in the table's order, not in the
// order a caller of the framework would list them: a NormalizeScore must
// not depend on the order of its list (none of the in-tree ones does).
//
// Not safe for concurrent use.
type ScoreTable struct {
	n      *normalizer
	names  []string
	raws   [][]fwk.PluginScore
	live   []bool
	dirty  []int // indexes Set since the last Normalize
	totals []int64

	// For the plugins of the last Normalize (active, indexes into
	// n.scorers), valid when built: each node's weighted sum of those
	// without a normaliser, and a column of raw scores per normalising
	// one (norm, positions in active).
	built   bool
	active  []int
	norm    []int
	fixed   []int64
	cols    []fwk.NodeScoreList
	scratch fwk.NodeScoreList
	order   []int // live indexes, in scratch order
	mark    []bool
	next    []int64
}

// NewScoreTable starts a table of the nodes of scores, every one live,
// with their RawScores (kept, not copied: the caller gives them up) and
// TotalScores as they are. Nil if the framework's score plugins are not
// known to it.
// O(nodes).
func (f *Framework) NewScoreTable(scores []fwk.NodePluginScores) *ScoreTable {
	if f.norm == nil {
		return nil
	}
	t := &ScoreTable{n: f.norm, names: make([]string, len(scores)), raws: make([][]fwk.PluginScore, len(scores)),
		live: make([]bool, len(scores)), totals: make([]int64, len(scores))}
	for i, s := range scores {
		t.names[i], t.raws[i], t.live[i], t.totals[i] = s.Name, s.RawScores, true, s.TotalScore
	}
	return t
}

// Len is the number of nodes, live or not.
func (t *ScoreTable) Len() int { return len(t.names) }

// Name is node i's name.
func (t *ScoreTable) Name(i int) string { return t.names[i] }

// Total is node i's total score as of the last Normalize (or as given).
func (t *ScoreTable) Total(i int) int64 { return t.totals[i] }

// Live tells whether node i is among the nodes normalised.
func (t *ScoreTable) Live(i int) bool { return t.live[i] }

// Kill leaves node i out of the next normalisations. O(1).
func (t *ScoreTable) Kill(i int) { t.live[i] = false }

// Set gives node i new raw scores (kept) and makes it live. O(1).
func (t *ScoreTable) Set(i int, raw []fwk.PluginScore) {
	t.raws[i], t.live[i] = raw, true
	t.dirty = append(t.dirty, i)
}

// Normalize sets the live nodes' totals as the framework's
// NormalizeScores would over them in state (its plugins not skipped, the
// same normalisers, weights and range checks, an error where it gives
// one), and reports whether the total of a node not Set since the last
// call changed. O(live nodes x normalising plugins), plus O(nodes x
// plugins) when the plugins state skips differ from the last call's.
func (t *ScoreTable) Normalize(ctx context.Context, state fwk.CycleState, pod *v1.Pod) (changed bool, st *fwk.Status) {
	t.n.activate(state)
	if !t.built || !slices.Equal(t.active, t.n.active) {
		t.built = false
		t.active = append(t.active[:0], t.n.active...)
		t.norm = t.norm[:0]
		for k, idx := range t.active {
			if t.n.scorers[idx].pl.ScoreExtensions() != nil {
				t.norm = append(t.norm, k)
			}
		}
		t.fixed = resizeInts(t.fixed, len(t.names))
		t.cols = resizeCols(t.cols, len(t.norm), len(t.names))
		for i := range t.names {
			if st := t.load(i); st != nil && t.live[i] {
				return false, st
			}
		}
		t.built = true
	} else {
		for _, i := range t.dirty {
			if st := t.load(i); st != nil && t.live[i] {
				return false, st
			}
		}
	}
	wasDirty := t.markDirty()
	defer func() { t.dirty = t.dirty[:0] }()
	next := t.scratchTotals()
	for j, k := range t.norm {
		if st := t.normalise(ctx, state, pod, j, k, next); st != nil {
			return false, st
		}
	}
	for _, i := range t.order {
		if next[i] != t.totals[i] && !wasDirty[i] {
			changed = true
		}
		t.totals[i] = next[i]
	}
	return changed, nil
}

// load computes node i's fixed sum and its column entries for the active
// plugins, checking the range of the scores no normaliser changes.
func (t *ScoreTable) load(i int) *fwk.Status {
	var fixed int64
	j := 0
	for k, idx := range t.active {
		sc := t.n.scorers[idx]
		ns := rawScore(t.names[i], t.raws[i], k, sc.name)
		if j < len(t.norm) && t.norm[j] == k {
			t.cols[j][i] = ns
			j++
			continue
		}
		if ns.Score > fwk.MaxScore || ns.Score < fwk.MinScore {
			return outOfRange(sc.name, ns.Score)
		}
		fixed += ns.Score * sc.weight
	}
	t.fixed[i] = fixed
	return nil
}

// markDirty returns a set of the nodes Set since the last call, as a
// slice indexed by node, reused.
func (t *ScoreTable) markDirty() []bool {
	if cap(t.mark) < len(t.names) {
		t.mark = make([]bool, len(t.names))
	}
	t.mark = t.mark[:len(t.names)]
	clear(t.mark)
	for _, i := range t.dirty {
		t.mark[i] = true
	}
	return t.mark
}

// scratchTotals lists the live nodes in t.order and returns their fixed
// sums, indexed by node, to which the normalised scores are added.
func (t *ScoreTable) scratchTotals() []int64 {
	t.order = t.order[:0]
	t.next = resizeInts(t.next, len(t.names))
	next := t.next
	for i, ok := range t.live {
		if ok {
			t.order = append(t.order, i)
			next[i] = t.fixed[i]
		}
	}
	return next
}

// normalise runs the j-th normalising plugin (k-th active) over the live
// nodes' column and adds its weighted scores to next.
func (t *ScoreTable) normalise(ctx context.Context, state fwk.CycleState, pod *v1.Pod, j, k int, next []int64) *fwk.Status {
	sc := t.n.scorers[t.active[k]]
	t.scratch = resize(t.scratch, len(t.order))
	for p, i := range t.order {
		t.scratch[p] = t.cols[j][i]
	}
	if st := sc.pl.ScoreExtensions().NormalizeScore(ctx, state, pod, t.scratch); !st.IsSuccess() {
		return fwk.AsStatus(fmt.Errorf("normalising the scores of plugin %q: %w", sc.name, st.AsError()))
	}
	for p, i := range t.order {
		s := t.scratch[p].Score
		if s > fwk.MaxScore || s < fwk.MinScore {
			return outOfRange(sc.name, s)
		}
		next[i] += s * sc.weight
	}
	return nil
}

func outOfRange(plugin string, s int64) *fwk.Status {
	return fwk.AsStatus(fmt.Errorf("plugin %q: normalised score %d is outside [%d, %d]", plugin, s, fwk.MinScore, fwk.MaxScore))
}

func resizeInts(l []int64, n int) []int64 {
	if cap(l) < n {
		return make([]int64, n)
	}
	return l[:n]
}

func resizeCols(cols []fwk.NodeScoreList, k, n int) []fwk.NodeScoreList {
	for len(cols) < k {
		cols = append(cols, nil)
	}
	cols = cols[:k]
	for j := range cols {
		cols[j] = resize(cols[j], n)
	}
	return cols
}
