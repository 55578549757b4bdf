package sim

import (
	"fmt"
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
	for _, c := range s.configConflicts(set) {
		bad(c.field, "%s, but scheduler.config %s sets %s: the file decides; set it in one place", c.have, s.Scheduler.Config, c.file)
	}
	folded := *s
	folded.applySettings(set)
	folded.validateBackoff(func(field, format string, args ...any) {
		bad(field, "with the backoff of scheduler.config %s: %s", s.Scheduler.Config, fmt.Sprintf(format, args...))
	})
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
