package profile

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"
)

// ScoreTable keeps the raw scores of a fixed list of candidate nodes from
// cycle to cycle, some of them live, and gives the live ones' total
// scores as the framework's NormalizeScores would give them over the live
// nodes: it serves the scheduler's batch, which re-scores one node per
// cycle among a few hundred. The table keeps each plugin's raw scores in
// a column and the weighted sum of the plugins without a NormalizeScore
// per node, so that a cycle costs one NormalizeScore call per normalising
// plugin over a copied column and one addition per node and such plugin,
// not a walk of every node's scores. A column whose normaliser gives
// each node a score that depends on the column's scores alone
// (pureNormaliser) is not normalised again while its scores and the live
// nodes are the same: a cycle that changes neither costs O(nodes Set x
// plugins).
//
// The normalisers see the live nodes in the table's order, not in the
// order a caller of the framework would list them: a NormalizeScore must
// not depend on the order of its list, nor change the nodes' names in it
// (none of the in-tree ones does).
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
	built  bool
	active []int
	norm   []int
	fixed  []int64
	cols   []fwk.NodeScoreList
	// pure tells, per normalising plugin, that its normaliser is
	// pureNormaliser's; stale that its column (or the live nodes) changed
	// since its list was last normalised, or that it never was.
	pure  []bool
	stale []bool
	calls int // NormalizeScore calls made, for tests

	// The live nodes in table order (order, positions in pos, -1 for a
	// node left out), valid while ordered: Kill and Set of a node not
	// live undo it. Each normalising plugin's column is copied by
	// position into its own list (lists), of which a cycle rewrites only
	// the scores, so that the copy writes no pointers; sums are the live
	// nodes' new totals by position.
	ordered bool
	order   []int
	pos     []int
	lists   []fwk.NodeScoreList
	sums    []int64
	mark    []bool
}

// NewScoreTable starts a table of the nodes of scores, every one live,
// with their RawScores (kept, not copied: the caller gives them up) and
// TotalScores as they are. Nil if the framework's score plugins are not
// known to it. If spare is not nil, the new table is made in its memory:
// spare must be a table of f that nothing uses any more.
// O(nodes).
func (f *Framework) NewScoreTable(scores []fwk.NodePluginScores, spare *ScoreTable) *ScoreTable {
	if f.norm == nil {
		return nil
	}
	t := spare
	if t == nil || t.n != f.norm {
		t = &ScoreTable{}
	}
	*t = ScoreTable{n: f.norm, names: resizeOf(t.names, len(scores)), raws: resizeOf(t.raws, len(scores)),
		live: resizeOf(t.live, len(scores)), totals: resizeOf(t.totals, len(scores)), dirty: t.dirty[:0],
		active: t.active[:0], norm: t.norm[:0], fixed: t.fixed, cols: t.cols, pure: t.pure[:0], stale: t.stale[:0],
		order: t.order[:0], pos: t.pos, lists: t.lists, sums: t.sums, mark: t.mark}
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
func (t *ScoreTable) Kill(i int) {
	if t.live[i] {
		t.live[i], t.ordered = false, false
	}
}

// Set gives node i new raw scores (kept) and makes it live. O(1).
func (t *ScoreTable) Set(i int, raw []fwk.PluginScore) {
	if !t.live[i] {
		t.live[i], t.ordered = true, false
	}
	t.raws[i] = raw
	t.dirty = append(t.dirty, i)
}

// Normalize sets the live nodes' totals as the framework's
// NormalizeScores would over them in state (its plugins not skipped, the
// same normalisers, weights and range checks, an error where it gives
// one), and reports whether the total of a node not Set since the last
// call changed. O(live nodes x normalising plugins), plus O(nodes x
// plugins) when the plugins state skips differ from the last call's;
// O(nodes Set x plugins) when the live nodes are the same and every
// normalising plugin is pure (pureNormaliser) with the same scores.
func (t *ScoreTable) Normalize(ctx context.Context, state fwk.CycleState, pod *v1.Pod) (changed bool, st *fwk.Status) {
	t.n.activate(state)
	if !t.built || !slices.Equal(t.active, t.n.active) {
		t.built, t.ordered = false, false
		t.active = append(t.active[:0], t.n.active...)
		t.norm, t.pure = t.norm[:0], t.pure[:0]
		for k, idx := range t.active {
			if pl := t.n.scorers[idx].pl; pl.ScoreExtensions() != nil {
				t.norm = append(t.norm, k)
				t.pure = append(t.pure, pureNormaliser(pl))
			}
		}
		t.stale = resizeOf(t.stale, len(t.norm))
		t.fixed = resizeOf(t.fixed, len(t.names))
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
	defer func() { t.dirty = t.dirty[:0] }()
	if !t.ordered {
		for j := range t.stale {
			t.stale[j] = true
		}
	}
	t.arrange()
	if !t.renormalises() {
		t.totalDirty()
		return false, nil
	}
	sums := t.sums
	for p, i := range t.order {
		sums[p] = t.fixed[i]
	}
	for j, k := range t.norm {
		if st := t.normalise(ctx, state, pod, j, k); st != nil {
			return false, st
		}
	}
	mark := t.markDirty(true)
	for p, i := range t.order {
		if sums[p] != t.totals[i] && !mark[i] {
			changed = true
		}
		t.totals[i] = sums[p]
	}
	t.markDirty(false)
	return changed, nil
}

// renormalises tells whether a normalising plugin's list must be
// normalised again: its normaliser is not pure, or its column is stale.
func (t *ScoreTable) renormalises() bool {
	for j := range t.norm {
		if !t.pure[j] || t.stale[j] {
			return true
		}
	}
	return false
}

// totalDirty sets the totals of the nodes Set since the last Normalize
// from their fixed sums and the normalised scores of the lists, which
// are current: the other nodes' totals are unchanged. Every such node
// is live, with its position (arrange).
func (t *ScoreTable) totalDirty() {
	for _, i := range t.dirty {
		total, p := t.fixed[i], t.pos[i]
		for j, k := range t.norm {
			total += t.lists[j][p].Score * t.n.scorers[t.active[k]].weight
		}
		t.totals[i] = total
	}
}

// load computes node i's fixed sum and its column entries for the active
// plugins, checking the range of the scores no normaliser changes, and
// marks stale the columns whose entry for i changed.
func (t *ScoreTable) load(i int) *fwk.Status {
	var fixed int64
	j := 0
	for k, idx := range t.active {
		sc := t.n.scorers[idx]
		ns := rawScore(t.names[i], t.raws[i], k, sc.name)
		if j < len(t.norm) && t.norm[j] == k {
			if t.cols[j][i] != ns {
				t.cols[j][i], t.stale[j] = ns, true
			}
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

// arrange brings the live nodes' order and the normalising plugins'
// lists up to date: all of them after a change of the live nodes or of
// the plugins, O(live nodes x normalising plugins), else only the names
// of the nodes Set since the last call, O(those x normalising plugins).
// Every node Set while the order holds is live and has a position.
func (t *ScoreTable) arrange() {
	if !t.ordered {
		t.order = t.order[:0]
		if cap(t.pos) < len(t.names) {
			t.pos = make([]int, len(t.names))
		}
		t.pos = t.pos[:len(t.names)]
		for i, ok := range t.live {
			t.pos[i] = -1
			if ok {
				t.pos[i] = len(t.order)
				t.order = append(t.order, i)
			}
		}
		t.lists = resizeCols(t.lists, len(t.norm), len(t.order))
		for j, list := range t.lists {
			for p, i := range t.order {
				list[p] = t.cols[j][i]
			}
		}
		t.sums = resizeOf(t.sums, len(t.order))
		t.ordered = true
		return
	}
	for _, i := range t.dirty {
		p := t.pos[i]
		for j, list := range t.lists {
			if list[p].Name != t.cols[j][i].Name {
				list[p].Name = t.cols[j][i].Name
			}
		}
	}
}

// markDirty sets (on) or clears the marks of the nodes Set since the
// last Normalize in a slice indexed by node, kept clear between calls,
// and returns it.
func (t *ScoreTable) markDirty(on bool) []bool {
	if len(t.mark) != len(t.names) {
		t.mark = resizeOf(t.mark, len(t.names))
		clear(t.mark)
	}
	for _, i := range t.dirty {
		t.mark[i] = on
	}
	return t.mark
}

// normalise runs the j-th normalising plugin (k-th active) over the live
// nodes' column, restored from their raw scores, unless it is pure and
// its column not stale (its list then holds the same normalised scores),
// and adds its weighted scores to the live nodes' sums. The plugin
// changes the scores of its list, never the names.
func (t *ScoreTable) normalise(ctx context.Context, state fwk.CycleState, pod *v1.Pod, j, k int) *fwk.Status {
	sc := t.n.scorers[t.active[k]]
	list, sums, w := t.lists[j], t.sums, sc.weight
	if t.pure[j] && !t.stale[j] {
		for p := range t.order {
			sums[p] += list[p].Score * w
		}
		return nil
	}
	col := t.cols[j]
	for p, i := range t.order {
		list[p].Score = col[i].Score
	}
	t.calls++
	if st := sc.pl.ScoreExtensions().NormalizeScore(ctx, state, pod, list); !st.IsSuccess() {
		return fwk.AsStatus(fmt.Errorf("normalising the scores of plugin %q: %w", sc.name, st.AsError()))
	}
	for p := range t.order {
		s := list[p].Score
		if s > fwk.MaxScore || s < fwk.MinScore {
			return outOfRange(sc.name, s)
		}
		sums[p] += s * w
	}
	t.stale[j] = false
	return nil
}

// pureNormaliser tells whether pl's NormalizeScore gives each node a
// score that depends on nothing but the scores of its list (not their
// order, the nodes' names, the pod or the cycle's state), so that a list
// of the same scores is normalised to the same scores again:
// kube-scheduler's TaintToleration, NodeAffinity and DynamicResources
// (draMemo's is upstream's), which scale each score by the list's largest.
func pureNormaliser(pl fwk.ScorePlugin) bool {
	switch pl.(type) {
	case *tainttoleration.TaintToleration, *nodeaffinity.NodeAffinity, *dynamicresources.DynamicResources, *draMemo:
		return true
	}
	return false
}

func outOfRange(plugin string, s int64) *fwk.Status {
	return fwk.AsStatus(fmt.Errorf("plugin %q: normalised score %d is outside [%d, %d]", plugin, s, fwk.MinScore, fwk.MaxScore))
}

// resizeOf returns l with length n, reallocated only if too small.
func resizeOf[T any](l []T, n int) []T {
	if cap(l) < n {
		return make([]T, n)
	}
	return l[:n]
}

func resizeCols(cols []fwk.NodeScoreList, k, n int) []fwk.NodeScoreList {
	for len(cols) < k {
		cols = append(cols, nil)
	}
	cols = cols[:k]
	for j := range cols {
		cols[j] = resizeOf(cols[j], n)
	}
	return cols
}
