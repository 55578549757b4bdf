package plugins

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

func names[P framework.Plugin](ps []P) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name())
	}
	return out
}

func TestDefault(t *testing.T) {
	p := Default(LeastAllocated)
	for _, tc := range []struct {
		point string
		got   []string
		want  []string
	}{
		{"PreEnqueue", names(p.PreEnqueue), []string{"SchedulingGates"}},
		{"PreFilter", names(p.PreFilter), []string{"UnsupportedConstraints", "NodeAffinity", "NodeResourcesFit", "InterPodAffinity"}},
		{"Filter", names(p.Filter), []string{"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeResourcesFit", "InterPodAffinity"}},
		{"Score", names(p.Score), []string{"NodeResourcesFit"}},
		{"Enqueue", names(p.Enqueue), []string{"SchedulingGates", "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeResourcesFit", "InterPodAffinity", "GangScheduling"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.point, tc.got, tc.want)
		}
	}
	hints := p.Hints()
	if len(hints) != len(p.Enqueue) {
		t.Errorf("Hints has %d plugins, want %d", len(hints), len(p.Enqueue))
	}
	for name, regs := range hints {
		for i, r := range regs {
			if r.Fn == nil {
				t.Errorf("%s[%d] (%s) has no hint function", name, i, r.Event.Label)
			}
		}
	}
	if (PrioritySort{}).Name() != "PrioritySort" {
		t.Error("PrioritySort is misnamed")
	}
}

// TestQueueWakesOnlyHelpedPods drives a real queue: pods rejected by
// different plugins are parked, and each event moves only those it can help.
func TestQueueWakesOnlyHelpedPods(t *testing.T) {
	plugins := Default(LeastAllocated)
	q, err := schedq.New(schedq.Config[types.NamespacedName, *v1.Pod]{
		Key:        framework.Key,
		Priority:   framework.Priority,
		Hints:      plugins.Hints(),
		Match:      clusterevent.Match,
		PreEnqueue: []schedq.PreEnqueue[*v1.Pod]{{Name: "SchedulingGates", Admit: SchedulingGates{}.PreEnqueue}},
		// The scheduler classifies pod updates; this test needs only one kind.
		UpdateEvents: func(oldPod, newPod *v1.Pod) []schedq.Event {
			if len(oldPod.Spec.SchedulingGates) > 0 && len(newPod.Spec.SchedulingGates) == 0 {
				return []schedq.Event{evOwnGatesRemoved}
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()

	gatedPod := mkPod("gated", gated("wait"))
	rejected := map[string]string{
		"big":      "NodeResourcesFit",
		"affine":   "InterPodAffinity",
		"picky":    "TaintToleration",
		"cordoned": "NodeUnschedulable",
		"ssd":      "NodeAffinity",
		"pinned":   "NodeName",
	}
	pods := map[string]*v1.Pod{
		"big":      mkPod("big", requesting("cpu", "4")),
		"affine":   mkPod("affine", withAffinity(term(zoneKey, "app", "web"))),
		"picky":    mkPod("picky"),
		"cordoned": mkPod("cordoned"),
		"ssd":      mkPod("ssd", nodeSelector("disk", "ssd")),
		"pinned":   mkPod("pinned", onNode("n9")),
	}
	for _, p := range pods {
		if err := q.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Add(gatedPod); err != nil {
		t.Fatal(err)
	}
	for range pods {
		ended, stop := context.WithCancel(context.Background())
		stop() // Pop without blocking
		info, err := q.Pop(ended)
		if err != nil {
			t.Fatalf("Pop: %v", err)
		}
		f := schedq.Failure{UnschedulablePlugins: []string{rejected[info.Item.Name]}}
		if err := q.Requeue(info, f); err != nil {
			t.Fatal(err)
		}
	}
	where := func(name string) schedq.Location {
		_, loc, _ := q.Get(types.NamespacedName{Namespace: "default", Name: name})
		return loc
	}
	expect := func(step string, moved ...string) {
		t.Helper()
		for name := range pods {
			want := schedq.InUnschedulable
			if slices.Contains(moved, name) {
				want = schedq.InBackoff
			}
			if got := where(name); got != want && !(want == schedq.InBackoff && got == schedq.InActive) {
				t.Errorf("after %s: %s is %v, want %v", step, name, got, want)
			}
		}
		if got := where("gated"); got != schedq.InGated && !slices.Contains(moved, "gated") {
			t.Errorf("after %s: gated is %v, want gated", step, got)
		}
	}
	expect("the failed attempts")

	// A small, tainted node without labels helps nobody.
	small := mkNode("n1", allocatable("cpu", "1", "pods", "10"), tainted(v1.Taint{Key: "x", Effect: v1.TaintEffectNoSchedule}), cordoned)
	must(t, q.Move(evNodeAdd, nil, small, nil))
	expect("adding a small tainted cordoned node")

	// A big untainted node without a zone label helps big and picky, not
	// affine (no topology key), ssd (no label) or pinned (other name).
	bigNode := mkNode("n2", allocatable("cpu", "8", "pods", "10"))
	must(t, q.Move(evNodeAdd, nil, bigNode, nil))
	expect("adding a big node", "big", "picky", "cordoned")

	// Labelling it with disk=ssd helps ssd only.
	must(t, q.Move(evNodeLabel, bigNode, mkNode("n2", allocatable("cpu", "8", "pods", "10"), nodeLabels("disk", "ssd")), nil))
	expect("labelling the node ssd", "big", "picky", "cordoned", "ssd")

	// A web pod landing helps affine.
	must(t, q.Move(evAssignedAdd, nil, mkPod("web", onNode("n2"), podLabels("app", "web")), nil))
	expect("a web pod landing", "big", "picky", "cordoned", "ssd", "affine")

	// Removing the gate admits the gated pod.
	must(t, q.Update(gatedPod, mkPod("gated")))
	if got := where("gated"); got == schedq.InGated || got == schedq.Location(0) {
		t.Errorf("after removing the gate: gated is %v", got)
	}
	if got := where("pinned"); got != schedq.InUnschedulable {
		t.Errorf("pinned is %v, want unschedulable", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
