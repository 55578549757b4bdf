package scheduler

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/profile"
)

func TestUseFrameworkHints(t *testing.T) {
	fw := defaultFramework(t)
	qc := QueueConfig()
	if len(qc.Hints["NodePorts"]) != 0 {
		t.Fatal("QueueConfig has NodePorts hints before UseFrameworkHints")
	}
	if err := UseFrameworkHints(context.Background(), &qc, fw, klog.Background()); err != nil {
		t.Fatal(err)
	}
	t.Run("upstream-only plugins get hints", func(t *testing.T) {
		for _, name := range []string{"NodePorts", "PodTopologySpread", "VolumeBinding", "DynamicResources"} {
			if len(qc.Hints[name]) == 0 {
				t.Errorf("%s: no hints", name)
			}
		}
	})
	t.Run("schedq's own plugins keep theirs", func(t *testing.T) {
		if len(qc.Hints["GangScheduling"]) == 0 {
			t.Error("GangScheduling lost its hints")
		}
	})
	t.Run("a plugin takes upstream's registrations", func(t *testing.T) {
		up, _, err := profile.QueueHints(context.Background(), fw.Framework(), klog.Background())
		if err != nil {
			t.Fatal(err)
		}
		labels := func(name string, m map[string][]schedq.EventHint[*v1.Pod]) (out []string) {
			for _, h := range m[name] {
				out = append(out, h.Event.Label)
			}
			return out
		}
		if got, want := labels("NodeResourcesFit", qc.Hints), labels("NodeResourcesFit", up); !slices.Equal(got, want) {
			t.Errorf("NodeResourcesFit hears %v, want upstream's %v", got, want)
		}
	})
	t.Run("one gate per name", func(t *testing.T) {
		seen := map[string]bool{}
		for _, g := range qc.PreEnqueue {
			if seen[g.Name] {
				t.Errorf("gate %s twice", g.Name)
			}
			seen[g.Name] = true
		}
		if !seen["SchedulingGates"] {
			t.Error("no SchedulingGates gate")
		}
	})
}
