package plugins

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

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
// kube-scheduler's values.
const (
	DefaultMilliCPURequest int64 = 100
	DefaultMemoryRequest   int64 = 200 << 20
)

// fitScoreStateKey is where PreFilter leaves the pod's scoring requests.
const fitScoreStateKey = "NodeResourcesFit/scoring"

// scoringRequests is the pod's cpu and memory as LeastAllocated counts them.
type scoringRequests struct{ milliCPU, memory int64 }

var nonZeroDefaults = v1.ResourceList{
	v1.ResourceCPU:    *resource.NewMilliQuantity(DefaultMilliCPURequest, resource.DecimalSI),
	v1.ResourceMemory: *resource.NewQuantity(DefaultMemoryRequest, resource.BinarySI),
}

func nonZeroRequests(pod *v1.Pod) scoringRequests {
	rl := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{NonMissingContainerRequests: nonZeroDefaults})
	return scoringRequests{milliCPU: rl.Cpu().MilliValue(), memory: rl.Memory().Value()}
}

// PreFilter computes the pod's requests for scoring once per cycle, so that
// Score (which may run for nodes in parallel) only reads the state.
func (*NodeResourcesFit) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ framework.Snapshot) *framework.Status {
	state.Write(fitScoreStateKey, nonZeroRequests(pod.Pod))
	return nil
}

// Score rates node from 0 to framework.MaxNodeScore by the strategy.
func (pl *NodeResourcesFit) Score(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	alloc := []int64{node.Allocatable.MilliCPU, node.Allocatable.Memory}
	switch pl.strategy {
	case LeastAllocated:
		req, ok := readScoringRequests(state)
		if !ok {
			req = nonZeroRequests(pod.Pod)
		}
		cpu, mem := nodeNonZeroRequests(node)
		return leastAllocatedScore([]int64{cpu + req.milliCPU, mem + req.memory}, alloc), nil
	case BalancedAllocation:
		requested := []int64{
			node.Requested.MilliCPU + pod.Requests.MilliCPU,
			node.Requested.Memory + pod.Requests.Memory,
		}
		return balancedAllocationScore(requested, alloc), nil
	}
	return 0, framework.AsStatus(fmt.Errorf("NodeResourcesFit: unknown scoring strategy %v", pl.strategy))
}

func readScoringRequests(state *framework.CycleState) (scoringRequests, bool) {
	if state == nil {
		return scoringRequests{}, false
	}
	v, ok := state.Read(fitScoreStateKey)
	if !ok {
		return scoringRequests{}, false
	}
	req, ok := v.(scoringRequests)
	return req, ok
}

// nodeNonZeroRequests sums the cpu and memory of node's pods, counting a pod
// that requests none of either as requesting the default. NodeInfo keeps
// only whole-pod sums, so this default applies per pod, where
// kube-scheduler applies it per container.
func nodeNonZeroRequests(node *framework.NodeInfo) (milliCPU, memory int64) {
	milliCPU, memory = node.Requested.MilliCPU, node.Requested.Memory
	for _, p := range node.Pods {
		if p.Requests.MilliCPU == 0 {
			milliCPU += DefaultMilliCPURequest
		}
		if p.Requests.Memory == 0 {
			memory += DefaultMemoryRequest
		}
	}
	return milliCPU, memory
}

// leastAllocatedScore averages, over the resources the node has, the
// percentage of allocatable left free after placing the pod.
func leastAllocatedScore(requested, alloc []int64) int64 {
	var sum, n int64
	for i := range requested {
		if alloc[i] == 0 {
			continue
		}
		n++
		if requested[i] <= alloc[i] {
			sum += (alloc[i] - requested[i]) * framework.MaxNodeScore / alloc[i]
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

// balancedAllocationScore is MaxNodeScore times one minus the standard
// deviation of the used fractions (each capped at 1) of the resources the
// node has. With two resources the deviation is half their difference.
func balancedAllocationScore(requested, alloc []int64) int64 {
	fractions := make([]float64, 0, len(requested))
	var total float64
	for i := range requested {
		if alloc[i] == 0 {
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
