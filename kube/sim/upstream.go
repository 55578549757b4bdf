package sim

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
)

// PluginsUpstream is the one value of SchedulerSpec.Plugins:
// kube-scheduler v1.37.2's framework and in-tree plugins (the default).
const PluginsUpstream = "upstream"

// newFrameworks builds kube-scheduler's framework for every profile of
// scheduler.config (or the default profile) as the live scheduler builds
// them (scheduler.NewProfiles): over one empty snapshot that the
// scheduler's cache keeps up to date, each after the first alongside it,
// with the scenario's objects in their informers. It makes cfg wake and
// gate each profile's pods as that profile's plugins ask. Preemption runs
// each profile's DefaultPreemption (the scheduler adapts it), and gangs
// go through them too, with schedq's quorum. A trace replayed with the
// device model runs the out-of-tree GPUDevices plugin, where the profiles
// and scheduler.gpuPolicy say (applyGPUConfig, gpu_framework.go).
func (s *sim) newFrameworks(ctx context.Context, cfg *schedq.Config[types.NamespacedName, *v1.Pod]) ([]*profile.Framework, error) {
	sp := s.sc.Scheduler
	profs, err := sp.loadProfiles()
	if err != nil {
		return nil, err
	}
	s.setProfiles(profs)
	setup := profile.Setup{Snapshot: backendcache.NewEmptySnapshot(), Client: s.draClient()}
	mode := s.sc.gpuMode()
	if err := gpuProfiles(len(profs), mode, sp.Config); err != nil {
		return nil, err
	}
	for i, prof := range profs {
		if err := applyGPUConfig(prof, i, sp, mode); err != nil {
			return nil, fmt.Errorf("scheduler.config: %w", err)
		}
	}
	switch {
	case s.x.gpu != nil:
		setup.Plugins = gpuPlugins(s.x.gpu)
	case mode == gpuModeDRA:
		s.x.gpuDRA = newGPUDRAModel(s.sc)
		setup.Plugins, setup.WrapDRA = gpuDRAPlugins(s.x.gpuDRA), newDRAFullestFirst(s.x.gpuDRA)
		setup.NotePod = s.x.gpuDRA.notePod
	}
	fws, err := scheduler.NewProfiles(ctx, cfg, profs, setup, logr.Discard())
	if err != nil && sp.Config != "" {
		return nil, fmt.Errorf("scheduler.config %s: %w", sp.Config, err)
	}
	return fws, err
}

// CheckFrameworks builds kube-scheduler's framework for every profile a
// run of s builds, as Run builds them (newFrameworks: scheduler.config's
// profiles or the default one, with the GPU plugins of s's GPU mode),
// and closes them, so that a profile the framework refuses (a plugin at
// an extension point it does not extend, args a plugin's factory
// refuses) is found before any run rather than when its run starts. The
// frameworks are thrown away: a run builds its own over its own objects,
// and building one over nothing is cheap. The error names
// scheduler.config's file. O(profiles × plugins).
func (s *Scenario) CheckFrameworks() error {
	sc, err := s.withConfigFile()
	if err != nil {
		return err
	}
	x := &sim{sc: sc, cl: newCluster()}
	x.newGPUDevices()
	cfg := scheduler.QueueConfig()
	fws, err := x.newFrameworks(context.Background(), &cfg)
	if err != nil {
		return err
	}
	scheduler.CloseProfiles(fws)
	return nil
}

// loadProfiles returns the profiles to run, copies of their own:
// Profiles', else Profile's, else those of the file Config names, else
// kube-scheduler's default one.
func (sp SchedulerSpec) loadProfiles() ([]*config.KubeSchedulerProfile, error) {
	switch {
	case len(sp.Profiles) > 0:
		out := make([]*config.KubeSchedulerProfile, len(sp.Profiles))
		for i, p := range sp.Profiles {
			out[i] = p.DeepCopy()
		}
		return out, nil
	case sp.Profile != nil:
		return []*config.KubeSchedulerProfile{sp.Profile.DeepCopy()}, nil
	}
	kcfg, err := profile.Load(sp.Config)
	if err != nil {
		return nil, fmt.Errorf("scheduler.config: %w", err)
	}
	out := make([]*config.KubeSchedulerProfile, len(kcfg.Profiles))
	for i := range kcfg.Profiles {
		out[i] = &kcfg.Profiles[i]
	}
	return out, nil
}

// close releases the frameworks, if any. Idempotent.
func (s *sim) close() {
	scheduler.CloseProfiles(s.fws)
	s.fw, s.fws = nil, nil
}

// validatePlugins refuses the keys of schedq's former hand-written
// plugins, naming what replaces each: the profile of scheduler.config.
func (sp SchedulerSpec) validatePlugins(bad func(string, string, ...any)) {
	switch sp.Plugins {
	case "", PluginsUpstream:
	case "schedq":
		bad("scheduler.plugins", "schedq's own plugins were removed: the simulator runs kube-scheduler v1.37.2's framework and plugins; drop the key and configure the plugins in the KubeSchedulerConfiguration profile of scheduler.config")
	default:
		bad("scheduler.plugins", "%q is not %s (the default)", sp.Plugins, PluginsUpstream)
	}
	if len(sp.DisablePlugins) > 0 {
		bad("scheduler.disablePlugins", "was removed with schedq's own plugins: disable plugins in the KubeSchedulerConfiguration profile of scheduler.config")
	}
	if sp.Scoring != "" {
		bad("scheduler.scoring", "was removed with schedq's own plugins: set NodeResourcesFit's scoringStrategy in the KubeSchedulerConfiguration profile of scheduler.config")
	}
}

// objects are the objects the scenario created (objects[], createObjects)
// and the simulator's controllers wrote, as the plugins' informers hold
// them, by objectKey.
type objects struct {
	byKey    map[string]runtime.Object
	version  int // the last resourceVersion given
	claimSeq int // the last suffix given to a claim made from a template
}

// createObjects creates each object, or updates the one of its key (see
// put). The simulator plays the volume controller: a claim (which names
// its volume) is bound, and so is a volume with a claimRef. A
// ResourceClaimTemplate gives its claims to the pending pods that were
// waiting for it (dra.go).
func (s *sim) createObjects(list []Object) {
	for _, o := range list {
		obj := o.obj.DeepCopyObject()
		switch x := obj.(type) {
		case *v1.PersistentVolumeClaim:
			metav1.SetMetaDataAnnotation(&x.ObjectMeta, "pv.kubernetes.io/bind-completed", "yes")
			x.Status.Phase = v1.ClaimBound
		case *v1.PersistentVolume:
			if x.Status.Phase == "" {
				x.Status.Phase = v1.VolumeAvailable
				if x.Spec.ClaimRef != nil {
					x.Status.Phase = v1.VolumeBound
				}
			}
		}
		if c, ok := obj.(*resourceapi.ResourceClaim); ok && !s.claimUpdate(c) {
			return
		}
		if !s.put(obj) || !s.narrowTraceClass(obj) {
			return
		}
		if t, ok := obj.(*resourceapi.ResourceClaimTemplate); ok {
			s.templateCreated(t)
		}
	}
}

// put stores obj (a new object, or a new version of one) as the API
// server would: with the next resourceVersion, since the assume caches of
// the plugins compare them, and a UID if it has none. It is put in the
// framework's informers first (the plugins' handlers run at once), then
// sent to the queue as an event. False if the informers refused it (the
// run fails).
func (s *sim) put(obj runtime.Object) bool {
	m := obj.(metav1.Object)
	key := objectKey(obj)
	s.obj.version++
	m.SetResourceVersion(strconv.Itoa(s.obj.version))
	if m.GetUID() == "" {
		m.SetUID(types.UID("uid-" + key))
	}
	res := eventResource(obj)
	if res != "" {
		if err := s.fw.AddObject(obj); err != nil {
			s.fail(err)
			return false
		}
	}
	if s.obj.byKey == nil {
		s.obj.byKey = map[string]runtime.Object{}
	}
	old := s.obj.byKey[key]
	s.obj.byKey[key] = obj
	if _, ok := obj.(*resourceapi.ResourceClaim); ok && s.o.CheckInvariants {
		if err := s.checkDevices(); err != nil {
			s.fail(err)
		}
	}
	switch {
	case res == "":
	case old == nil:
		s.h.Other(res, clusterevent.Add, nil, obj)
	default:
		s.h.Other(res, clusterevent.Update, old, obj)
	}
	return true
}

// deleteObjects deletes each object (by kind and name); one that does not
// exist fails the run.
func (s *sim) deleteObjects(list []Object) {
	for _, o := range list {
		old := s.obj.byKey[o.key()]
		if old == nil {
			s.fail(fmt.Errorf("deleteObjects: %s %s/%s does not exist", o.obj.GetObjectKind().GroupVersionKind().Kind, o.meta().GetNamespace(), o.meta().GetName()))
			return
		}
		if c, ok := old.(*resourceapi.ResourceClaim); ok {
			if !s.deleteClaim(c) {
				return
			}
			continue
		}
		if !s.remove(old) {
			return
		}
	}
}

// remove deletes a stored object: from the informers, then as an event
// to the queue. False if the informers refused it (the run fails).
func (s *sim) remove(old runtime.Object) bool {
	res := eventResource(old)
	if res != "" {
		if err := s.fw.DeleteObject(old); err != nil {
			s.fail(err)
			return false
		}
	}
	delete(s.obj.byKey, objectKey(old))
	if res != "" {
		s.h.Other(res, clusterevent.Delete, old, nil)
	}
	return true
}

// fail ends the run with err at the next step.
func (s *sim) fail(err error) {
	if s.violation == nil {
		s.violation = fmt.Errorf("at %v: %w", s.now.Sub(epoch), err)
	}
}

// scoringLabel says in the report which plugins placed the pods:
// kube-scheduler's profile.
func (sp SchedulerSpec) scoringLabel() string {
	prof := "default profile"
	if sp.Config != "" {
		prof = sp.Config
	}
	return "kube-scheduler v1.37.2's plugins (" + prof + ")"
}
