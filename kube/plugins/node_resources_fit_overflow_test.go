package plugins

import (
	"math"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// TestNodeResourcesFitRefusesInvalidRequests: a request that overflows
// int64 (or is negative) is refused on every node with its reason, even
// on a node whose allocatable was itself clamped to MaxInt64.
func TestNodeResourcesFitRefusesInvalidRequests(t *testing.T) {
	huge := mkNode("huge", allocatable("cpu", "1e18", "memory", "100E", "pods", "110"))
	small := mkNode("small", allocatable("cpu", "4", "memory", "16Gi", "pods", "110"))
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		reason string
	}{
		{"cpu 1e18", mkPod("p", requesting("cpu", "1e18")), "invalid resource request cpu=1e18: overflows int64 milli-units"},
		{"cpu 100P", mkPod("p", requesting("cpu", "100P")), "invalid resource request cpu=100P: overflows int64 milli-units"},
		{"cpu max int64", mkPod("p", requesting("cpu", "9223372036854775807")), "invalid resource request cpu=9223372036854775807: overflows int64 milli-units"},
		{"memory 10E", mkPod("p", requesting("memory", "10E")), "invalid resource request memory=10E: overflows int64"},
		{"memory over max int64 by one", mkPod("p", requesting("memory", "9223372036854775808")), "invalid resource request memory=9223372036854775808: overflows int64"},
		{"negative cpu", mkPod("p", requesting("cpu", "-1")), "invalid resource request cpu=-1: is negative"},
		{"two containers overflowing together", mkPod("p", requesting("memory", "5E"), requesting("memory", "5E")), "invalid resource request memory=10E: overflows int64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, pi := NewNodeResourcesFit(LeastAllocated), mustPodInfo(t, tc.pod)
			wantStatus(t, pl.PreFilter(ctx, framework.NewCycleState(), pi, fakeSnapshot{}), framework.UnschedulableAndUnresolvable, tc.reason)
			for _, n := range []*v1.Node{huge, small} {
				wantStatus(t, pl.Filter(ctx, framework.NewCycleState(), pi, nodeInfo(t, n)), framework.UnschedulableAndUnresolvable, tc.reason)
			}
		})
	}
	t.Run("max int64 milli-cpu is valid and fits only the huge node", func(t *testing.T) {
		pl, pi := NewNodeResourcesFit(LeastAllocated), mustPodInfo(t, mkPod("p", requesting("cpu", "9223372036854775807m")))
		wantStatus(t, pl.PreFilter(ctx, framework.NewCycleState(), pi, fakeSnapshot{}), framework.Success)
		wantStatus(t, pl.Filter(ctx, framework.NewCycleState(), pi, nodeInfo(t, huge)), framework.Success)
		wantStatus(t, pl.Filter(ctx, framework.NewCycleState(), pi, nodeInfo(t, small)), framework.Unschedulable, ReasonInsufficientCPU)
	})
}

// TestNodeResourcesFitBoundOverflowFillsTheNode: after a pod requesting
// 9223372036854775807 cpus is bound (by someone else) to a 1-cpu node, no
// 1-cpu pod fits there; the accounting does not wrap to a negative sum.
func TestNodeResourcesFitBoundOverflowFillsTheNode(t *testing.T) {
	pl := NewNodeResourcesFit(LeastAllocated)
	node := mkNode("n", allocatable("cpu", "1", "memory", "4Gi", "pods", "110"))
	one := mkPod("one", requesting("cpu", "1"))
	ni := nodeInfo(t, node, mkPod("bad", requesting("cpu", "9223372036854775807")))
	wantStatus(t, pl.Filter(ctx, framework.NewCycleState(), mustPodInfo(t, one), ni), framework.Unschedulable, ReasonInsufficientCPU)
	// Two large valid requests whose sum overflows: the second is refused.
	half := mkPod("half", requesting("memory", "5E"))
	ni = nodeInfo(t, mkNode("n", allocatable("cpu", "1", "memory", "9E", "pods", "110")), half)
	wantStatus(t, pl.Filter(ctx, framework.NewCycleState(), mustPodInfo(t, mkPod("other", requesting("memory", "5E"))), ni), framework.Unschedulable, ReasonInsufficientMemory)
}

// TestScoreOnHugeNodes: scoring stays in 0..MaxNodeScore on nodes whose
// allocatable is near or at MaxInt64, and on sums that saturate.
func TestScoreOnHugeNodes(t *testing.T) {
	for _, strategy := range []ScoringStrategy{LeastAllocated, BalancedAllocation} {
		for _, tc := range []struct {
			name   string
			node   *v1.Node
			placed []*v1.Pod
			pod    *v1.Pod
			want   int64
		}{
			{"empty huge node", mkNode("n", allocatable("cpu", "1e18", "memory", "100E", "pods", "110")), nil,
				mkPod("p", requesting("cpu", "1", "memory", "1Gi")), map[ScoringStrategy]int64{LeastAllocated: 99, BalancedAllocation: 99}[strategy]},
			{"node full to MaxInt64", mkNode("n", allocatable("cpu", "9223372036854775807m", "memory", "9223372036854775807", "pods", "110")),
				[]*v1.Pod{mkPod("a", requesting("cpu", "9223372036854775807m", "memory", "9223372036854775807"))},
				mkPod("p", requesting("cpu", "1", "memory", "1Gi")), map[ScoringStrategy]int64{LeastAllocated: 0, BalancedAllocation: 100}[strategy]},
		} {
			t.Run(strategy.String()+"/"+tc.name, func(t *testing.T) {
				got, st := NewNodeResourcesFit(strategy).Score(ctx, framework.NewCycleState(), mustPodInfo(t, tc.pod), nodeInfo(t, tc.node, tc.placed...))
				wantStatus(t, st, framework.Success)
				if got != tc.want {
					t.Fatalf("score %d, want %d", got, tc.want)
				}
			})
		}
	}
	if got := freeScore(math.MaxInt64, math.MaxInt64); got != framework.MaxNodeScore {
		t.Fatalf("freeScore(max, max) = %d", got)
	}
}

// TestNodeResourcesFitHintsIgnoreInvalidPods: no node or other pod can
// make an invalid request fit; only the pod's own update may.
func TestNodeResourcesFitHintsIgnoreInvalidPods(t *testing.T) {
	pl := NewNodeResourcesFit(LeastAllocated)
	bad := mkPod("p", requesting("cpu", "1e18"))
	runHints(t, pl, evNodeAdd, []hintCase{
		{"huge node added", bad, nil, mkNode("n", allocatable("cpu", "1e18", "pods", "110")), schedq.HintSkip},
	})
	runHints(t, pl, evAssignedDelete, []hintCase{
		{"bound pod deleted", bad, mkPod("q", onNode("n"), requesting("cpu", "1")), nil, schedq.HintSkip},
	})
	runHints(t, pl, evOwnScale, []hintCase{
		{"own update", bad, bad, mkPod("p", requesting("cpu", "1")), schedq.HintQueue},
	})
}
