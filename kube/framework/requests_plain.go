package framework

import (
	"maps"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// plainMemo is what the containers of a pod with plain requests request
// (copies, so that a pod changed in place later does not change them) and
// the pod's requests (PodRequests, with no error); r's Scalar map is its
// own, never handed out.
type plainMemo struct {
	reqs []v1.ResourceList
	r    Resource
}

// newPlainMemo is p's plainMemo, r its requests.
func newPlainMemo(p *v1.Pod, r Resource) *plainMemo {
	m := &plainMemo{reqs: make([]v1.ResourceList, len(p.Spec.Containers)), r: r}
	m.r.Scalar = maps.Clone(r.Scalar)
	for i := range p.Spec.Containers {
		m.reqs[i] = p.Spec.Containers[i].Resources.Requests.DeepCopy()
	}
	return m
}

// requests returns the memo's requests for p if p has plain requests and
// requests what the memo's pod did; ok false otherwise.
func (m *plainMemo) requests(p *v1.Pod) (r Resource, ok bool) {
	if len(p.Spec.Containers) != len(m.reqs) || !plainRequests(p) {
		return Resource{}, false
	}
	for i := range p.Spec.Containers {
		if !sameList(m.reqs[i], p.Spec.Containers[i].Resources.Requests) {
			return Resource{}, false
		}
	}
	r = m.r
	r.Scalar = maps.Clone(r.Scalar)
	return r, true
}

// lastPlain is the last pod with plain requests whose requests
// PodRequests computed. Pods of one template request the same, and
// computing requests (component-helpers' maps and quantity arithmetic,
// about 4 KiB allocated a pod) was a tenth of what a forecast of 10,000
// pending pods allocated, in the scheduler's cycles alone. It holds
// copies of one pod's container requests; safe for concurrent use.
var lastPlain atomic.Pointer[plainMemo]

// plainRequests reports whether p's requests are the sum of its
// containers' spec requests, plus one pod, whatever the feature gates
// RequestOptions reads: p has no init containers, no overhead, no
// pod-level resources, and no status that kube-scheduler would count
// instead of its spec (container statuses, pod-level status resources,
// DRA's node-allocatable claim statuses, an infeasible resize). A pod not
// yet started is plain unless its spec has one of those. O(containers +
// conditions).
func plainRequests(p *v1.Pod) bool {
	st := &p.Status
	return len(p.Spec.InitContainers) == 0 && len(p.Spec.Overhead) == 0 && p.Spec.Resources == nil &&
		len(st.ContainerStatuses) == 0 && len(st.InitContainerStatuses) == 0 &&
		st.Resources == nil && len(st.AllocatedResources) == 0 &&
		len(st.NodeAllocatableResourceClaimStatuses) == 0 && !resourcehelper.IsPodResizeInfeasible(p)
}

// SamePlainRequests reports whether a and b both have plain requests (see
// plainRequests) and their containers, in order, request equal amounts
// of the same resources: then any count of requests from their specs
// (PodRequests, component-helpers' with any options) gives the same
// amounts for both. False says nothing. O(containers x resources), with
// no allocation for amounts held as int64 (as parsed quantities are).
func SamePlainRequests(a, b *v1.Pod) bool {
	if a == nil || b == nil || len(a.Spec.Containers) != len(b.Spec.Containers) || !plainRequests(a) || !plainRequests(b) {
		return false
	}
	for i := range a.Spec.Containers {
		if !sameList(a.Spec.Containers[i].Resources.Requests, b.Spec.Containers[i].Resources.Requests) {
			return false
		}
	}
	return true
}

// sameList reports whether a and b hold equal amounts of the same
// resources. O(len(a)).
func sameList(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}
