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
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	prof := cfg.Profiles[0].DeepCopy()
	prof.Plugins.Score.Enabled = append(prof.Plugins.Score.Enabled, config.Plugin{Name: "NormPanics", Weight: 1})
	c := Cluster{Nodes: []*v1.Node{node("n1", "a"), node("n2", "b")}}
	f, err := NewFrameworkOn(context.Background(), prof, Setup{
		Snapshot: backendcache.NewSnapshot(c.Pods, c.Nodes),
		Objects:  podsAndNodes(c),
		Plugins: frameworkruntime.Registry{"NormPanics": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return normPanics{}, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for range 20 {
		res, err := f.Schedule(context.Background(), pod("p", ""))
		if err == nil || !strings.Contains(err.Error(), "boom at NormalizeScore") {
			t.Fatalf("Schedule: %v (best %q), want the NormalizeScore panic", err, res.Best)
		}
	}
}
