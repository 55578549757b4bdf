package scheduler

import (
	"errors"
	"fmt"
	"time"
)

// Features are the optional parts of a scheduler's stack that both of
// its drivers, the live scheduler's terms (kube/app) and the simulator
// (kube/sim), turn on, through Enable alone, so that the two build the
// same stack from the same configuration.
type Features struct {
	// Preemption, if set, turns preemption on (EnablePreemption).
	Preemption *PreemptionOptions
	// GangRelease, if set, turns gang release on (EnableGangRelease).
	GangRelease *GangReleaseOptions
}

// Enable turns f's features on for s, in one order: preemption, then gang
// release. Call it once, before the first cycle. A feature that cannot be
// turned on stays off and is named in the error; the others are on.
func (s *Scheduler) Enable(f Features) error {
	var errs []error
	if f.Preemption != nil {
		if err := s.EnablePreemption(*f.Preemption); err != nil {
			errs = append(errs, fmt.Errorf("preemption off: %w", err))
		}
	}
	if f.GangRelease != nil {
		if err := s.EnableGangRelease(*f.GangRelease); err != nil {
			errs = append(errs, fmt.Errorf("gang release off: %w", err))
		}
	}
	return errors.Join(errs...)
}

// EnabledFeatures says which of Features a scheduler has on, for a test
// that checks that its drivers build the same stack.
type EnabledFeatures struct {
	// Preemption: preemption is on; PreemptionHooked: DefaultPreemption's
	// hooks point at the scheduler (a profile has that plugin).
	Preemption, PreemptionHooked bool
	// GangReleaseAfter is gang release's delay; zero if it is off.
	GangReleaseAfter time.Duration
}

// Enabled returns the features s has on.
func (s *Scheduler) Enabled() EnabledFeatures {
	var e EnabledFeatures
	e.Preemption = s.pre != nil
	for _, p := range s.profs {
		e.PreemptionHooked = e.PreemptionHooked || p.pre != nil
	}
	if s.release != nil {
		e.GangReleaseAfter = s.release.o.After
	}
	return e
}
