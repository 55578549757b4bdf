package framework

// CopyInto makes dst a copy of n holding only the pods keep accepts (all
// of them if keep is nil), with the sums counted again from those pods.
// dst's slices are reused, so that a search that tries many nodes (such
// as preemption's) allocates once; n is not changed. O(p) for p pods on n.
// Not safe for concurrent use of dst.
func (n *NodeInfo) CopyInto(dst *NodeInfo, keep func(*PodInfo) bool) {
	pods, anti := dst.Pods[:0], dst.PodsWithRequiredAntiAffinity[:0]
	*dst = NodeInfo{
		Unschedulable:      n.Unschedulable,
		Taints:             n.Taints,
		Allocatable:        n.Allocatable,
		name:               n.name,
		Node:               n.Node,
		AllocatableInvalid: n.AllocatableInvalid,
	}
	for _, p := range n.Pods {
		if keep != nil && !keep(p) {
			continue
		}
		pods = append(pods, p)
		dst.Requested.Add(p.Requests)
		dst.NonZeroRequested.Add(p.NonZeroRequests)
		if len(p.RequiredAntiAffinity) > 0 {
			anti = append(anti, p)
		}
	}
	dst.Pods, dst.PodsWithRequiredAntiAffinity = pods, anti
}
