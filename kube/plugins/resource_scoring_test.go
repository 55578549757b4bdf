package plugins

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq/kube/framework"
)

func TestLeastAllocatedScore(t *testing.T) {
	node := func(cpu, mem string, pods ...*v1.Pod) *framework.NodeInfo {
		return nodeInfo(t, mkNode("n", allocatable("cpu", cpu, "memory", mem, "pods", "110")), pods...)
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		node *framework.NodeInfo
		want int64
	}{
		{"empty node", mkPod("p", requesting("cpu", "1", "memory", "1Gi")), node("4", "4Gi"), (75 + 75) / 2},
		{"half used", mkPod("p", requesting("cpu", "1", "memory", "1Gi")), node("4", "4Gi", mkPod("a", requesting("cpu", "1", "memory", "1Gi"))), (50 + 50) / 2},
		{"more than allocatable scores 0", mkPod("p", requesting("cpu", "8", "memory", "1Gi")), node("4", "4Gi"), (0 + 75) / 2},
		// No requests: 100m and 200Mi count, on 1 cpu and 1000Mi: 90 and 80.
		{"pod without requests", mkPod("p", requesting()), node("1", "1000Mi"), (90 + 80) / 2},
		{"placed pod without requests", mkPod("p", requesting("cpu", "100m", "memory", "200Mi")), node("1", "1000Mi", mkPod("a", requesting())), (80 + 60) / 2},
		{"node without memory", mkPod("p", requesting("cpu", "1", "memory", "1Gi")), node("4", "0"), 75},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, pi, state := NewNodeResourcesFit(LeastAllocated), mustPodInfo(t, tc.pod), framework.NewCycleState()
			wantStatus(t, pl.PreFilter(ctx, state, pi, fakeSnapshot{}), framework.Success)
			got, st := pl.Score(ctx, state, pi, tc.node)
			wantStatus(t, st, framework.Success)
			if got != tc.want {
				t.Fatalf("score = %d, want %d", got, tc.want)
			}
			if noState, _ := pl.Score(ctx, framework.NewCycleState(), pi, tc.node); noState != got {
				t.Fatalf("score without PreFilter = %d, want %d", noState, got)
			}
		})
	}
}

func TestBalancedAllocationScore(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		want int64
	}{
		{"equal fractions", mkPod("p", requesting("cpu", "2", "memory", "2Gi")), mkNode("n", allocatable("cpu", "4", "memory", "4Gi")), 100},
		// cpu 3/4, memory 1/4: standard deviation 0.25.
		{"unequal fractions", mkPod("p", requesting("cpu", "3", "memory", "1Gi")), mkNode("n", allocatable("cpu", "4", "memory", "4Gi")), 75},
		{"fractions capped at 1", mkPod("p", requesting("cpu", "8", "memory", "0")), mkNode("n", allocatable("cpu", "4", "memory", "4Gi")), 50},
		{"one resource only", mkPod("p", requesting("cpu", "3")), mkNode("n", allocatable("cpu", "4")), 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, pi := NewNodeResourcesFit(BalancedAllocation), mustPodInfo(t, tc.pod)
			got, st := pl.Score(ctx, framework.NewCycleState(), pi, nodeInfo(t, tc.node))
			wantStatus(t, st, framework.Success)
			if got != tc.want {
				t.Fatalf("score = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestScoringOrder ranks the same nodes by both strategies.
func TestScoringOrder(t *testing.T) {
	alloc := allocatable("cpu", "8", "memory", "8Gi", "pods", "110")
	nodes := []*framework.NodeInfo{
		// busy: 6 of 8 cpu and memory used.
		nodeInfo(t, mkNode("busy", alloc), mkPod("a", requesting("cpu", "6", "memory", "6Gi"))),
		// empty: nothing used.
		nodeInfo(t, mkNode("empty", alloc)),
		// skewed: cpu 5/8 used, memory none.
		nodeInfo(t, mkNode("skewed", alloc), mkPod("b", requesting("cpu", "5"))),
		// cpuHeavy: cpu 3/8 used, memory 0: the pod's memory evens it out.
		nodeInfo(t, mkNode("cpuHeavy", alloc), mkPod("c", requesting("cpu", "3"))),
	}
	pod := mustPodInfo(t, mkPod("p", requesting("cpu", "1", "memory", "4Gi")))
	rank := func(strategy ScoringStrategy) []string {
		pl, state := NewNodeResourcesFit(strategy), framework.NewCycleState()
		wantStatus(t, pl.PreFilter(ctx, state, pod, fakeSnapshot{nodes: nodes}), framework.Success)
		type scored struct {
			name  string
			score int64
		}
		var all []scored
		for _, n := range nodes {
			s, st := pl.Score(ctx, state, pod, n)
			wantStatus(t, st, framework.Success)
			all = append(all, scored{n.Name(), s})
		}
		slices.SortStableFunc(all, func(a, b scored) int { return int(b.score - a.score) })
		var names []string
		for _, s := range all {
			names = append(names, s.name)
		}
		return names
	}
	if got, want := rank(LeastAllocated), []string{"empty", "cpuHeavy", "skewed", "busy"}; !slices.Equal(got, want) {
		t.Errorf("LeastAllocated order = %v, want %v", got, want)
	}
	// Fractions of cpu and memory after the pod: cpuHeavy 4/8 and 4/8 (100),
	// busy 7/8 and 10/8 capped to 1 (93), skewed 6/8 and 4/8 (87), empty 1/8
	// and 4/8 (81).
	if got, want := rank(BalancedAllocation), []string{"cpuHeavy", "busy", "skewed", "empty"}; !slices.Equal(got, want) {
		t.Errorf("BalancedAllocation order = %v, want %v", got, want)
	}
}

func TestUnknownStrategy(t *testing.T) {
	pi := mustPodInfo(t, mkPod("p"))
	_, st := NewNodeResourcesFit(ScoringStrategy(7)).Score(ctx, framework.NewCycleState(), pi, nodeInfo(t, mkNode("n")))
	if st.IsSuccess() || st.Code != framework.Error {
		t.Fatalf("status = %v, want an error", st)
	}
	if got := ScoringStrategy(7).String(); got != "ScoringStrategy(7)" {
		t.Fatalf("String = %q", got)
	}
}
