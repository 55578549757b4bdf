package app

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	fwprofile "github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
)

// upstreamFrameworks builds kube-scheduler's framework for each of
// Config.Profiles on the cluster's client and informer factory, as the
// simulator builds them (scheduler.NewProfiles): all on one snapshot,
// each after the first alongside it (one DRA manager, as kube-scheduler's
// profiles share), with qcfg taking their plugins' hints and gates, each
// profile's for its own pods, so that the queue wakes a pod rejected by
// an upstream plugin (NodePorts, PodTopologySpread, VolumeBinding...) on
// the events that plugin of its profile registers for. Call it before
// the queue is built and before factory starts (the plugins create their
// informers while they are built); the caller waits for the factory's
// sync before scheduling, and closes the frameworks (closeAll). The
// plugins record their events (DynamicResources' BindingConditionsPending)
// with rec, nil for none.
func upstreamFrameworks(ctx context.Context, o Options, qcfg *schedq.Config[types.NamespacedName, *v1.Pod],
	client kubernetes.Interface, factory informers.SharedInformerFactory, rec events.EventRecorderLogger, logger klog.Logger) ([]*fwprofile.Framework, error) {
	setup := fwprofile.Setup{Snapshot: backendcache.NewEmptySnapshot(), Informers: factory, Client: client, Recorder: rec}
	return scheduler.NewProfiles(ctx, qcfg, o.profiles(), setup, logger)
}

// closeAll closes fws, the first (the others' base: Setup.Alongside) last.
func closeAll(fws []*fwprofile.Framework) { scheduler.CloseProfiles(fws) }

// profiles are Config.Profiles, or Config.Profile alone if only it is set.
func (o Options) profiles() []*config.KubeSchedulerProfile {
	if len(o.Config.Profiles) == 0 && o.Config.Profile != nil {
		return []*config.KubeSchedulerProfile{o.Config.Profile}
	}
	return o.Config.Profiles
}

// watched returns the informers of the kinds other than pods, nodes and
// namespaces whose events the handlers send to the queue: the five every
// profile's plugins may register for, and, for each kind only upstream's
// plugins register for (DRA objects, CSI drivers, storage capacities,
// volume attachments), its informer if some registration in hints names
// it, so that no watch is opened that no plugin needs.
func watched(factory informers.SharedInformerFactory, hints map[string][]schedq.EventHint[*v1.Pod]) map[string]cache.SharedIndexInformer {
	out := map[string]cache.SharedIndexInformer{
		clusterevent.PersistentVolume:      factory.Core().V1().PersistentVolumes().Informer(),
		clusterevent.PersistentVolumeClaim: factory.Core().V1().PersistentVolumeClaims().Informer(),
		clusterevent.StorageClass:          factory.Storage().V1().StorageClasses().Informer(),
		clusterevent.CSINode:               factory.Storage().V1().CSINodes().Informer(),
		clusterevent.Service:               factory.Core().V1().Services().Informer(),
	}
	extra := map[string]func() cache.SharedIndexInformer{
		clusterevent.ResourceClaim:      func() cache.SharedIndexInformer { return factory.Resource().V1().ResourceClaims().Informer() },
		clusterevent.ResourceSlice:      func() cache.SharedIndexInformer { return factory.Resource().V1().ResourceSlices().Informer() },
		clusterevent.DeviceClass:        func() cache.SharedIndexInformer { return factory.Resource().V1().DeviceClasses().Informer() },
		clusterevent.CSIDriver:          func() cache.SharedIndexInformer { return factory.Storage().V1().CSIDrivers().Informer() },
		clusterevent.CSIStorageCapacity: func() cache.SharedIndexInformer { return factory.Storage().V1().CSIStorageCapacities().Informer() },
		clusterevent.VolumeAttachment:   func() cache.SharedIndexInformer { return factory.Storage().V1().VolumeAttachments().Informer() },
	}
	for _, regs := range hints {
		for _, r := range regs {
			kind := r.Event.Kind
			if build, ok := extra[kind]; ok && out[kind] == nil {
				out[kind] = build()
			}
		}
	}
	return out
}

// eventSources is what the handlers of the kinds in watched listen to:
// each kind's informer, but for the kinds whose store DynamicResources
// reads (claims, slices: see profile.Framework.EventSources), that store,
// so that the queue hears of a claim only once the plugin can see it.
func eventSources(watched map[string]cache.SharedIndexInformer, stores map[string]fwprofile.EventSource) map[string]scheduler.EventSource {
	out := make(map[string]scheduler.EventSource, len(watched))
	for kind, inf := range watched {
		out[kind] = inf
		if st, ok := stores[kind]; ok {
			out[kind] = st
		}
	}
	return out
}
