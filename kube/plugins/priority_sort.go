package plugins

import "github.com/schedq/schedq/kube/framework"

// PrioritySort is kube-scheduler's default QueueSort plugin: higher
// spec.priority first, then the pod that entered the queue earlier. It has
// no code here because the queue implements that order itself: set
// schedq Config.Priority to framework.Priority, and the queue compares
// cached priorities and then timestamps (schedq.ByPriority). The type only
// names the plugin, for configuration and explanations.
type PrioritySort struct{}

var _ framework.Plugin = PrioritySort{}

// Name returns "PrioritySort".
func (PrioritySort) Name() string { return "PrioritySort" }
