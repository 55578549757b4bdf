package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

func initRequesting(pairs ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "init", Resources: v1.ResourceRequirements{Requests: rl(pairs...)}})
	}
}

func sidecarRequesting(pairs ...string) func(*v1.Pod) {
	always := v1.ContainerRestartPolicyAlways
	return func(p *v1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "sidecar", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: rl(pairs...)}})
	}
}

func overhead(pairs ...string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Overhead = rl(pairs...) }
}

func TestNodeResourcesFitFilter(t *testing.T) {
	const gpu = "example.com/gpu"
	node := mkNode("n", allocatable("cpu", "4", "memory", "8Gi", "ephemeral-storage", "10Gi", "pods", "3", gpu, "2"))
	used := mkPod("used", requesting("cpu", "2", "memory", "4Gi", "ephemeral-storage", "5Gi", gpu, "1"))
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		node    *v1.Node
		placed  []*v1.Pod
		code    framework.Code
		reasons []string
	}{
		{"fits", mkPod("p", requesting("cpu", "2", "memory", "4Gi")), node, []*v1.Pod{used}, framework.Success, nil},
		{"no requests", mkPod("p"), node, []*v1.Pod{used}, framework.Success, nil},
		{"cpu short", mkPod("p", requesting("cpu", "2100m")), node, []*v1.Pod{used}, framework.Unschedulable, []string{"Insufficient cpu"}},
		{"memory short", mkPod("p", requesting("memory", "5Gi")), node, []*v1.Pod{used}, framework.Unschedulable, []string{"Insufficient memory"}},
		{"ephemeral storage short", mkPod("p", requesting("ephemeral-storage", "6Gi")), node, []*v1.Pod{used}, framework.Unschedulable, []string{"Insufficient ephemeral-storage"}},
		{"extended resource short", mkPod("p", requesting(gpu, "2")), node, []*v1.Pod{used}, framework.Unschedulable, []string{"Insufficient example.com/gpu"}},
		{"extended resource fits", mkPod("p", requesting(gpu, "1")), node, []*v1.Pod{used}, framework.Success, nil},
		{"extended resource the node lacks", mkPod("p", requesting("example.com/fpga", "1")), node, nil, framework.Unschedulable, []string{"Insufficient example.com/fpga"}},
		{"too many pods", mkPod("p"), node, []*v1.Pod{mkPod("a"), mkPod("b"), mkPod("c")}, framework.Unschedulable, []string{"Too many pods"}},
		{"node without pod capacity", mkPod("p"), mkNode("n", allocatable("cpu", "4")), nil, framework.Unschedulable, []string{"Too many pods"}},
		{
			"every short resource is reported, in order",
			mkPod("p", requesting("cpu", "3", "memory", "5Gi", "ephemeral-storage", "6Gi", gpu, "2", "example.com/fpga", "1")),
			node, []*v1.Pod{used, mkPod("a"), mkPod("b")},
			framework.Unschedulable,
			[]string{"Too many pods", "Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage", "Insufficient example.com/fpga", "Insufficient example.com/gpu"},
		},
		// Init containers run one at a time before the regular ones, so a pod
		// needs the larger of its biggest init container and the sum of its
		// regular containers.
		{"init container larger than the sum", mkPod("p", initRequesting("cpu", "2500m"), requesting("cpu", "1"), requesting("cpu", "1")), node, []*v1.Pod{used}, framework.Unschedulable, []string{"Insufficient cpu"}},
		{"init container smaller than the sum", mkPod("p", initRequesting("cpu", "1500m"), requesting("cpu", "1"), requesting("cpu", "1")), node, []*v1.Pod{used}, framework.Success, nil},
		{"sidecar adds to the regular containers", mkPod("p", sidecarRequesting("cpu", "500m"), requesting("cpu", "1"), requesting("cpu", "1")), node, []*v1.Pod{used}, framework.Unschedulable, []string{"Insufficient cpu"}},
		{"overhead counts", mkPod("p", requesting("memory", "4Gi"), overhead("memory", "1Mi")), node, []*v1.Pod{used}, framework.Unschedulable, []string{"Insufficient memory"}},
		{"overhead that fits", mkPod("p", requesting("memory", "3Gi"), overhead("memory", "1Gi")), node, []*v1.Pod{used}, framework.Success, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewNodeResourcesFit(LeastAllocated).Filter(ctx, framework.NewCycleState(), mustPodInfo(t, tc.pod), nodeInfo(t, tc.node, tc.placed...))
			wantStatus(t, got, tc.code, tc.reasons...)
		})
	}
}

func TestNodeResourcesFitNodeHints(t *testing.T) {
	pl := NewNodeResourcesFit(LeastAllocated)
	big := mkPod("p", requesting("cpu", "4", "memory", "4Gi"))
	gpuPod := mkPod("p", requesting("cpu", "1", "example.com/gpu", "1"))
	runHints(t, pl, evNodeAdd, []hintCase{
		{"node big enough", big, nil, mkNode("n", allocatable("cpu", "8", "memory", "8Gi", "pods", "10")), schedq.HintQueue},
		{"node too small for the pod alone", big, nil, mkNode("n", allocatable("cpu", "2", "memory", "8Gi", "pods", "10")), schedq.HintSkip},
		{"node without pod slots", big, nil, mkNode("n", allocatable("cpu", "8", "memory", "8Gi")), schedq.HintSkip},
		{"node with the extended resource", gpuPod, nil, mkNode("n", allocatable("cpu", "8", "pods", "10", "example.com/gpu", "1")), schedq.HintQueue},
		{"node without the extended resource", gpuPod, nil, mkNode("n", allocatable("cpu", "8", "pods", "10")), schedq.HintSkip},
	})
	runHints(t, pl, evNodeAllocatable, []hintCase{
		{"cpu grew and now fits", big, mkNode("n", allocatable("cpu", "2", "memory", "8Gi", "pods", "10")), mkNode("n", allocatable("cpu", "8", "memory", "8Gi", "pods", "10")), schedq.HintQueue},
		{"cpu grew on a node that fitted", big, mkNode("n", allocatable("cpu", "6", "memory", "8Gi", "pods", "10")), mkNode("n", allocatable("cpu", "8", "memory", "8Gi", "pods", "10")), schedq.HintQueue},
		{"pod slots grew", big, mkNode("n", allocatable("cpu", "8", "memory", "8Gi", "pods", "10")), mkNode("n", allocatable("cpu", "8", "memory", "8Gi", "pods", "20")), schedq.HintQueue},
		{"grew but still too small", big, mkNode("n", allocatable("cpu", "1", "memory", "8Gi", "pods", "10")), mkNode("n", allocatable("cpu", "2", "memory", "8Gi", "pods", "10")), schedq.HintSkip},
		{"an unrequested resource grew", big, mkNode("n", allocatable("cpu", "8", "memory", "8Gi", "pods", "10")), mkNode("n", allocatable("cpu", "8", "memory", "8Gi", "pods", "10", "ephemeral-storage", "1Ti")), schedq.HintSkip},
		{"shrank", big, mkNode("n", allocatable("cpu", "16", "memory", "8Gi", "pods", "10")), mkNode("n", allocatable("cpu", "8", "memory", "8Gi", "pods", "10")), schedq.HintSkip},
	})
}

func TestNodeResourcesFitPodHints(t *testing.T) {
	pl := NewNodeResourcesFit(BalancedAllocation)
	cpuPod := mkPod("p", requesting("cpu", "1"))
	runHints(t, pl, evAssignedDelete, []hintCase{
		{"bound pod deleted", cpuPod, mkPod("q", onNode("n"), requesting("cpu", "1")), nil, schedq.HintQueue},
		// A deletion frees a pod slot, whatever the deleted pod requested.
		{"bound pod without requests deleted", cpuPod, mkPod("q", onNode("n")), nil, schedq.HintQueue},
		{"unbound pod deleted", cpuPod, mkPod("q", requesting("cpu", "4")), nil, schedq.HintSkip},
	})
	runHints(t, pl, evAssignedScale, []hintCase{
		{"bound pod gave back cpu", cpuPod, mkPod("q", onNode("n"), requesting("cpu", "2")), mkPod("q", onNode("n"), requesting("cpu", "1")), schedq.HintQueue},
		{"bound pod gave back an extended resource the pod needs", mkPod("p", requesting("example.com/gpu", "1")), mkPod("q", onNode("n"), requesting("example.com/gpu", "2")), mkPod("q", onNode("n"), requesting("example.com/gpu", "1")), schedq.HintQueue},
		{"bound pod gave back memory only", cpuPod, mkPod("q", onNode("n"), requesting("cpu", "2", "memory", "2Gi")), mkPod("q", onNode("n"), requesting("cpu", "2", "memory", "1Gi")), schedq.HintSkip},
	})
	runHints(t, pl, evOwnScale, []hintCase{
		{"own scale-down", cpuPod, cpuPod, mkPod("p", requesting("cpu", "500m")), schedq.HintQueue},
		{"another unbound pod's scale-down", cpuPod, mkPod("q", requesting("cpu", "2")), mkPod("q", requesting("cpu", "1")), schedq.HintSkip},
	})
}
