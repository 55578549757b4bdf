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
// constraints would apply to pod and nothing selects it. Such a pod, which
// kube-scheduler never batches, is signed with scoredContainers besides:
// what the other plugins score by and their signatures leave out, so that
// a batch places it where scoring every node would. O(the services,
// controllers and sets of pod's namespace, and pod's containers).
func (s *spreadSigner) SignPod(ctx context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	frags, st := s.PodTopologySpread.SignPod(ctx, pod)
	if st.IsSuccess() || len(pod.Spec.TopologySpreadConstraints) > 0 {
		return frags, st
	}
	if !helper.DefaultSelector(pod, s.services, s.rcs, s.rss, s.sss).Empty() {
		return frags, st
	}
	return []fwk.SignFragment{{Key: scoredContainersSignerName, Value: scoredContainers(pod)}}, nil
}

// scoredContainersSignerName is the key of spreadSigner's fragment.
const scoredContainersSignerName = "schedq/v1.Pod.Spec.ScoredContainers()"

// scoredContainer is what kube-scheduler's score plugins read of one
// container besides what their signatures hold.
type scoredContainer struct {
	Image    string                     `json:"i"`
	Requests v1.ResourceList            `json:"r,omitempty"`
	Restart  *v1.ContainerRestartPolicy `json:"p,omitempty"`
}

// scoredContainers is what kube-scheduler v1.37.2's score plugins read of
// pod that the framework's signature leaves out: each init container's
// and container's image, requests and restart policy, in order, and the
// images of its image volumes. The signature counts the pod's requests as
// NodeResourcesFit's Filter does, yet its Score counts a container that
// requests no CPU or memory as one of 100m and 200Mi (a pod of one
// container and one of the same requests with idle containers beside it
// score apart, and so do a plain init container and a sidecar that
// request nothing); it lists the pod's image names as a set, yet
// ImageLocality divides by the number of containers and image volumes.
// Upstream batches pods of one signature all the same where it signs
// them; schedq alone signs these (spreadSigner), so their batches must
// not place them where a full search would not. O(containers).
func scoredContainers(pod *v1.Pod) any {
	type inputs struct {
		Init, Containers []scoredContainer
		ImageVolumes     []string `json:",omitempty"`
	}
	var in inputs
	for _, c := range pod.Spec.InitContainers {
		in.Init = append(in.Init, scoredContainer{Image: c.Image, Requests: c.Resources.Requests, Restart: c.RestartPolicy})
	}
	for _, c := range pod.Spec.Containers {
		in.Containers = append(in.Containers, scoredContainer{Image: c.Image, Requests: c.Resources.Requests})
	}
	for _, v := range pod.Spec.Volumes {
		if v.Image != nil {
			in.ImageVolumes = append(in.ImageVolumes, v.Image.Reference)
		}
	}
	return in
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
