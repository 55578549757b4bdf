package sim

import (
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
)

// checkNode fails a checked run (Options.CheckInvariants) if the pods on
// node, terminating ones included (they hold their room until they
// leave), request more than its allocatable of any resource, or more pods
// than its pod capacity. The simulator calls it after every binding, the
// only change that adds to a node. O(pods in the cluster).
func (s *sim) checkNode(name string) {
	if !s.o.CheckInvariants || s.violation != nil {
		return
	}
	n := s.cl.nodes[name]
	if n == nil {
		return
	}
	if err := overCommitted(n, s.cl.pods); err != nil {
		s.violation = fmt.Errorf("at %v: %w", s.now.Sub(epoch), err)
	}
}

// overCommitted says which resource of n the pods bound to it exceed, if
// any.
func overCommitted[K comparable](n *v1.Node, pods map[K]*v1.Pod) error {
	var used framework.Resource
	count := int64(0)
	for _, p := range pods {
		if p.Spec.NodeName != n.Name {
			continue
		}
		r, err := framework.RequestsOf(p)
		if err != nil {
			return fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		count++
		used.MilliCPU += r.MilliCPU
		used.Memory += r.Memory
		used.EphemeralStorage += r.EphemeralStorage
		byDRA := draServed(p)
		for k, v := range r.Scalar {
			if byDRA[k] {
				continue // its devices, which checkDevices checks
			}
			if used.Scalar == nil {
				used.Scalar = map[v1.ResourceName]int64{}
			}
			used.Scalar[k] += v
		}
	}
	alloc := framework.NewResource(n.Status.Allocatable)
	over := func(what string, u, a int64) error {
		return fmt.Errorf("node %s over-committed: %s %d requested of %d allocatable", n.Name, what, u, a)
	}
	switch {
	case used.MilliCPU > alloc.MilliCPU:
		return over("cpu (milli)", used.MilliCPU, alloc.MilliCPU)
	case used.Memory > alloc.Memory:
		return over("memory", used.Memory, alloc.Memory)
	case alloc.EphemeralStorage > 0 && used.EphemeralStorage > alloc.EphemeralStorage:
		return over("ephemeral-storage", used.EphemeralStorage, alloc.EphemeralStorage)
	case alloc.Pods > 0 && count > alloc.Pods:
		return over("pods", count, alloc.Pods)
	}
	for _, k := range slices.Sorted(maps.Keys(used.Scalar)) {
		if used.Scalar[k] > alloc.Scalar[k] {
			return over(string(k), used.Scalar[k], alloc.Scalar[k])
		}
	}
	return nil
}

// draServed are the extended resources of p that DRA's devices serve
// instead of the node's allocatable: those its status maps to the claim
// DynamicResources made for them. Nil for most pods. O(mappings).
func draServed(p *v1.Pod) map[v1.ResourceName]bool {
	st := p.Status.ExtendedResourceClaimStatus
	if st == nil {
		return nil
	}
	out := make(map[v1.ResourceName]bool, len(st.RequestMappings))
	for _, m := range st.RequestMappings {
		out[v1.ResourceName(m.ResourceName)] = true
	}
	return out
}

// checkBindOnce fails a checked run if pod is bound while it is already
// bound, or while a binding of it is under way: no pod is bound twice.
func (s *sim) checkBindOnce(pod *v1.Pod, node string) {
	if !s.o.CheckInvariants || s.violation != nil {
		return
	}
	key := framework.Key(pod)
	if to, ok := s.binding[pod.UID]; ok {
		s.violation = fmt.Errorf("at %v: pod %s bound to %s while its binding to %s is under way", s.now.Sub(epoch), key, node, to)
		return
	}
	if cur := s.cl.pods[key]; cur != nil && cur.UID == pod.UID && cur.Spec.NodeName != "" {
		s.violation = fmt.Errorf("at %v: pod %s bound to %s while bound to %s", s.now.Sub(epoch), key, node, cur.Spec.NodeName)
		return
	}
	if s.binding == nil {
		s.binding = map[types.UID]string{}
	}
	s.binding[pod.UID] = node
}
