package app

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/schedq/schedq/kube/profile"
)

// schedq's own settings in the --config file: the args of the first
// profile's pluginConfig entry named Schedq (profile.SchedqArgs). Each is
// also a flag; a flag left unset takes the file's value, a flag set to
// the same value is accepted, and a flag set to another is refused
// (FileConflicts), as --scheduler-name is against the file's profiles.

// fileSetting is one of schedq's settings: its flag, its field under the
// args, how the file's value goes into Options (apply reports whether the
// file sets it) and how an Options shows it, for comparing and messages.
type fileSetting struct {
	flag, field string
	apply       func(o *Options, a *profile.SchedqArgs) bool
	show        func(o *Options) string
	// inFile shows the value as the file writes it, if not as show does.
	inFile func(o *Options) string
}

// fileSettings are every setting the file may give, in the order of the
// flags in docs/scheduler.md.
var fileSettings = []fileSetting{
	{"no-wake-budget", "wakeBudget", func(o *Options, a *profile.SchedqArgs) bool {
		if a.WakeBudget != nil {
			o.NoWakeBudget = !*a.WakeBudget
		}
		return a.WakeBudget != nil
	}, func(o *Options) string { return strconv.FormatBool(o.NoWakeBudget) },
		func(o *Options) string { return strconv.FormatBool(!o.NoWakeBudget) }},
	{"fair-namespaces", "fairness.namespaces", func(o *Options, a *profile.SchedqArgs) bool {
		if a.Fairness.Namespaces != nil {
			o.Fairness.Namespaces = *a.Fairness.Namespaces
		}
		return a.Fairness.Namespaces != nil
	}, func(o *Options) string { return strconv.FormatBool(o.Fairness.Namespaces) }, nil},
	{"fair-namespace-weights", "fairness.weights", func(o *Options, a *profile.SchedqArgs) bool {
		if a.Fairness.Weights != nil {
			o.Fairness.Weights = maps.Clone(a.Fairness.Weights)
		}
		return a.Fairness.Weights != nil
	}, func(o *Options) string { return showWeights(o.Fairness.Weights) }, func(o *Options) string { return orNone(showWeights(o.Fairness.Weights), "{}") }},
	{"fair-half-life", "fairness.halfLife", func(o *Options, a *profile.SchedqArgs) bool {
		if a.Fairness.HalfLife != nil {
			o.Fairness.HalfLife = *a.Fairness.HalfLife
		}
		return a.Fairness.HalfLife != nil
	}, func(o *Options) string { return o.Fairness.HalfLife.String() }, nil},
	{"history-label", "history.labels", func(o *Options, a *profile.SchedqArgs) bool {
		if a.History.Labels != nil {
			o.History.Labels = slices.Clone(a.History.Labels)
		}
		return a.History.Labels != nil
	}, func(o *Options) string { return strings.Join(o.History.Labels, ",") }, func(o *Options) string { return orNone(strings.Join(o.History.Labels, ","), "[]") }},
	{"history-tail", "history.tail", func(o *Options, a *profile.SchedqArgs) bool {
		if a.History.Tail != nil {
			o.History.Tail = *a.History.Tail
		}
		return a.History.Tail != nil
	}, func(o *Options) string { return o.History.Tail }, nil},
	{"history-file", "history.file", func(o *Options, a *profile.SchedqArgs) bool {
		if a.History.File != nil {
			o.History.File = *a.History.File
		}
		return a.History.File != nil
	}, func(o *Options) string { return o.History.File }, nil},
	{"stall-timeout", "stallTimeout", func(o *Options, a *profile.SchedqArgs) bool {
		if a.StallTimeout != nil {
			o.StallTimeout = *a.StallTimeout
		}
		return a.StallTimeout != nil
	}, func(o *Options) string { return o.StallTimeout.String() }, nil},
	{"leader-elect-fence-margin", "fenceMargin", func(o *Options, a *profile.SchedqArgs) bool {
		if a.FenceMargin != nil {
			o.FenceMargin = *a.FenceMargin
		}
		return a.FenceMargin != nil
	}, func(o *Options) string { return o.FenceMargin.String() }, nil},
}

// orNone is s, or empty (as the file writes it) followed by "(none)" if
// s is empty: a message's "labels is ;" would read as a typo.
func orNone(s, empty string) string {
	if s == "" {
		return empty + " (none)"
	}
	return s
}

// showWeights is weights as --fair-namespace-weights takes them, sorted.
func showWeights(w map[string]float64) string {
	parts := make([]string, 0, len(w))
	for _, ns := range slices.Sorted(maps.Keys(w)) {
		parts = append(parts, ns+"="+strconv.FormatFloat(w[ns], 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

// applySettings puts the settings the file gives (a, at path) in place of
// the flags' values, and notes where each came from (setBy). O(settings).
func (o *Options) applySettings(a *profile.SchedqArgs, path string) {
	o.Config.setBy = nil
	if a == nil {
		return
	}
	o.Config.setBy = map[string]string{}
	for _, s := range fileSettings {
		if s.apply(o, a) {
			o.Config.setBy[s.flag] = fmt.Sprintf("--config %s: %s.%s", o.Config.File, path, s.field)
		}
	}
}

// source names where the value of flag's setting came from, for a
// message: the file's field if the file gives it, else --flag.
func (o *Options) source(flag string) string {
	if s, ok := o.Config.setBy[flag]; ok {
		return s
	}
	return "--" + flag
}

// FileConflicts refuses each of schedq's settings that both the file and
// its flag give, with different values: flags are the options as the
// flags set them, before Validate applied the file to o, and changed
// reports whether a flag was given. Each error names the flag and the
// file's field. Nil without --config.
func (o *Options) FileConflicts(flags Options, changed func(flag string) bool) []error {
	var errs []error
	for _, s := range fileSettings {
		from, ok := o.Config.setBy[s.flag]
		if !ok || !changed(s.flag) || s.show(&flags) == s.show(o) {
			continue
		}
		inFile := s.show
		if s.inFile != nil {
			inFile = s.inFile
		}
		errs = append(errs, fmt.Errorf("--%s=%s: %s is %s; give it in one place", s.flag, s.show(&flags), from, inFile(o)))
	}
	return errs
}

// flagName names a setting by its flag alone: --flag.
func flagName(flag string) string { return "--" + flag }

// SettingsFields returns, for each flag of schedq's own settings, its
// field under the file's Schedq args: for the documentation's checks.
func SettingsFields() map[string]string {
	out := make(map[string]string, len(fileSettings))
	for _, s := range fileSettings {
		out[s.flag] = s.field
	}
	return out
}
