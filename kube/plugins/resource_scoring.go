package plugins

import (
	"context"
	"fmt"
	"math"
	"math/bits"

	"github.com/schedq/schedq/kube/framework"
)

// ScoringStrategy selects how NodeResourcesFit scores feasible nodes.
type ScoringStrategy int

const (
	// LeastAllocated favors nodes with more cpu and memory left after
	// placing the pod, both weighted 1. A pod or container without a cpu or
	// memory request counts as requesting DefaultMilliCPURequest or
	// DefaultMemoryRequest, so that empty pods still spread.
	LeastAllocated ScoringStrategy = iota
	// BalancedAllocation favors nodes whose cpu and memory would be used in
	// equal fractions after placing the pod. It uses the requests as they
	// are, like kube-scheduler's NodeResourcesBalancedAllocation.
	BalancedAllocation
)

// String names the strategy.
func (s ScoringStrategy) String() string {
	switch s {
	case LeastAllocated:
		return "LeastAllocated"
	case BalancedAllocation:
		return "BalancedAllocation"
	}
	return fmt.Sprintf("ScoringStrategy(%d)", int(s))
}

// The requests that LeastAllocated assumes for a container that sets none:
// kube-scheduler's values, kept with the pods' other figures in framework.
const (
	DefaultMilliCPURequest = framework.DefaultMilliCPURequest
	DefaultMemoryRequest   = framework.DefaultMemoryRequest
)

// Score rates node from 0 to framework.MaxNodeScore by the strategy. It
// reads the sums the node keeps, so it costs the same whatever the number
// of pods on the node.
func (pl *NodeResourcesFit) Score(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	alloc := [2]int64{node.Allocatable.MilliCPU, node.Allocatable.Memory}
	switch pl.strategy {
	case LeastAllocated:
		used, req := node.NonZeroRequested, pod.NonZeroRequests
		return leastAllocatedScore(sumOf(used, req), alloc), nil
	case BalancedAllocation:
		return balancedAllocationScore(sumOf(node.Requested, pod.Requests), alloc), nil
	}
	return 0, framework.AsStatus(fmt.Errorf("NodeResourcesFit: unknown scoring strategy %v", pl.strategy))
}

// sumOf is the cpu and memory of a and b together, saturating.
func sumOf(a, b framework.Resource) [2]int64 {
	return [2]int64{framework.AddSat(a.MilliCPU, b.MilliCPU), framework.AddSat(a.Memory, b.Memory)}
}

// leastAllocatedScore averages, over the resources the node has, the
// percentage of allocatable left free after placing the pod.
func leastAllocatedScore(requested, alloc [2]int64) int64 {
	var sum, n int64
	for i := range requested {
		if alloc[i] <= 0 {
			continue
		}
		n++
		if requested[i] <= alloc[i] {
			sum += freeScore(alloc[i]-requested[i], alloc[i])
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

// freeScore is free * MaxNodeScore / alloc, for 0 <= free <= alloc, in
// 128 bits so that no allocatable, however large, overflows it.
func freeScore(free, alloc int64) int64 {
	hi, lo := bits.Mul64(uint64(free), framework.MaxNodeScore)
	q, _ := bits.Div64(hi, lo, uint64(alloc))
	return int64(q)
}

// balancedAllocationScore is MaxNodeScore times one minus the standard
// deviation of the used fractions (each capped at 1) of the resources the
// node has. With two resources the deviation is half their difference.
func balancedAllocationScore(requested, alloc [2]int64) int64 {
	fractions := make([]float64, 0, len(requested))
	var total float64
	for i := range requested {
		if alloc[i] <= 0 {
			continue
		}
		f := min(float64(requested[i])/float64(alloc[i]), 1)
		fractions = append(fractions, f)
		total += f
	}
	var std float64
	if len(fractions) > 1 {
		mean := total / float64(len(fractions))
		var sq float64
		for _, f := range fractions {
			sq += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sq / float64(len(fractions)))
	}
	return int64((1 - std) * framework.MaxNodeScore)
}
