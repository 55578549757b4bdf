package profile

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// preScoreMemo keeps the PreScore state that NodeResourcesFit or
// NodeResourcesBalancedAllocation wrote for the last pod, with what that
// state is computed from: the pod's requests of the plugin's resources,
// which upstream's PreScore sums again (resourcehelper.PodRequests, a
// few maps) for each resource, in each plugin, in every cycle: about
// 12 KB allocated per pod, for pods that, queued one after another, are
// most often alike. A pod whose containers' and init containers'
// resources and init containers' restart policies are those of the
// last pod gets the last pod's state (or its Skip): the same object,
// which no Score changes (its Clone is itself). Pods with what else
// PodRequests reads (container statuses, status resources, a resize
// condition: an in-place resize) or what the key does not hold (an
// overhead, pod-level resources) go to upstream's PreScore, as do all pods of a plugin with a
// resource other than CPU, memory and ephemeral storage, whose state can
// hold DRA's (getDRAPreScoredParams).
type preScoreMemo struct {
	key fwk.StateKey
	// on is false when the plugin scores a resource other than CPU,
	// memory and ephemeral storage: nothing is kept.
	on bool

	mu        sync.Mutex
	last, buf []byte // the last pod's key; the one being made
	kept      bool   // last, data and skip are a pod's
	data      fwk.StateData
	skip      bool
}

// newPreScoreMemo returns the memo of the plugin whose PreScore writes
// key, scoring resources.
func newPreScoreMemo(key fwk.StateKey, resources []config.ResourceSpec) *preScoreMemo {
	m := &preScoreMemo{key: key, on: true}
	for _, r := range resources {
		switch v1.ResourceName(r.Name) {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
		default:
			m.on = false
		}
	}
	return m
}

// preScore is inner (the plugin's PreScore) for pod, or what it wrote or
// answered for the last pod if pod's key is the same. O(size of the
// pod's containers' resources) when kept.
func (m *preScoreMemo) preScore(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo,
	inner func(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) *fwk.Status) *fwk.Status {
	if !m.on {
		return inner(ctx, cs, pod, nodes)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key, ok := appendRequestsKey(m.buf[:0], pod)
	m.buf = key
	if ok && m.kept && bytes.Equal(key, m.last) {
		if m.skip {
			return fwk.NewStatus(fwk.Skip)
		}
		cs.Write(m.key, m.data)
		return nil
	}
	st := inner(ctx, cs, pod, nodes)
	m.kept = false
	if !ok {
		return st
	}
	switch {
	case st.IsSkip():
		m.data, m.skip = nil, true
	case st.IsSuccess():
		d, err := cs.Read(m.key)
		if err != nil {
			return st
		}
		m.data, m.skip = d, false
	default:
		return st
	}
	m.last, m.buf = key, m.last
	m.kept = true
	return st
}

// appendRequestsKey appends to b what upstream's PodRequests reads of
// pod for PreScore: the number of containers and each one's resources,
// the number of init containers and each one's restart policy and
// resources. False if the pod has container statuses, status resources,
// a resize condition (PodResizePending), an overhead or pod-level
// resources, which the key leaves out. O(size of those resources and
// the pod's conditions), no allocation once b has room.
func appendRequestsKey(b []byte, pod *v1.Pod) ([]byte, bool) {
	s := &pod.Status
	if len(s.ContainerStatuses) > 0 || len(s.InitContainerStatuses) > 0 || len(s.EphemeralContainerStatuses) > 0 ||
		s.Resources != nil || len(s.AllocatedResources) > 0 || len(pod.Spec.Overhead) > 0 || pod.Spec.Resources != nil {
		return b, false
	}
	for i := range s.Conditions {
		// An infeasible resize makes PodRequests count a container
		// without a status as asking nothing, whatever its spec asks.
		if s.Conditions[i].Type == v1.PodResizePending {
			return b, false
		}
	}
	b = binary.AppendUvarint(b, uint64(len(pod.Spec.Containers)))
	for i := range pod.Spec.Containers {
		b = appendResources(b, &pod.Spec.Containers[i].Resources)
	}
	b = binary.AppendUvarint(b, uint64(len(pod.Spec.InitContainers)))
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		policy := ""
		if c.RestartPolicy != nil {
			policy = string(*c.RestartPolicy)
		}
		b = binary.AppendUvarint(b, uint64(len(policy)))
		b = append(b, policy...)
		b = appendResources(b, &c.Resources)
	}
	return b, true
}

// appendResources appends r's protobuf encoding (its maps in key order)
// and its length before it.
func appendResources(b []byte, r *v1.ResourceRequirements) []byte {
	n := r.Size()
	b = binary.AppendUvarint(b, uint64(n))
	b = slices.Grow(b, n)
	b = b[:len(b)+n]
	if _, err := r.MarshalToSizedBuffer(b[len(b)-n:]); err != nil {
		// Not reached for a value in memory; poison the key so that no
		// two pods compare equal through it.
		b = append(b, 0xff)
	}
	return b
}

// balancedMemo is kube-scheduler's NodeResourcesBalancedAllocation with
// its PreScore kept from pod to pod (preScoreMemo).
type balancedMemo struct {
	*noderesources.BalancedAllocation
	memo *preScoreMemo
}

// PreScore is upstream's, or its answer for the last pod if pod asks the
// same (preScoreMemo).
func (b *balancedMemo) PreScore(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	return b.memo.preScore(ctx, cs, pod, nodes, b.BalancedAllocation.PreScore)
}

// memoBalanced wraps the registry's NodeResourcesBalancedAllocation
// factory so that the plugin it builds is a balancedMemo.
func memoBalanced(inner frameworkruntime.PluginFactory) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		pl, err := inner(ctx, args, h)
		if err != nil {
			return nil, err
		}
		ba, ok := pl.(*noderesources.BalancedAllocation)
		a, aok := args.(*config.NodeResourcesBalancedAllocationArgs)
		if !ok || !aok {
			return pl, nil
		}
		return &balancedMemo{BalancedAllocation: ba, memo: newPreScoreMemo("PreScore"+noderesources.BalancedAllocationName, a.Resources)}, nil
	}
}
