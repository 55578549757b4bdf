package sim

import (
	"fmt"
	"slices"
	"strings"

	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/schedq/schedq/kube/profile"
)

// gpuMode is how GPUDevices runs in a replay.
type gpuMode int

const (
	gpuModeNone   gpuMode = iota // no trace, or gpuModel capacity: no GPUDevices
	gpuModeDevice                // the device model: GPUDevices fits, scores and reserves
	gpuModeDRA                   // gpuModel dra: DynamicResources allocates, GPUDevices only scores
)

// gpuMode is the scenario's: a trace on DRA (the default with a trace) or
// on the device model, else none; for a forecast forked from a trace
// replay, the replay's.
func (s *Scenario) gpuMode() gpuMode {
	switch {
	case s.Trace == nil:
		return s.forkedGPU
	case s.Scheduler.gpuModel() == GPUModelDevice:
		return gpuModeDevice
	case s.Scheduler.gpuModel() == GPUModelDRA:
		return gpuModeDRA
	}
	return gpuModeNone
}

// gpuModel is scheduler.gpuModel, dra if unset.
func (sp SchedulerSpec) gpuModel() string { return cmpOr(sp.GPUModel, GPUModelDRA) }

// gpuPoints are GPUDevices' extension points that the device model needs:
// its fit and its choice of GPUs.
var gpuPoints = []struct {
	name string
	set  func(*config.Plugins) *config.PluginSet
}{
	{"preFilter", func(p *config.Plugins) *config.PluginSet { return &p.PreFilter }},
	{"filter", func(p *config.Plugins) *config.PluginSet { return &p.Filter }},
	{"reserve", func(p *config.Plugins) *config.PluginSet { return &p.Reserve }},
}

// applyGPUConfig sets GPUDevices in prof, a profile of scheduler.config
// (or the default one), for the scenario sp in mode (with none, prof must
// not name GPUDevices); i is its index in the file, for the messages'
// field paths. The profile decides where it names the plugin,
// and scheduler.gpuPolicy is a shorthand:
//
//   - on the device model, GPUDevices is enabled at PreFilter, Filter and
//     Reserve, where the profile does not enable it; disabling it there
//     is an error (those are the device model itself); with DRA, which
//     fits and allocates the devices, enabling it there is an error;
//   - the policy is GPUDevicesArgs.Policy, from pluginConfig or from
//     scheduler.gpuPolicy (which sets the args); both, naming different
//     policies, is an error naming both;
//   - with scheduler.gpuPolicy, a profile that names GPUDevices at score
//     keeps its score plugins and weights (disabling GPUDevices there is
//     an error); one that does not gets the policy as its only scorer:
//     every other PreScore and Score plugin disabled, GPUDevices at score
//     with weight 1;
//   - GPUDevices enabled at score without a policy is an error.
//
// O(plugins of the profile).
func applyGPUConfig(prof *config.KubeSchedulerProfile, i int, sp SchedulerSpec, mode gpuMode) error {
	where := cmpOr(sp.Config, "the default profile")
	if prof.Plugins == nil {
		prof.Plugins = &config.Plugins{}
	}
	argsAt := slices.IndexFunc(prof.PluginConfig, func(pc config.PluginConfig) bool { return pc.Name == profile.GPUDevices })
	if mode == gpuModeNone {
		if at := gpuNamedAt(prof.Plugins, i); at != "" || argsAt >= 0 {
			return fmt.Errorf("%s names %s (%s): it is the GPU models' plugin, which runs in a trace replay with gpuModel device or dra",
				where, profile.GPUDevices, cmpOr(at, argsPath(i, argsAt).String()))
		}
		return nil
	}
	if err := gpuPointsFor(prof.Plugins, mode, where); err != nil {
		return err
	}
	return gpuPolicyFor(prof, argsPath(i, argsAt), argsAt, sp.GPUPolicy, where)
}

// gpuProfiles refuses several profiles (n) in a GPU replay (mode other
// than none): the GPU models hold one policy, GPUDevices' of the one
// profile. file is scheduler.config.
func gpuProfiles(n int, mode gpuMode, file string) error {
	if n > 1 && mode != gpuModeNone {
		return fmt.Errorf("scheduler.config %s: a GPU replay runs one profile (the GPU model holds one policy), the file has %d: give it a file with the one profile to replay", file, n)
	}
	return nil
}

// argsPath is the field path of pluginConfig entry j of profile i.
func argsPath(i, j int) *fieldpath.Path {
	return fieldpath.NewPath("profiles").Index(i).Child("pluginConfig").Index(j)
}

// gpuPointsFor enables GPUDevices at PreFilter, Filter and Reserve on the
// device model, or checks that p does not with DRA. O(plugins).
func gpuPointsFor(p *config.Plugins, mode gpuMode, where string) error {
	for _, pt := range gpuPoints {
		set := pt.set(p)
		if mode == gpuModeDRA {
			if has(set.Enabled, false) {
				return fmt.Errorf("%s enables %s at %s: with gpuModel dra, DynamicResources fits and allocates the GPUs, and GPUDevices only scores",
					where, profile.GPUDevices, pt.name)
			}
			continue
		}
		if disabled(set, false) || disabled(&p.MultiPoint, false) {
			return fmt.Errorf("%s disables %s at %s: its PreFilter, Filter and Reserve are the device model (gpuModel: capacity has no per-GPU fit)",
				where, profile.GPUDevices, pt.name)
		}
		if !enabledAt(p, set) {
			set.Enabled = append(set.Enabled, config.Plugin{Name: profile.GPUDevices})
		}
	}
	return nil
}

// gpuPolicyFor reconciles the policy of prof's GPUDevices args (entry
// argsAt, -1 if none, at field path at) with flag (scheduler.gpuPolicy), which sets the
// args and, unless prof names GPUDevices at score, makes it the only
// scorer. O(plugins).
func gpuPolicyFor(prof *config.KubeSchedulerProfile, at *fieldpath.Path, argsAt int, flag, where string) error {
	p := prof.Plugins
	args := &profile.GPUDevicesArgs{}
	if argsAt >= 0 {
		a, err := profile.DecodeGPUDevicesArgs(prof.PluginConfig[argsAt].Args)
		if err != nil { // Load checked them
			return fmt.Errorf("%s: %s.args: %w", where, at, err)
		}
		args = a
	}
	scoring := enabledAt(p, &p.Score)
	if flag != "" {
		name, err := gpuPolicyArg(flag)
		if err != nil {
			return fmt.Errorf("scheduler.gpuPolicy (--gpu-policy): %w", err)
		}
		if args.Policy != "" && args.Policy != name {
			return fmt.Errorf("scheduler.gpuPolicy (--gpu-policy) %s and %s's %s.args.policy %s disagree: set the policy in one of them",
				flag, where, at, args.Policy)
		}
		args.Policy = name
		switch {
		case disabled(&p.Score, false) || disabled(&p.MultiPoint, false):
			return fmt.Errorf("scheduler.gpuPolicy (--gpu-policy) %s scores with %s, which %s disables at score: enable it there, or drop the policy", flag, profile.GPUDevices, where)
		case !scoring:
			all := []config.Plugin{{Name: "*"}}
			p.PreScore = config.PluginSet{Disabled: all}
			p.Score = config.PluginSet{Disabled: all, Enabled: []config.Plugin{{Name: profile.GPUDevices, Weight: 1}}}
			scoring = true
		}
		if argsAt < 0 {
			prof.PluginConfig = append(prof.PluginConfig, config.PluginConfig{Name: profile.GPUDevices})
			argsAt = len(prof.PluginConfig) - 1
		}
		prof.PluginConfig[argsAt].Args = args
	}
	if scoring && args.Policy == "" {
		return fmt.Errorf("%s enables %s at score without a policy: give it args {policy: ...} in pluginConfig (one of %s), or set scheduler.gpuPolicy",
			where, profile.GPUDevices, strings.Join(profile.GPUPolicies, ", "))
	}
	return nil
}

// gpuPolicyArg is the args' name of a policy named in any case.
func gpuPolicyArg(name string) (string, error) {
	for _, n := range profile.GPUPolicies {
		if strings.EqualFold(n, name) {
			return n, nil
		}
	}
	return "", fmt.Errorf("%q is not a GPU policy (known: %s)", name, strings.Join(profile.GPUPolicies, ", "))
}

// has reports whether list names GPUDevices, or "*" if star.
func has(list []config.Plugin, star bool) bool {
	return slices.ContainsFunc(list, func(pl config.Plugin) bool {
		return pl.Name == profile.GPUDevices || star && pl.Name == "*"
	})
}

// disabled reports whether set disables GPUDevices by name (or all
// plugins, if star).
func disabled(set *config.PluginSet, star bool) bool { return has(set.Disabled, star) }

// enabledAt reports whether the framework runs GPUDevices at the
// extension point of set: enabled there, or at multiPoint and not
// disabled there by name or by "*".
func enabledAt(p *config.Plugins, set *config.PluginSet) bool {
	return has(set.Enabled, false) || has(p.MultiPoint.Enabled, false) && !disabled(set, true)
}

// gpuNamedAt is the field path of the first mention of GPUDevices in p's
// plugin sets ("" if none), p being profile i's. O(plugins).
func gpuNamedAt(p *config.Plugins, i int) string {
	for _, pt := range []struct {
		name string
		set  config.PluginSet
	}{{"multiPoint", p.MultiPoint}, {"preFilter", p.PreFilter}, {"filter", p.Filter}, {"postFilter", p.PostFilter},
		{"preScore", p.PreScore}, {"score", p.Score}, {"reserve", p.Reserve}, {"permit", p.Permit}, {"preBind", p.PreBind}} {
		for _, l := range []struct {
			name string
			list []config.Plugin
		}{{"enabled", pt.set.Enabled}, {"disabled", pt.set.Disabled}} {
			if j := slices.IndexFunc(l.list, func(pl config.Plugin) bool { return pl.Name == profile.GPUDevices }); j >= 0 {
				return fieldpath.NewPath("profiles").Index(i).Child("plugins", pt.name, l.name).Index(j).String()
			}
		}
	}
	return ""
}

// checkGPUConfig loads scheduler.config and applies the scenario's GPU
// settings to each of its profiles (applyGPUConfig), so that a file that
// does not load, has several profiles in a GPU replay (gpuProfiles), or
// conflicts with them is refused when the scenario is validated, before
// any run (--compare config=FILE too).
func (s *Scenario) checkGPUConfig(bad func(string, string, ...any)) {
	sp := s.Scheduler
	if sp.Config == "" {
		return
	}
	kcfg, err := profile.Load(sp.Config)
	if err != nil {
		bad("scheduler.config", "%v", err)
		return
	}
	if err := gpuProfiles(len(kcfg.Profiles), s.gpuMode(), sp.Config); err != nil {
		bad("scheduler.config", "%v", err)
		return
	}
	for i := range kcfg.Profiles {
		if err := applyGPUConfig(&kcfg.Profiles[i], i, sp, s.gpuMode()); err != nil {
			bad("scheduler.config", "%v", err)
			return
		}
	}
}

// ConfigGPUPolicy is the policy that scheduler.config gives GPUDevices in
// its args, as the file spells it, or "" when there is no file or it
// gives none. It reads the file; O(plugin configs).
func (s *Scenario) ConfigGPUPolicy() (string, error) {
	if s.Scheduler.Config == "" {
		return "", nil
	}
	kcfg, err := profile.Load(s.Scheduler.Config)
	if err != nil {
		return "", fmt.Errorf("scheduler.config: %w", err)
	}
	for k, prof := range kcfg.Profiles {
		for i, pc := range prof.PluginConfig {
			if pc.Name != profile.GPUDevices {
				continue
			}
			a, err := profile.DecodeGPUDevicesArgs(pc.Args)
			if err != nil {
				return "", fmt.Errorf("scheduler.config: %s: %s.args: %w", s.Scheduler.Config, argsPath(k, i), err)
			}
			return a.Policy, nil
		}
	}
	return "", nil
}
