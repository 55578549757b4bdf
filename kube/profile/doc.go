// Package profile reads kube-scheduler's configuration and builds
// kube-scheduler's scheduling framework from it, with upstream's own code
// (k8s.io/kubernetes v1.37.2, pkg/scheduler):
//
//   - Load decodes, defaults and validates a KubeSchedulerConfiguration
//     (kubescheduler.config.k8s.io/v1) file, or returns kube-scheduler's
//     default configuration when there is no file. Errors are upstream's,
//     with their field paths.
//   - NewFramework builds the framework runtime of one profile from the
//     in-tree registry merged with schedq's out-of-tree one, over an
//     immutable snapshot of nodes and pods, with the clientset, informer
//     factory and DRA manager its plugins need, all fed synchronously from
//     in-memory objects (no informer goroutine runs).
//   - ScoreTable normalises and weighs nodes' raw scores exactly as the
//     framework's NormalizeScores does, with the plugin instances the
//     registry built, for a batch that re-scores one node among hundreds
//     per cycle; Framework.ScoreNodes scores as the framework's
//     RunScorePlugins does, normalising on the caller's goroutine.
package profile
