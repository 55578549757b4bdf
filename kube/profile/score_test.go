package profile

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// TestScoreNodesAsFramework: ScoreNodes answers exactly what the
// framework's RunScorePlugins does (names, raw scores, weighted scores,
// totals), for a pod that every normalising plugin scores and a plain
// one, whose state skips some.
func TestScoreNodesAsFramework(t *testing.T) {
	f, nodes := normFramework(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
	}{
		{name: "rich", pod: pod("rich", "", rich)},
		{name: "plain", pod: pod("plain", "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prep := scorePod(t, f, tc.pod, nodes) // the framework's answer
			got, st := f.ScoreNodes(ctx, prep.state, tc.pod, nodes)
			if !st.IsSuccess() {
				t.Fatal(st.AsError())
			}
			if !reflect.DeepEqual(got, prep.scores) {
				t.Fatalf("ScoreNodes answers\n%+v\nthe framework\n%+v", got, prep.scores)
			}
		})
	}
}

// normPanics is a score plugin whose NormalizeScore panics, its scores
// in range: the framework would place by them, not normalised.
type normPanics struct{}

func (normPanics) Name() string { return "NormPanics" }
func (normPanics) Score(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) (int64, *fwk.Status) {
	return 7, nil
}
func (p normPanics) ScoreExtensions() fwk.ScoreExtensions { return p }
func (normPanics) NormalizeScore(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeScoreList) *fwk.Status {
	panic("boom at NormalizeScore")
}

// TestNormalizeScorePanicFailsTheCall: a panic in a NormalizeScore fails
// Schedule with the panic's reason, every time (it is run on the
// caller's goroutine). Before, it ran on the framework's parallelizer,
// its record in the panic sink landed after the framework's call
// returned, and Schedule mostly answered the scores not normalised.
func TestNormalizeScorePanicFailsTheCall(t *testing.T) {
	f := withScorer(t, "NormPanics", normPanics{})
	for range 20 {
		res, err := f.Schedule(context.Background(), pod("p", ""))
		if err == nil || !strings.Contains(err.Error(), "boom at NormalizeScore") {
			t.Fatalf("Schedule: %v (best %q), want the NormalizeScore panic", err, res.Best)
		}
	}
}

// TestScoreNodesIntoAsFramework: ScoreNodesInto answers what the
// framework does whatever buf held before (another pod's answer, with
// tie-breakers set, as the scheduler's last cycle leaves it), and makes
// its answer in buf's memory when buf is long enough.
func TestScoreNodesIntoAsFramework(t *testing.T) {
	f, nodes := normFramework(t)
	ctx := context.Background()
	rich, plain := pod("rich", "", rich), pod("plain", "")
	for _, tc := range []struct {
		name        string
		before, pod *v1.Pod
		short       bool
	}{
		{name: "rich after plain", before: plain, pod: rich},
		{name: "plain after rich", before: rich, pod: plain},
		{name: "rich after rich", before: rich, pod: rich},
		{name: "buf too short", before: plain, pod: rich, short: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := scorePod(t, f, tc.before, nodes)
			buf, st := f.ScoreNodes(ctx, prev.state, tc.before, nodes)
			if !st.IsSuccess() {
				t.Fatal(st.AsError())
			}
			for i := range buf {
				buf[i].Randomizer = i + 1
			}
			if tc.short {
				buf = buf[: len(buf)-1 : len(buf)-1]
			}
			prep := scorePod(t, f, tc.pod, nodes)
			got, st := f.ScoreNodesInto(ctx, prep.state, tc.pod, nodes, buf)
			if !st.IsSuccess() {
				t.Fatal(st.AsError())
			}
			if !reflect.DeepEqual(got, prep.scores) {
				t.Fatalf("ScoreNodesInto answers\n%+v\nthe framework\n%+v", got, prep.scores)
			}
			if inBuf := &got[0] == &buf[0]; inBuf == tc.short {
				t.Errorf("answer in buf's memory: %v, want %v", inBuf, !tc.short)
			}
		})
	}
}

// scorePanics is a score plugin whose Score panics on node n2.
type scorePanics struct{}

func (scorePanics) Name() string { return "ScorePanics" }
func (scorePanics) Score(_ context.Context, _ fwk.CycleState, _ *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	if ni.Node().Name == "n2" {
		panic("boom at Score")
	}
	return 7, nil
}
func (scorePanics) ScoreExtensions() fwk.ScoreExtensions { return nil }

// TestScoreNodesIntoPanicLeavesNoName: a node whose Score panicked has
// no name in ScoreNodesInto's answer (ScoredAll false) even when buf
// held a full answer before, so the caller repanics rather than place
// the pod by the scores buf held.
func TestScoreNodesIntoPanicLeavesNoName(t *testing.T) {
	f := withScorer(t, "ScorePanics", scorePanics{})
	nodes, err := f.Snapshot().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	p := pod("p", "")
	var n1 []fwk.NodeInfo
	for _, ni := range nodes {
		if ni.Node().Name == "n1" {
			n1 = append(n1, ni)
		}
	}
	prep := scorePod(t, f, p, n1) // n1 alone: no panic
	buf := []fwk.NodePluginScores{{Name: "n1"}, {Name: "n2"}}
	ctx := f.WithPanicSink(context.Background())
	got, st := f.ScoreNodesInto(ctx, prep.state, p, nodes, buf)
	if !st.IsSuccess() {
		t.Fatal(st.AsError())
	}
	if ScoredAll(got) {
		t.Fatalf("ScoredAll(%+v) after a Score panic, want false", got)
	}
}

// withScorer is kube-scheduler's default profile with pl added as a score
// plugin named name (weight 1), on nodes n1 and n2, closed when the test
// ends.
func withScorer(t *testing.T, name string, pl fwk.Plugin) *Framework {
	t.Helper()
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	prof := cfg.Profiles[0].DeepCopy()
	prof.Plugins.Score.Enabled = append(prof.Plugins.Score.Enabled, config.Plugin{Name: name, Weight: 1})
	c := Cluster{Nodes: []*v1.Node{node("n1", "a"), node("n2", "b")}}
	f, err := NewFrameworkOn(context.Background(), prof, Setup{
		Snapshot: backendcache.NewSnapshot(c.Pods, c.Nodes),
		Objects:  podsAndNodes(c),
		Plugins: frameworkruntime.Registry{name: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return pl, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
