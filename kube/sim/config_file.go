package sim

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/schedq/schedq/kube/profile"
)

// unhonouredWhy says, for each field profile.Unhonoured names, why the
// simulator refuses it rather than run without it.
var unhonouredWhy = map[string]string{
	"extenders":             "not supported",
	"clientConnection":      "the simulator has no API server, and schedq scheduler refuses it too (its flags set it)",
	"leaderElection":        "the simulator runs one scheduler, and schedq scheduler refuses it too (its flags set it)",
	"parallelism":           "the cycle runs on one goroutine",
	"delayCacheUntilActive": "the simulator runs one scheduler, and schedq scheduler refuses it too (its standby replicas keep their caches warm)",
}

// checkConfigFile refuses what scheduler.config sets that the simulator
// would not honour (as schedq scheduler refuses it), and a scenario
// setting that contradicts a value the file sets itself: its
// percentageOfNodesToScore (the profile's, else the file's) and its pod
// backoffs decide, as they do in schedq scheduler.
func (s *Scenario) checkConfigFile(bad func(string, string, ...any)) {
	if s.Scheduler.Config == "" {
		return
	}
	kcfg, set, err := profile.LoadSettings(s.Scheduler.Config)
	if err != nil {
		return // checkGPUConfig reports it
	}
	fields, err := profile.Unhonoured(kcfg)
	if err != nil {
		bad("scheduler.config", "%v", err)
		return
	}
	for _, f := range fields {
		bad("scheduler.config", "%s: %s: %s", s.Scheduler.Config, f, unhonouredWhy[f])
	}
	for _, f := range schedulerOnly(set, s.learnsRuntimes) {
		bad("scheduler.config", "%s: %s.%s: %s", s.Scheduler.Config, set.SchedqPath, f.field, f.why)
	}
	for _, c := range s.configConflicts(set) {
		bad(c.field, "%s, but scheduler.config %s sets %s: the file decides; set it in one place", c.have, s.Scheduler.Config, c.file)
	}
	folded := *s
	folded.applySettings(set)
	folded.validateBackoff(func(field, format string, args ...any) {
		bad(field, "with the backoff of scheduler.config %s: %s", s.Scheduler.Config, fmt.Sprintf(format, args...))
	})
	folded.needFairness(func(field, format string, args ...any) {
		bad(field, "with the Schedq args of scheduler.config %s: %s", s.Scheduler.Config, fmt.Sprintf(format, args...))
	})
}

// onlyField is one of schedq's settings (the file's Schedq args) that only
// schedq scheduler applies, and why.
type onlyField struct{ field, why string }

// schedulerOnly lists the Schedq args set gives that the simulator does
// not apply: the fence margin, the forecasts' history (unless the run
// learns runtimes: learns) and the stall timeout. The wake budget and
// fairness it applies (applySettings).
func schedulerOnly(set profile.Settings, learns bool) []onlyField {
	a := set.Schedq
	if a == nil {
		return nil
	}
	var out []onlyField
	if a.FenceMargin != nil {
		out = append(out, onlyField{"fenceMargin", "schedq scheduler's only: the simulator has no lease to fence its bindings with"})
	}
	if !learns && (a.History.Labels != nil || a.History.Tail != nil || a.History.File != nil) {
		out = append(out, onlyField{"history", "schedq scheduler's and schedq whatif's only: a simulation learns no runtimes"})
	}
	if a.StallTimeout != nil {
		out = append(out, onlyField{"stallTimeout", "schedq scheduler's only: the simulator has no health checks"})
	}
	return out
}

// conflict is a scenario setting that contradicts the configuration file.
type conflict struct{ field, have, file string }

// configConflicts lists the scenario's settings that a value set in the
// configuration file contradicts. A scenario setting left at its default
// (0 for the percentage and the initial backoff, unset for the maximum)
// never does.
func (s *Scenario) configConflicts(set profile.Settings) []conflict {
	var out []conflict
	if p := set.PercentageOfNodesToScore; p != nil && s.Scheduler.PercentageOfNodesToScore != 0 && s.Scheduler.PercentageOfNodesToScore != int(*p) {
		out = append(out, conflict{"scheduler.percentageOfNodesToScore", fmt.Sprint(s.Scheduler.PercentageOfNodesToScore), fmt.Sprintf("percentageOfNodesToScore %d", *p)})
	}
	q := s.Queue
	if b := set.PodInitialBackoffSeconds; b != nil && q.InitialBackoff != 0 && q.InitialBackoff != seconds(*b) {
		out = append(out, conflict{"queue.initialBackoff", q.InitialBackoff.String(), fmt.Sprintf("podInitialBackoffSeconds %d", *b)})
	}
	if b := set.PodMaxBackoffSeconds; b != nil && q.MaxBackoff != nil && *q.MaxBackoff != seconds(*b) {
		out = append(out, conflict{"queue.maxBackoff", q.MaxBackoff.String(), fmt.Sprintf("podMaxBackoffSeconds %d", *b)})
	}
	if q.DisableBackoff && (set.PodInitialBackoffSeconds != nil || set.PodMaxBackoffSeconds != nil) {
		out = append(out, conflict{"queue.disableBackoff", "true", "the pod backoff"})
	}
	if a := set.Schedq; a != nil {
		out = append(out, s.schedqConflicts(a, set.SchedqPath)...)
	}
	return out
}

// schedqConflicts lists the scenario's queue settings that the file's
// Schedq args (a, at path) contradict: the wake budget and fairness. A
// setting left at its default (unset, false, none, 0) never does.
func (s *Scenario) schedqConflicts(a *profile.SchedqArgs, path string) []conflict {
	var out []conflict
	q := s.Queue
	if b := a.WakeBudget; b != nil && q.WakeBudget != nil && *q.WakeBudget != *b {
		out = append(out, conflict{"queue.wakeBudget", fmt.Sprint(*q.WakeBudget), fmt.Sprintf("%s.wakeBudget %v", path, *b)})
	}
	f := a.Fairness
	if f.Namespaces != nil && q.Fairness && !*f.Namespaces {
		out = append(out, conflict{"queue.fairness", "true", path + ".fairness.namespaces false"})
	}
	if f.Weights != nil && q.FairnessWeights != nil && !maps.Equal(f.Weights, q.FairnessWeights) {
		out = append(out, conflict{"queue.fairnessWeights", fmt.Sprint(q.FairnessWeights), fmt.Sprintf("%s.fairness.weights %v", path, f.Weights)})
	}
	if f.HalfLife != nil && q.FairnessHalfLife != 0 && q.FairnessHalfLife != *f.HalfLife {
		out = append(out, conflict{"queue.fairnessHalfLife", q.FairnessHalfLife.String(), fmt.Sprintf("%s.fairness.halfLife %v", path, *f.HalfLife)})
	}
	return out
}

// applySettings puts the values the configuration file sets in place of
// the scenario's (checkConfigFile refused any that contradict).
func (s *Scenario) applySettings(set profile.Settings) {
	if p := set.PercentageOfNodesToScore; p != nil {
		s.Scheduler.PercentageOfNodesToScore = int(*p)
	}
	if b := set.PodInitialBackoffSeconds; b != nil {
		s.Queue.InitialBackoff = seconds(*b)
	}
	if b := set.PodMaxBackoffSeconds; b != nil {
		d := seconds(*b)
		s.Queue.MaxBackoff = &d
	}
	if a := set.Schedq; a != nil {
		s.applySchedq(a)
	}
}

// applySchedq puts the wake budget and fairness of the file's Schedq args
// in place of the scenario's.
func (s *Scenario) applySchedq(a *profile.SchedqArgs) {
	q := &s.Queue
	if b := a.WakeBudget; b != nil {
		v := *b
		q.WakeBudget = &v
	}
	if n := a.Fairness.Namespaces; n != nil {
		q.Fairness = *n
	}
	if a.Fairness.Weights != nil {
		q.FairnessWeights = maps.Clone(a.Fairness.Weights)
	}
	if h := a.Fairness.HalfLife; h != nil {
		q.FairnessHalfLife = *h
	}
}

// withConfigFile returns the scenario a run follows: s, or a copy with
// the settings scheduler.config sets in place of the scenario's. A
// scenario with a loaded Profile (or Profiles) has its settings already.
func (s *Scenario) withConfigFile() (*Scenario, error) {
	if s.Scheduler.Config == "" || s.Scheduler.Profile != nil || len(s.Scheduler.Profiles) > 0 {
		return s, nil
	}
	_, set, err := profile.LoadSettings(s.Scheduler.Config)
	if err != nil {
		return nil, fmt.Errorf("scheduler.config: %w", err)
	}
	if set == (profile.Settings{}) {
		return s, nil
	}
	folded := *s
	folded.applySettings(set)
	return &folded, nil
}

func seconds(n int64) time.Duration { return time.Duration(n) * time.Second }

// FileDecides refuses the setting key of Set (as --compare gives it) when
// scheduler.config gives it another value than s holds: the file's value
// replaces the scenario's in the run (withConfigFile), so the setting
// would change nothing. A value the scenario's own fields could not tell
// from their default (fairness false, a percentage or an initial backoff
// of 0) is not refused by Validate, which takes it for unset, but a key
// that Set was given is set. Nil without a file, for a key the file does
// not set, and for the file's own value.
func (s *Scenario) FileDecides(key string) error {
	field, ok := fileFields[key]
	if s.Scheduler.Config == "" || !ok {
		return nil
	}
	_, set, err := profile.LoadSettings(s.Scheduler.Config)
	if err != nil {
		return nil // Validate reports it
	}
	folded := *s
	folded.applySettings(set)
	have, file := s.settingOf(key), folded.settingOf(key)
	if have == file {
		return nil
	}
	if set.SchedqPath != "" {
		field = strings.ReplaceAll(field, "ARGS", set.SchedqPath)
	}
	return fmt.Errorf("%s=%s: scheduler.config %s sets %s %s, and the file decides: compare two files with config=FILE instead", key, have, s.Scheduler.Config, field, file)
}

// fileFields names, for each key of Set whose setting a configuration
// file may give, the file's field (ARGS: the Schedq args' path).
var fileFields = map[string]string{
	"wakeBudget":               "ARGS.wakeBudget",
	"fairness":                 "ARGS.fairness.namespaces",
	"percentageOfNodesToScore": "percentageOfNodesToScore",
	"initialBackoff":           "podInitialBackoffSeconds",
	"maxBackoff":               "podMaxBackoffSeconds",
}

// settingOf is the value of a key of fileFields in s, as Set takes it.
func (s *Scenario) settingOf(key string) string {
	q := s.Queue
	switch key {
	case "wakeBudget":
		return strconv.FormatBool(q.WakeBudget == nil || *q.WakeBudget)
	case "fairness":
		return strconv.FormatBool(q.Fairness)
	case "percentageOfNodesToScore":
		return strconv.Itoa(s.Scheduler.PercentageOfNodesToScore)
	case "initialBackoff":
		return q.InitialBackoff.String()
	case "maxBackoff":
		if q.MaxBackoff == nil {
			return "unset"
		}
		return q.MaxBackoff.String()
	}
	return ""
}

// ConfigHistory returns the history of the Schedq args of
// scheduler.config (nil labels or tail where the file leaves them) and
// the args' field path; nothing without a file or args.
func (s *Scenario) ConfigHistory() (profile.HistoryArgs, string, error) {
	if s.Scheduler.Config == "" {
		return profile.HistoryArgs{}, "", nil
	}
	_, set, err := profile.LoadSettings(s.Scheduler.Config)
	if err != nil {
		return profile.HistoryArgs{}, "", fmt.Errorf("scheduler.config: %w", err)
	}
	if set.Schedq == nil {
		return profile.HistoryArgs{}, "", nil
	}
	return set.Schedq.History, set.SchedqPath, nil
}
