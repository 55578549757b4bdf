package profile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// normCluster is a cluster in which every default score plugin with a
// normaliser has something to score: PreferNoSchedule taints, labels for
// preferred node affinity, zones and pods for topology spread and
// inter-pod affinity.
func normCluster(n int) Cluster {
	var c Cluster
	for i := range n {
		var taints []v1.Taint
		if i%3 == 0 {
			taints = append(taints, v1.Taint{Key: "spot", Value: "true", Effect: v1.TaintEffectPreferNoSchedule})
		}
		if i%5 == 0 {
			taints = append(taints, v1.Taint{Key: "old", Value: "true", Effect: v1.TaintEffectPreferNoSchedule})
		}
		nd := node(fmt.Sprintf("n%02d", i), fmt.Sprintf("z%d", i%4), taints...)
		nd.Labels["disk"] = []string{"ssd", "hdd", "nvme"}[i%3]
		if i%7 == 0 {
			delete(nd.Labels, zoneKey) // ignored by topology spread
		}
		c.Nodes = append(c.Nodes, nd)
		for j := range i % 4 {
			c.Pods = append(c.Pods, pod(fmt.Sprintf("on-%d-%d", i, j), nd.Name))
		}
	}
	return c
}

// rich is a pod that every normalising score plugin scores.
func rich(p *v1.Pod) {
	p.Spec.Tolerations = []v1.Toleration{{Key: "old", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectPreferNoSchedule}}
	p.Spec.Affinity = &v1.Affinity{
		NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
			{Weight: 5, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"ssd"}}}}},
			{Weight: 2, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"nvme"}}}}},
		}},
		PodAffinity: &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{
			{Weight: 3, PodAffinityTerm: v1.PodAffinityTerm{TopologyKey: zoneKey, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		}},
		PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{
			{Weight: 4, PodAffinityTerm: v1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		}},
	}
	p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: zoneKey,
		WhenUnsatisfiable: v1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
}

// normalising are the default score plugins with a NormalizeScore.
var normalising = []string{"TaintToleration", "NodeAffinity", "InterPodAffinity", "PodTopologySpread"}

// perturb replaces raw scores at random: ties, zeros, and for the
// normalising plugins large values (negative ones for InterPodAffinity);
// every 10th round, a score out of range for NodeResourcesFit, which has
// no normaliser; every 7th round a node may lose a raw score.
func perturb(rng *rand.Rand, scores []fwk.NodePluginScores, round int) {
	for i := range scores {
		raw := scores[i].RawScores
		for j := range raw {
			norm := slices.Contains(normalising, raw[j].Name)
			switch rng.IntN(4) {
			case 0:
				raw[j].Score = 0
			case 1:
				raw[j].Score = int64(rng.IntN(5))
			case 2:
				raw[j].Score = rng.Int64N(fwk.MaxNodeScore + 1)
				if norm {
					raw[j].Score = int64(rng.IntN(1000))
				}
				if raw[j].Name == "InterPodAffinity" {
					raw[j].Score -= 300
				}
			}
			if round%10 == 0 && raw[j].Name == "NodeResourcesFit" && rng.IntN(20) == 0 {
				raw[j].Score = fwk.MaxNodeScore + 1
			}
		}
		if round%7 == 0 && len(raw) > 0 && rng.IntN(10) == 0 {
			k := rng.IntN(len(raw))
			scores[i].RawScores = append(raw[:k:k], raw[k+1:]...)
		}
	}
}

func cloneScores(in []fwk.NodePluginScores) []fwk.NodePluginScores {
	out := make([]fwk.NodePluginScores, len(in))
	for i, s := range in {
		out[i] = fwk.NodePluginScores{Name: s.Name, RawScores: append([]fwk.PluginScore(nil), s.RawScores...),
			Scores: append([]fwk.PluginScore(nil), s.Scores...), TotalScore: s.TotalScore, Randomizer: s.Randomizer}
	}
	return out
}

// prepared is a pod with its cycle state and raw scores after PreFilter,
// PreScore and Score.
type prepared struct {
	pod    *v1.Pod
	state  fwk.CycleState
	scores []fwk.NodePluginScores
}

// normFramework is the default profile's framework on normCluster(40),
// with its snapshot's nodes.
func normFramework(t *testing.T) (*Framework, []fwk.NodeInfo) {
	t.Helper()
	f := defaultFramework(t, normCluster(40))
	nodes, err := f.Snapshot().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	return f, nodes
}

// scorePod runs f's PreFilter, PreScore and Score for p on nodes.
func scorePod(t *testing.T, f *Framework, p *v1.Pod, nodes []fwk.NodeInfo) prepared {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	if _, st, _ := f.fwk.RunPreFilterPlugins(ctx, state, p); !st.IsSuccess() {
		t.Fatal(st.AsError())
	}
	if st := f.fwk.RunPreScorePlugins(ctx, state, p, nodes); !st.IsSuccess() {
		t.Fatal(st.AsError())
	}
	scores, st := f.fwk.RunScorePlugins(ctx, state, p, nodes)
	if !st.IsSuccess() {
		t.Fatal(st.AsError())
	}
	return prepared{p, state, scores}
}

// TestScoreTableAsFramework: a ScoreTable's totals after each Normalize
// are exactly the framework's NormalizeScores totals over the live nodes,
// through random sequences of nodes re-scored (Set) and left out (Kill),
// with the skipped plugins changing between calls (a rich pod's state and
// a plain pod's), and Normalize's "changed" is never false when a total
// of a node not re-scored moved; every other table is made in the memory
// of the one before. Random raw scores as in
// TestNormalizeScoresAsFramework, where the framework errs the table errs.
func TestScoreTableAsFramework(t *testing.T) {
	f, nodes := normFramework(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	prep := func(p *v1.Pod) prepared { return scorePod(t, f, p, nodes) }
	kinds := []prepared{prep(pod("rich", "", rich)), prep(pod("plain", ""))}
	normalised, refused := 0, 0
	var spare *ScoreTable
	for round := range 60 {
		first := kinds[round%2]
		tab := f.NewScoreTable(cloneScores(first.scores), spare) // odd rounds: in the last round's memory
		spare = nil
		if round%2 == 0 {
			spare = tab
		}
		live := make([]bool, len(nodes))
		raws := make([][]fwk.PluginScore, len(nodes))
		for i := range nodes {
			live[i], raws[i] = true, first.scores[i].RawScores
		}
		prev := map[int]int64{}
		for step := range 40 {
			kind := first
			if rng.IntN(8) == 0 {
				kind = kinds[rng.IntN(2)]
			}
			dirty := map[int]bool{}
			for range 1 + rng.IntN(3) {
				i := rng.IntN(len(nodes))
				if rng.IntN(6) == 0 {
					tab.Kill(i)
					live[i] = false
					continue
				}
				fresh := cloneScores(kind.scores[i : i+1])
				perturb(rng, fresh, step)
				tab.Set(i, fresh[0].RawScores)
				live[i], raws[i], dirty[i] = true, fresh[0].RawScores, true
			}
			var want []fwk.NodePluginScores
			var idx []int
			for i := range nodes {
				if live[i] {
					want = append(want, fwk.NodePluginScores{Name: nodes[i].Node().Name, RawScores: raws[i]})
					idx = append(idx, i)
				}
			}
			rng.Shuffle(len(want), func(a, b int) { want[a], want[b] = want[b], want[a]; idx[a], idx[b] = idx[b], idx[a] })
			wantSt := f.fwk.NormalizeScores(ctx, kind.state, kind.pod, want)
			changed, gotSt := tab.Normalize(ctx, kind.state, kind.pod)
			if wantSt.IsSuccess() != gotSt.IsSuccess() {
				t.Fatalf("round %d step %d: status %v, framework's %v", round, step, gotSt, wantSt)
			}
			if !wantSt.IsSuccess() {
				refused++
				break // the batch ends on an error
			}
			normalised++
			moved := false
			for k, i := range idx {
				if got := tab.Total(i); got != want[k].TotalScore {
					t.Fatalf("round %d step %d: %s total %d, framework's %d", round, step, tab.Name(i), got, want[k].TotalScore)
				}
				if old, ok := prev[i]; ok && !dirty[i] && old != want[k].TotalScore {
					moved = true
				}
			}
			if moved && !changed {
				t.Fatalf("round %d step %d: a total moved but Normalize says nothing changed", round, step)
			}
			clear(prev)
			for k, i := range idx {
				prev[i] = want[k].TotalScore
			}
		}
	}
	if normalised < 500 || refused == 0 {
		t.Errorf("%d normalisations compared, %d refused: the cases do not cover both", normalised, refused)
	}
}

// TestScoreTableSkipsPureColumns: while the live nodes stay the same and
// only scores without a normaliser change (as when a batch re-scores the
// node its last pod went to: NodeResourcesFit and BalancedAllocation
// move, TaintToleration's count of taints does not), a table whose
// normalising plugins are all pure calls no NormalizeScore, and its
// totals are still the framework's; a changed normalising score or a node
// left out normalises again.
func TestScoreTableSkipsPureColumns(t *testing.T) {
	f, nodes := normFramework(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	pr := scorePod(t, f, pod("plain", ""), nodes)
	p, state, first := pr.pod, pr.state, pr.scores
	tab := f.NewScoreTable(cloneScores(first), nil)
	if _, st := tab.Normalize(ctx, state, p); !st.IsSuccess() {
		t.Fatal(st.AsError())
	}
	if len(tab.norm) == 0 || slices.Contains(tab.pure, false) {
		t.Fatalf("normalising plugins %v, pure %v: want some, all pure", tab.norm, tab.pure)
	}
	live := make([]bool, len(nodes))
	raws := make([][]fwk.PluginScore, len(nodes))
	for i := range nodes {
		live[i], raws[i] = true, first[i].RawScores
	}
	skipped, renormalised := 0, 0
	for step := range 200 {
		i := rng.IntN(len(nodes))
		fresh := append([]fwk.PluginScore(nil), raws[i]...)
		for j := range fresh {
			if !slices.Contains(normalising, fresh[j].Name) && fresh[j].Name != "DynamicResources" {
				fresh[j].Score = rng.Int64N(fwk.MaxNodeScore + 1)
			}
		}
		change := step%10 == 9 || !live[i] // a node left out comes back
		switch {
		case step%20 == 9:
			change = live[i] // a node left out again changes nothing
			tab.Kill(i)
			live[i] = false
		case step%10 == 9:
			for j := range fresh {
				if fresh[j].Name == "TaintToleration" {
					fresh[j].Score++
				}
			}
			fallthrough
		default:
			tab.Set(i, fresh)
			live[i], raws[i] = true, fresh
		}
		before := tab.calls
		if _, st := tab.Normalize(ctx, state, p); !st.IsSuccess() {
			t.Fatal(st.AsError())
		}
		var want []fwk.NodePluginScores
		var idx []int
		for i := range nodes {
			if live[i] {
				want = append(want, fwk.NodePluginScores{Name: nodes[i].Node().Name, RawScores: raws[i]})
				idx = append(idx, i)
			}
		}
		if st := f.fwk.NormalizeScores(ctx, state, p, want); !st.IsSuccess() {
			t.Fatal(st.AsError())
		}
		for k, i := range idx {
			if got := tab.Total(i); got != want[k].TotalScore {
				t.Fatalf("step %d: %s total %d, framework's %d", step, tab.Name(i), got, want[k].TotalScore)
			}
		}
		switch calls := tab.calls - before; {
		case change && calls == 0:
			t.Fatalf("step %d: a normalising score or the live nodes changed, and no NormalizeScore ran", step)
		case change:
			renormalised++
		case calls != 0:
			t.Fatalf("step %d: %d NormalizeScore calls for a change of scores without a normaliser, want 0", step, calls)
		default:
			skipped++
		}
	}
	if skipped < 150 || renormalised < 15 {
		t.Errorf("%d normalisations skipped, %d done: the cases do not cover both", skipped, renormalised)
	}
}
