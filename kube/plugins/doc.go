// Package plugins holds schedq's scheduling plugins for Kubernetes pods:
// filters, a score, a pre-enqueue gate and the queueing hints that tell the
// queue which cluster events may help a pod that a plugin rejected. Each
// plugin carries the name of the kube-scheduler plugin it stands in for, so
// that reasons, metrics and hints line up with what operators know.
//
// Default returns the plugins in kube-scheduler's order, and Plugins.Hints
// turns their event registrations into the queue's Hints configuration.
package plugins
