package scheduler

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq/kube/framework"
)

// skipper is a PreFilter and Filter plugin that says Skip when told to,
// and whose Filter counts its calls and fails every node.
type skipper struct {
	name  string
	skip  *bool
	calls *int
}

func (p skipper) Name() string { return p.name }
func (p skipper) PreFilter(context.Context, *framework.CycleState, *framework.PodInfo, framework.Snapshot) *framework.Status {
	if *p.skip {
		return framework.NewStatus(framework.Skip)
	}
	return nil
}
func (p skipper) Filter(context.Context, *framework.CycleState, *framework.PodInfo, *framework.NodeInfo) *framework.Status {
	*p.calls++
	return framework.NewStatus(framework.Unschedulable, p.name+" says no")
}

// TestPreFilterSkipSparesFilter: a plugin whose PreFilter says Skip is not
// asked to Filter in that cycle, the other filters still run, and the next
// cycle asks it again.
func TestPreFilterSkipSparesFilter(t *testing.T) {
	skipA, skipB := true, true
	var callsA, callsB int
	a := skipper{name: "A", skip: &skipA, calls: &callsA}
	b := skipper{name: "B", skip: &skipB, calls: &callsB}
	c := NewCache()
	for _, n := range []string{"n1", "n2"} {
		c.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	s := New(nil, c, nil, nil, Options{Profile: framework.Profile{
		PreFilter: []framework.PreFilterPlugin{a, b},
		Filter:    []framework.FilterPlugin{a, b},
	}})
	pi, err := framework.NewPodInfo(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	cycle := func() Outcome {
		var out Outcome
		c.View(func(snap framework.Snapshot) { out = s.findNode(context.Background(), pi, snap) })
		return out
	}
	if out := cycle(); out.Result != Scheduled || callsA+callsB != 0 {
		t.Fatalf("both skipped: %+v, Filter calls A %d, B %d", out, callsA, callsB)
	}
	skipA = false
	if out := cycle(); out.Result != Unschedulable || callsA != 2 || callsB != 0 {
		t.Fatalf("B skipped: %+v, Filter calls A %d, B %d", out, callsA, callsB)
	}
	skipA, skipB = true, false
	if out := cycle(); out.Result != Unschedulable || callsA != 2 || callsB != 2 {
		t.Fatalf("A skipped: %+v, Filter calls A %d, B %d", out, callsA, callsB)
	}
	if len(s.o.Profile.Filter) != 2 {
		t.Fatal("skipping changed the profile")
	}
}
