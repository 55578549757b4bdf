package profile

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/helper"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// spreadSigner is kube-scheduler's PodTopologySpread with one change, to
// SignPod: a pod without constraints of its own that no Service,
// ReplicationController, ReplicaSet or StatefulSet selects is signed.
// Upstream refuses to sign any pod when the plugin has default
// constraints (the default profile's "System" defaulting has two), which
// turns opportunistic batching off for every pod of that profile; yet the
// default constraints of such a pod have no selector, so PodTopologySpread
// ignores them and the pod's filtering and scoring do not depend on the
// plugin. Every other method is the plugin's own.
type spreadSigner struct {
	*podtopologyspread.PodTopologySpread
	services corelisters.ServiceLister
	rcs      corelisters.ReplicationControllerLister
	rss      appslisters.ReplicaSetLister
	sss      appslisters.StatefulSetLister
}

// SignPod signs pod as PodTopologySpread does, and also when only default
// constraints would apply to pod and nothing selects it. O(the services,
// controllers and sets of pod's namespace).
func (s *spreadSigner) SignPod(ctx context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	frags, st := s.PodTopologySpread.SignPod(ctx, pod)
	if st.IsSuccess() || len(pod.Spec.TopologySpreadConstraints) > 0 {
		return frags, st
	}
	if !helper.DefaultSelector(pod, s.services, s.rcs, s.rss, s.sss).Empty() {
		return frags, st
	}
	return nil, nil
}

// signingSpread wraps the registry's PodTopologySpread factory so that
// the plugin it builds is a spreadSigner. The listers are the ones the
// plugin itself reads, from the handle's informer factory.
func signingSpread(inner frameworkruntime.PluginFactory) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		pl, err := inner(ctx, args, h)
		if err != nil {
			return nil, err
		}
		pts, ok := pl.(*podtopologyspread.PodTopologySpread)
		if !ok || h.SharedInformerFactory() == nil {
			return pl, nil
		}
		f := h.SharedInformerFactory()
		return &spreadSigner{PodTopologySpread: pts,
			services: f.Core().V1().Services().Lister(),
			rcs:      f.Core().V1().ReplicationControllers().Lister(),
			rss:      f.Apps().V1().ReplicaSets().Lister(),
			sss:      f.Apps().V1().StatefulSets().Lister(),
		}, nil
	}
}
