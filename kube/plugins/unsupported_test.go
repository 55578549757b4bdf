package plugins_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/plugins"
	"github.com/schedq/schedq/kube/scheduler"
)

func basePod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{SchedulerName: "schedq", Containers: []v1.Container{{Name: "c"}}},
	}
}

func spread(when v1.UnsatisfiableConstraintAction) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: when,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
		})
	}
}

var restartAlways = v1.ContainerRestartPolicyAlways

// The pods of each case, with the reason the scheduler must give for
// refusing them ("" for a pod that must be scheduled).
var unsupportedCases = []struct {
	name   string
	mutate func(*v1.Pod)
	reason string
}{
	{"plain", func(*v1.Pod) {}, ""},
	{"spread DoNotSchedule", spread(v1.DoNotSchedule),
		"spec.topologySpreadConstraints needs PodTopologySpread, which this version of schedq does not run yet"},
	{"spread ScheduleAnyway then DoNotSchedule", func(p *v1.Pod) { spread(v1.ScheduleAnyway)(p); spread(v1.DoNotSchedule)(p) },
		"spec.topologySpreadConstraints needs PodTopologySpread"},
	{"pvc volume", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	}, "spec.volumes[].persistentVolumeClaim needs VolumeBinding"},
	{"ephemeral volume", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}}
	}, "spec.volumes[].ephemeral needs VolumeBinding"},
	{"emptyDir volume", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "tmp", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	}, ""},
	{"hostPort", func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
	}, "spec.containers[].ports[].hostPort needs NodePorts"},
	{"containerPort only", func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80}}
	}, ""},
	{"sidecar hostPort", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "side", RestartPolicy: &restartAlways, Ports: []v1.ContainerPort{{HostPort: 9000}}}}
	}, "spec.containers[].ports[].hostPort needs NodePorts"},
	{"init container hostPort", func(p *v1.Pod) { // runs before the pod, as kube-scheduler ignores it
		p.Spec.InitContainers = []v1.Container{{Name: "init", Ports: []v1.ContainerPort{{HostPort: 9000}}}}
	}, ""},
	{"resourceClaims", func(p *v1.Pod) {
		name := "gpu-template"
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &name}}
	}, "spec.resourceClaims needs DynamicResources"},
	{"spread ScheduleAnyway", spread(v1.ScheduleAnyway), ""},
	{"preferred node affinity", func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1}}}}
	}, ""},
	{"PreferNoSchedule toleration", func(p *v1.Pod) {
		p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectPreferNoSchedule}}
	}, ""},
}

func TestUnsupportedPreFilter(t *testing.T) {
	pl := plugins.NewUnsupported(slog.New(slog.DiscardHandler))
	for _, tc := range unsupportedCases {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod(strings.ReplaceAll(tc.name, " ", "-"))
			tc.mutate(pod)
			pi, err := framework.NewPodInfo(pod)
			if err != nil {
				t.Fatal(err)
			}
			st := pl.PreFilter(context.Background(), framework.NewCycleState(), pi, nil)
			if tc.reason == "" {
				if !st.IsSuccess() {
					t.Fatalf("PreFilter = %v %q, want success", st.Code, st.Message())
				}
				return
			}
			if st.IsSuccess() || st.Code != framework.UnschedulableAndUnresolvable {
				t.Fatalf("PreFilter = %+v, want UnschedulableAndUnresolvable", st)
			}
			if !strings.HasPrefix(st.Message(), tc.reason) {
				t.Errorf("reason %q, want it to start with %q", st.Message(), tc.reason)
			}
		})
	}
}

// TestUnsupportedSoftLoggedOnce: a pod with soft constraints is logged
// and counted once however often it is tried; the metric names the field.
func TestUnsupportedSoftLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	pl := plugins.NewUnsupported(slog.New(slog.NewTextHandler(&buf, nil)))
	pod := basePod("soft-once")
	spread(v1.ScheduleAnyway)(pod)
	pod.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectPreferNoSchedule}}
	pi, _ := framework.NewPodInfo(pod)
	c := plugins.UnsupportedMetrics.WithLabelValues(plugins.PreferNoSchedule.Field, "TaintToleration", "ignored")
	before := testutil.ToFloat64(c)
	for range 3 {
		if st := pl.PreFilter(context.Background(), framework.NewCycleState(), pi, nil); !st.IsSuccess() {
			t.Fatalf("soft constraints refused: %s", st.Message())
		}
	}
	if n := strings.Count(buf.String(), "soft constraints"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, buf.String())
	}
	for _, want := range []string{"PodTopologySpread", "TaintToleration"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log does not name %s:\n%s", want, buf.String())
		}
	}
	if got := testutil.ToFloat64(c) - before; got != 1 {
		t.Errorf("metric rose by %v, want 1", got)
	}
}

// TestUnsupportedDefaultProfile drives the real scheduler, queue and API
// reporter with the default plugins: each pod with a hard constraint waits
// with the reason in the queue's Explain, its FailedScheduling event and
// its PodScheduled condition, and the others are bound.
func TestUnsupportedDefaultProfile(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	rec := events.NewFakeRecorder(100)
	c := scheduler.NewCache()
	c.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110"),
	}}})
	profile := framework.Profile(plugins.Default(plugins.LeastAllocated))
	q, err := schedq.New(scheduler.QueueConfig(profile))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	binder := &recordingBinder{bound: map[string]string{}}
	s := scheduler.New(q, c, binder, scheduler.APIReporter{Client: client, Recorder: rec, Logger: slog.New(slog.DiscardHandler)},
		scheduler.Options{Profile: profile, Logger: slog.New(slog.DiscardHandler)})
	for _, tc := range unsupportedCases {
		pod := basePod("e2e-" + strings.ReplaceAll(tc.name, " ", "-"))
		tc.mutate(pod)
		if _, err := client.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := q.Add(pod); err != nil {
			t.Fatal(err)
		}
		a, err := q.Pop(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := s.ScheduleOne(ctx, a)
		if tc.reason == "" {
			if out.Result != scheduler.Scheduled {
				t.Errorf("%s: %v (%s), want scheduled", tc.name, out.Result, out.Message)
			} else if ev := <-rec.Events; !strings.Contains(ev, "Scheduled") {
				t.Errorf("%s: event %q, want Scheduled", tc.name, ev)
			}
			continue
		}
		if out.Result != scheduler.Unschedulable {
			t.Errorf("%s: %v on %q, want unschedulable", tc.name, out.Result, out.Node)
			continue
		}
		x, err := q.Explain(a.Key)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(x.Message, tc.reason) || len(x.UnschedulablePlugins) != 1 || x.UnschedulablePlugins[0] != plugins.UnsupportedName {
			t.Errorf("%s: Explain message %q by %v, want %q by %s", tc.name, x.Message, x.UnschedulablePlugins, tc.reason, plugins.UnsupportedName)
		}
		if ev := <-rec.Events; !strings.Contains(ev, "FailedScheduling") || !strings.Contains(ev, tc.reason) {
			t.Errorf("%s: event %q, want FailedScheduling with %q", tc.name, ev, tc.reason)
		}
		got, err := client.CoreV1().Pods("ns").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cond := podScheduled(got); cond == nil || cond.Status != v1.ConditionFalse || !strings.Contains(cond.Message, tc.reason) {
			t.Errorf("%s: PodScheduled %+v, want False with %q", tc.name, cond, tc.reason)
		}
	}
}

func podScheduled(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// recordingBinder binds at once, recording where.
type recordingBinder struct{ bound map[string]string }

func (b *recordingBinder) Bind(_ context.Context, pod *v1.Pod, node string, done func(error)) {
	b.bound[pod.Name] = node
	done(nil)
}

// TestSoftConstraints: each preference kube-scheduler scores is found,
// once, and none makes the pod refused.
func TestSoftConstraints(t *testing.T) {
	term := v1.WeightedPodAffinityTerm{Weight: 1, PodAffinityTerm: v1.PodAffinityTerm{TopologyKey: "zone"}}
	for _, tc := range []struct {
		mutate func(*v1.Pod)
		want   plugins.Constraint
	}{
		{spread(v1.ScheduleAnyway), plugins.SpreadScheduleAnyway},
		{func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1}}}}
		}, plugins.PreferredNodeAffinity},
		{func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{term, term}}}
		}, plugins.PreferredPodAffinity},
		{func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{term}}}
		}, plugins.PreferredAntiAffinity},
		{func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Key: "a", Effect: v1.TaintEffectNoSchedule}, {Key: "b", Effect: v1.TaintEffectPreferNoSchedule}}
		}, plugins.PreferNoSchedule},
	} {
		pod := basePod("soft")
		tc.mutate(pod)
		if got := plugins.SoftConstraints(pod); len(got) != 1 || got[0] != tc.want {
			t.Errorf("SoftConstraints = %v, want [%v]", got, tc.want)
		}
		if hard := plugins.HardConstraints(pod); len(hard) > 0 {
			t.Errorf("%v: refused for %v", tc.want, hard)
		}
	}
	if got := plugins.SoftConstraints(basePod("plain")); len(got) != 0 {
		t.Errorf("plain pod: %v", got)
	}
}
