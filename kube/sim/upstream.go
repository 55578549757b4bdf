package sim

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
)

// Plugin sets of SchedulerSpec.Plugins.
const (
	PluginsSchedq   = "schedq"   // schedq's hand-written plugins (the default)
	PluginsUpstream = "upstream" // kube-scheduler v1.37.2's framework and in-tree plugins
)

// upstream reports whether the scenario runs lone pods through
// kube-scheduler's framework.
func (sp SchedulerSpec) upstream() bool { return sp.Plugins == PluginsUpstream }

// newFramework builds kube-scheduler's framework for a scenario that asks
// for it (nil otherwise): the profile of scheduler.config, or the default
// one, over an empty snapshot that the scheduler's cache keeps up to date,
// with the scenario's objects in its informers. It makes cfg wake and gate
// pods as the framework's plugins ask. Groups and preemption keep schedq's
// own plugins.
func (s *sim) newFramework(ctx context.Context, cfg *schedq.Config[types.NamespacedName, *v1.Pod]) (*profile.Framework, error) {
	sp := s.sc.Scheduler
	if !sp.upstream() {
		return nil, nil
	}
	kcfg, err := profile.Load(sp.Config)
	if err != nil {
		return nil, fmt.Errorf("scheduler.config: %w", err)
	}
	if n := len(kcfg.Profiles); n != 1 {
		return nil, fmt.Errorf("scheduler.config %s: the simulator runs one profile, the file has %d", sp.Config, n)
	}
	fw, err := profile.NewFrameworkOn(ctx, &kcfg.Profiles[0], profile.Setup{Snapshot: backendcache.NewEmptySnapshot()})
	if err != nil {
		return nil, err
	}
	if err := scheduler.UseFrameworkHints(ctx, cfg, fw, logr.Discard()); err != nil {
		fw.Close()
		return nil, err
	}
	return fw, nil
}

// close releases the framework, if any.
func (s *sim) close() {
	if s.fw != nil {
		s.fw.Close()
	}
}

// validatePlugins checks plugins and config, and refuses the settings of
// schedq's plugins with kube-scheduler's, which would ignore them.
func (sp SchedulerSpec) validatePlugins(bad func(string, string, ...any)) {
	switch sp.Plugins {
	case "", PluginsSchedq, PluginsUpstream:
	default:
		bad("scheduler.plugins", "%q is not %s or %s", sp.Plugins, PluginsSchedq, PluginsUpstream)
		return
	}
	if sp.upstream() {
		if len(sp.DisablePlugins) > 0 {
			bad("scheduler.disablePlugins", "names schedq's plugins; with plugins: upstream, disable plugins in the profile of scheduler.config")
		}
		if sp.Scoring != "" {
			bad("scheduler.scoring", "sets schedq's scoring; with plugins: upstream, the profile of scheduler.config scores")
		}
		return
	}
	if sp.Config != "" {
		bad("scheduler.config", "is kube-scheduler's profile: set scheduler.plugins: upstream (--upstream-plugins) too")
	}
}
