package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq/kube/profile"
)

// ConfigOptions are the settings of a KubeSchedulerConfiguration file
// (--config) that schedq's scheduler honours.
type ConfigOptions struct {
	// File is the KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)
	// to read. Empty: none, the flags decide.
	File string
	// InitialBackoff and MaxBackoff are the queue's backoff, from the
	// file's podInitialBackoffSeconds and podMaxBackoffSeconds. Zero: the
	// queue's defaults (1s and 10s, as kube-scheduler's).
	InitialBackoff, MaxBackoff time.Duration
	// Profiles are the file's profiles, or kube-scheduler's default one
	// without a file, each run by a framework of its own (its plugins,
	// weights and pluginConfig) for the pods whose spec.schedulerName is
	// its schedulerName; set by Validate, else by Run. Profile is the
	// first, whose schedulerName is SchedulerName's, and the one the
	// forecasts simulate.
	Profiles []*config.KubeSchedulerProfile
	Profile  *config.KubeSchedulerProfile
	// setBy names, for each flag whose setting the file gives (its
	// Schedq args, settings.go), the file's field; nil without.
	setBy map[string]string
}

// schedulerNames are the schedulerNames of Config.Profiles, in order;
// with one profile, SchedulerName alone (the default profile, without
// --config, schedules the pods of --scheduler-name).
func (o *Options) schedulerNames() []string {
	profs := o.profiles()
	if len(profs) <= 1 {
		return []string{o.SchedulerName}
	}
	names := make([]string, 0, len(profs))
	for _, p := range profs {
		names = append(names, p.SchedulerName)
	}
	return names
}

// loadProfile sets Config.Profile to kube-scheduler's default profile,
// without --config (--scheduler-name still names the pods to schedule).
func (o *Options) loadProfile() error {
	cfg, err := profile.Default()
	if err != nil {
		return err
	}
	o.Config.Profile = &cfg.Profiles[0]
	o.Config.Profiles = []*config.KubeSchedulerProfile{o.Config.Profile}
	return nil
}

// applyConfig loads Config.File with kube-scheduler's own decoding,
// defaulting and validation (profile.Load: distinct schedulerNames, one
// queue sort plugin and args for all profiles), refuses what schedq
// cannot honour yet, and applies the rest: the profiles (the first one's
// schedulerName replaces --scheduler-name), percentageOfNodesToScore (the
// file's, replacing --percentage-of-nodes-to-score; a profile's own
// overrides it for its pods, and with one profile replaces the flag too),
// the backoffs, and schedq's own settings (the first profile's Schedq
// args, settings.go), each in place of its flag's value.
//
// What upstream's framework refuses as it is built (a plugin enabled at
// an extension point it does not implement, say) is refused here too, by
// building each profile's once on no cluster (buildsOffline), as
// kube-scheduler does before it connects.
//
// Refused, because schedq would silently run something else: what
// profile.Unhonoured names (extenders; clientConnection, leaderElection
// or parallelism other than the defaults, which schedq's flags set;
// delayCacheUntilActive).
func (o *Options) applyConfig() error {
	cfg, err := profile.Load(o.Config.File)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var unsupported []string
	p := cfg.Profiles[0]
	fields, err := profile.Unhonoured(cfg)
	if err != nil {
		return err
	}
	for _, f := range fields {
		unsupported = append(unsupported, unhonouredWhy[f])
	}
	// GPUDevices is the simulator's: enabled, its factory fails the
	// profile's build; its args alone the framework would pass over.
	for i := range cfg.Profiles {
		for j, pc := range cfg.Profiles[i].PluginConfig {
			if pc.Name == profile.GPUDevices {
				unsupported = append(unsupported, fmt.Sprintf("profiles[%d].pluginConfig[%d] (%s): the simulator's model of a trace's GPUs (schedq simulate --trace); this scheduler's cluster has none for its policy to choose", i, j, profile.GPUDevices))
			}
		}
	}
	if len(unsupported) > 0 {
		return fmt.Errorf("--config %s: this version of schedq cannot honour:\n  %s", o.Config.File, strings.Join(unsupported, "\n  "))
	}
	// The file's Schedq args are read before anything of the file is
	// applied: a file that fails leaves o as the flags set it, so that
	// the flags' conflicts with it (checked beside the file's error)
	// report none it did not give.
	a, path, err := profile.SchedqSettings(cfg)
	if err != nil {
		return fmt.Errorf("--config %s: %w", o.Config.File, err)
	}
	o.Config.Profiles = nil
	for i := range cfg.Profiles {
		if err := buildsOffline(&cfg.Profiles[i]); err != nil {
			return fmt.Errorf("--config %s: %w", o.Config.File, err)
		}
		o.Config.Profiles = append(o.Config.Profiles, &cfg.Profiles[i])
	}
	o.SchedulerName = p.SchedulerName
	o.Config.Profile = o.Config.Profiles[0]
	switch {
	case len(cfg.Profiles) == 1 && p.PercentageOfNodesToScore != nil:
		o.PercentageOfNodesToScore = int(*p.PercentageOfNodesToScore)
	case cfg.PercentageOfNodesToScore != nil:
		o.PercentageOfNodesToScore = int(*cfg.PercentageOfNodesToScore)
	}
	o.Config.InitialBackoff = time.Duration(cfg.PodInitialBackoffSeconds) * time.Second
	o.Config.MaxBackoff = time.Duration(cfg.PodMaxBackoffSeconds) * time.Second
	o.applySettings(a, path)
	return nil
}

// unhonouredWhy says, for each field profile.Unhonoured names, what sets
// it in schedq's scheduler instead.
var unhonouredWhy = map[string]string{
	"extenders":             "extenders: not supported",
	"clientConnection":      "clientConnection: set by --kubeconfig, --kube-api-qps, --kube-api-burst, not by the file",
	"leaderElection":        "leaderElection: set by the --leader-elect* flags, not by the file",
	"parallelism":           "parallelism: set by none: the cycle runs on one goroutine, not by the file",
	"delayCacheUntilActive": "delayCacheUntilActive: a standby replica keeps its caches and queue warm, so that it schedules at once when it leads",
}

// buildsOffline builds kube-scheduler's framework for prof on a fake
// clientset and closes it: the errors NewFramework returns (a plugin at
// an extension point it does not extend, a plugin's factory refusing its
// args) are then found before anything connects. Upstream's message,
// after the profile's name.
func buildsOffline(prof *config.KubeSchedulerProfile) error {
	fw, err := profile.NewFrameworkOn(context.Background(), prof, profile.Setup{Snapshot: backendcache.NewEmptySnapshot()})
	if err != nil {
		return err
	}
	return fw.Close()
}
