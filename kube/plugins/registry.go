package plugins

import (
	"log/slog"

	"github.com/schedq/schedq/kube/framework"
)

// Plugins lists the plugins of a profile per extension point, each list in
// the order the scheduler runs it. It is framework.Profile, whose Hints
// method builds the queue's Hints configuration (schedq Config.Hints).
type Plugins = framework.Profile

// Default returns the plugins of this package in kube-scheduler's default
// order, with NodeResourcesFit scoring by strategy. The queue order
// (PrioritySort) is the queue's own, see PrioritySort. Unsupported runs
// first, so that a pod with a constraint these plugins do not check waits
// with a reason rather than being placed as if it had none; it logs to
// slog.Default() (see DefaultLogged).
func Default(strategy ScoringStrategy) Plugins { return DefaultLogged(strategy, nil) }

// DefaultLogged is Default with the plugins logging to log (nil:
// slog.Default()).
func DefaultLogged(strategy ScoringStrategy, log *slog.Logger) Plugins {
	fit := NewNodeResourcesFit(strategy)
	return Plugins{
		PreEnqueue: []framework.PreEnqueuePlugin{SchedulingGates{}},
		PreFilter:  []framework.PreFilterPlugin{NewUnsupported(log), NodeAffinity{}, fit, InterPodAffinity{}},
		Filter: []framework.FilterPlugin{
			NodeUnschedulable{}, NodeName{}, TaintToleration{}, NodeAffinity{}, fit, InterPodAffinity{},
		},
		Score: []framework.ScorePlugin{fit},
		Enqueue: []framework.EnqueueExtensions{
			SchedulingGates{}, NodeUnschedulable{}, NodeName{}, TaintToleration{}, NodeAffinity{}, fit, InterPodAffinity{},
			GangScheduling{},
		},
		Group: GangScheduling{},
	}
}
