package scheduler

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/profile"
)

// NewProfiles builds kube-scheduler's framework for each of profs, the
// one place both drivers (the live scheduler and the simulator) build
// them: the first on first, each other alongside it (profile.Setup.
// Alongside: one snapshot, informer factory, client and DRA manager, as
// kube-scheduler's profiles share them) with first's Plugins and NotePod,
// and it makes cfg wake and gate each profile's pods as that profile's
// plugins ask (UseProfileHints; with one profile, UseFrameworkHints).
// Pass the frameworks to Options.Profiles. Call it before the queue is built; close the frameworks
// with CloseProfiles. On an error those built are closed.
// O(profiles × plugins).
func NewProfiles(ctx context.Context, cfg *schedq.Config[types.NamespacedName, *v1.Pod], profs []*config.KubeSchedulerProfile,
	first profile.Setup, logger klog.Logger) ([]*profile.Framework, error) {
	if len(profs) == 0 {
		return nil, errors.New("scheduler: no profile to build")
	}
	fws := make([]*profile.Framework, 0, len(profs))
	for _, prof := range profs {
		setup := first
		if len(fws) > 0 {
			setup = profile.Setup{Snapshot: first.Snapshot, Alongside: fws[0], Plugins: first.Plugins, NotePod: first.NotePod, Recorder: first.Recorder}
		}
		fw, err := profile.NewFrameworkOn(ctx, prof, setup)
		if err != nil {
			CloseProfiles(fws)
			return nil, err
		}
		fws = append(fws, fw)
	}
	if err := UseProfileHints(ctx, cfg, fws, logger); err != nil {
		CloseProfiles(fws)
		return nil, err
	}
	return fws, nil
}

// CloseProfiles closes fws, the first (the others' base: Setup.Alongside)
// last.
func CloseProfiles(fws []*profile.Framework) {
	for i := len(fws) - 1; i >= 0; i-- {
		fws[i].Close()
	}
}
