package app

import (
	"context"
	"log/slog"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	fwprofile "github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
)

// schedulerOptions are the scheduler's options on fws, the profiles'
// frameworks, with noms writing the nominations of bindings whose PreBind
// has work.
func schedulerOptions(o Options, m *scheduler.Metrics, log *slog.Logger, fws []*fwprofile.Framework, noms scheduler.BindingNominator) scheduler.Options {
	return scheduler.Options{PercentageOfNodesToScore: o.PercentageOfNodesToScore, Metrics: m, Logger: log, Profiles: fws, Nominations: noms}
}

// useProfiles makes h the handlers of the profiles of fws, if several:
// it lets in the pods of each, and its warm start parks a pod behind a
// plugin only if the pod's own profile registered events for it
// (scheduler.HintProfiles).
func useProfiles(ctx context.Context, h *scheduler.Handlers, o Options, fws []*fwprofile.Framework, logger klog.Logger) error {
	if len(fws) <= 1 {
		return nil
	}
	h.Profiles = o.schedulerNames()
	var err error
	h.HintProfiles, err = scheduler.HintProfiles(ctx, fws, logger)
	return err
}

// profileRecorder records each event with the recorder of the profile of
// the pod it is about, as kube-scheduler records with each profile's own
// (the event's reportingController is the profile's schedulerName): the
// related pod's, if there is one (a preemptor's, for its victim's
// Preempted), else the regarding pod's; the first profile's for any
// other object or a pod of none. Safe for concurrent use: the map is
// written only by newProfileRecorder.
type profileRecorder struct {
	first  events.EventRecorder
	byName map[string]events.EventRecorder
}

// recorderMaker is what newProfileRecorder needs of the event broadcaster.
type recorderMaker interface {
	NewRecorder(*runtime.Scheme, string) events.EventRecorderLogger
}

// newProfileRecorder returns a recorder per name of names (at least one),
// made by b.
func newProfileRecorder(b recorderMaker, names []string) *profileRecorder {
	r := &profileRecorder{byName: make(map[string]events.EventRecorder, len(names))}
	for i, name := range names {
		r.byName[name] = b.NewRecorder(scheme.Scheme, name)
		if i == 0 {
			r.first = r.byName[name]
		}
	}
	return r
}

// Eventf records with the recorder of the profile (see profileRecorder).
func (r *profileRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.of(regarding, related).Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// WithLogger returns r: the events record as they would without a logger
// (the plugins' events; kube-scheduler's logs them too). It makes r what
// the framework records with (fwprofile.Setup.Recorder).
func (r *profileRecorder) WithLogger(klog.Logger) events.EventRecorderLogger { return r }

// of picks the recorder of regarding and related. O(1).
func (r *profileRecorder) of(regarding, related runtime.Object) events.EventRecorder {
	for _, obj := range []runtime.Object{related, regarding} {
		if p, ok := obj.(*v1.Pod); ok && p != nil {
			if rec, ok := r.byName[p.Spec.SchedulerName]; ok {
				return rec
			}
		}
	}
	return r.first
}
