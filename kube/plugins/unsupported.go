package plugins

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
)

// UnsupportedName is the name of the Unsupported plugin, as reasons,
// Explain and the queue's unschedulable plugins show it.
const UnsupportedName = "UnsupportedConstraints"

// Constraint is one pod field that a kube-scheduler plugin honours and
// schedq's plugins do not: the field's path and the upstream plugin.
type Constraint struct {
	Field  string
	Plugin string
}

// Message says why a pod with a hard constraint c waits.
func (c Constraint) Message() string {
	return fmt.Sprintf("%s needs %s, which this version of schedq does not run yet", c.Field, c.Plugin)
}

// The constraints Unsupported looks for.
var (
	SpreadDoNotSchedule = Constraint{"spec.topologySpreadConstraints", "PodTopologySpread"}
	ClaimVolume         = Constraint{"spec.volumes[].persistentVolumeClaim", "VolumeBinding"}
	EphemeralVolume     = Constraint{"spec.volumes[].ephemeral", "VolumeBinding"}
	HostPort            = Constraint{"spec.containers[].ports[].hostPort", "NodePorts"}
	ResourceClaims      = Constraint{"spec.resourceClaims", "DynamicResources"}

	SpreadScheduleAnyway  = Constraint{"spec.topologySpreadConstraints (ScheduleAnyway)", "PodTopologySpread"}
	PreferredNodeAffinity = Constraint{"spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution", "NodeAffinity"}
	PreferredPodAffinity  = Constraint{"spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution", "InterPodAffinity"}
	PreferredAntiAffinity = Constraint{"spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution", "InterPodAffinity"}
	PreferNoSchedule      = Constraint{"spec.tolerations (PreferNoSchedule)", "TaintToleration"}
)

// Unsupported is a PreFilter plugin that refuses a pod with a hard
// constraint schedq's plugins do not check (HardConstraints), rather than
// place it as if the field did not exist: the pod waits, unschedulable and
// unresolvable, with a reason naming the field and the kube-scheduler
// plugin that would honour it. Soft constraints (SoftConstraints) only
// change scores, so the pod is scheduled; each is logged once per pod and
// counted in UnsupportedMetrics.
//
// PreFilter costs O(containers + volumes + tolerations + terms) and is
// safe for concurrent use.
type Unsupported struct {
	log  *slog.Logger
	seen *seenPods
}

var _ framework.PreFilterPlugin = Unsupported{}

// NewUnsupported returns the plugin, logging soft constraints to log
// (nil: slog.Default()).
func NewUnsupported(log *slog.Logger) Unsupported {
	return Unsupported{log: log, seen: &seenPods{max: seenMax}}
}

// Name returns UnsupportedName.
func (Unsupported) Name() string { return UnsupportedName }

// PreFilter refuses the pod on its first hard constraint, and reports its
// soft ones the first time it sees the pod.
func (u Unsupported) PreFilter(_ context.Context, _ *framework.CycleState, pi *framework.PodInfo, _ framework.Snapshot) *framework.Status {
	pod := pi.Pod
	if hard := HardConstraints(pod); len(hard) > 0 {
		if u.seen.first(pod, true) {
			for _, c := range hard {
				UnsupportedMetrics.WithLabelValues(c.Field, c.Plugin, "refused").Inc()
			}
		}
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, hard[0].Message())
	}
	if soft := SoftConstraints(pod); len(soft) > 0 && u.seen.first(pod, false) {
		fields := make([]string, len(soft))
		for i, c := range soft {
			fields[i] = c.Field + " (" + c.Plugin + ")"
			UnsupportedMetrics.WithLabelValues(c.Field, c.Plugin, "ignored").Inc()
		}
		log := u.log
		if log == nil {
			log = slog.Default()
		}
		log.Info("scheduling without soft constraints schedq does not score yet",
			"pod", framework.Key(pod), "ignored", fields)
	}
	return nil
}

// HardConstraints lists the constraints of pod that kube-scheduler
// enforces and schedq does not, each once, in a fixed order.
func HardConstraints(pod *v1.Pod) []Constraint {
	var out []Constraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != v1.ScheduleAnyway {
			out = append(out, SpreadDoNotSchedule)
			break
		}
	}
	var claim, ephemeral bool
	for _, vol := range pod.Spec.Volumes {
		claim = claim || vol.PersistentVolumeClaim != nil
		ephemeral = ephemeral || vol.Ephemeral != nil
	}
	if claim {
		out = append(out, ClaimVolume)
	}
	if ephemeral {
		out = append(out, EphemeralVolume)
	}
	if hasHostPort(pod) {
		out = append(out, HostPort)
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		out = append(out, ResourceClaims)
	}
	return out
}

// hasHostPort reports whether a container, or an init container that runs
// as long as the pod (a sidecar), asks for a host port: the ports that
// kube-scheduler's NodePorts checks.
func hasHostPort(pod *v1.Pod) bool {
	asks := func(c *v1.Container) bool {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				return true
			}
		}
		return false
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways && asks(c) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if asks(&pod.Spec.Containers[i]) {
			return true
		}
	}
	return false
}

// SoftConstraints lists the preferences of pod that kube-scheduler scores
// and schedq does not, each once, in a fixed order.
func SoftConstraints(pod *v1.Pod) []Constraint {
	var out []Constraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == v1.ScheduleAnyway {
			out = append(out, SpreadScheduleAnyway)
			break
		}
	}
	if a := pod.Spec.Affinity; a != nil {
		if a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			out = append(out, PreferredNodeAffinity)
		}
		if a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			out = append(out, PreferredPodAffinity)
		}
		if a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			out = append(out, PreferredAntiAffinity)
		}
	}
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == v1.TaintEffectPreferNoSchedule {
			out = append(out, PreferNoSchedule)
			break
		}
	}
	return out
}

// UnsupportedMetrics counts, per field and upstream plugin, the pods whose
// constraint was refused (result "refused") or ignored in scoring
// ("ignored"), each pod once. Register it where the scheduler's metrics
// are served.
var UnsupportedMetrics = prometheus.NewCounterVec(prometheus.CounterOpts{
	Subsystem: "schedq", Name: "unsupported_constraints_total",
	Help: "Pods with a constraint that kube-scheduler honours and schedq does not yet: refused (hard constraints: the pod waits) or ignored (soft ones: scores differ), by field and upstream plugin.",
}, []string{"field", "plugin", "result"})

// seenMax bounds the pods Unsupported remembers having reported.
const seenMax = 1 << 14

// seenPods remembers which pods were reported, so that a pod retried many
// times is logged and counted once. When it holds max pods it starts over:
// a pod may then be reported again, which costs a log line, not memory.
type seenPods struct {
	mu   sync.Mutex
	max  int
	pods map[seenKey]struct{}
}

type seenKey struct {
	uid  types.UID
	pod  types.NamespacedName // when the pod has no UID
	hard bool
}

// first reports whether this is the first report of pod (of this kind);
// always true on a nil s. O(1); safe for concurrent use.
func (s *seenPods) first(pod *v1.Pod, hard bool) bool {
	if s == nil {
		return true
	}
	k := seenKey{uid: pod.UID, hard: hard}
	if k.uid == "" {
		k.pod = framework.Key(pod)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pods[k]; ok {
		return false
	}
	if s.pods == nil || len(s.pods) >= s.max {
		s.pods = make(map[seenKey]struct{})
	}
	s.pods[k] = struct{}{}
	return true
}
