package app

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sort"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/schedq/schedq/kube/scheduler"
)

// TestRunSchedulesEachProfilesPods runs the whole scheduler with a
// --config of two profiles, b without TaintToleration's filter, on a
// fake clientset with one tainted node: the pod of b is bound there, the
// pod of a is not (its profile's filter refuses the node), the pod of a
// scheduler of neither is left alone, and each pod's event is reported
// by its own profile, as kube-scheduler's profiles report.
func TestRunSchedulesEachProfilesPods(t *testing.T) {
	o := Options{SchedulerName: "schedq"}
	o.Config.File = configFile(t, cfgHeader+"profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    filter:\n      disabled:\n      - name: TaintToleration\n")
	if err := o.applyConfig(); err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		tainted := testNode("n1", "2")
		tainted.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoSchedule}}
		client := fakeCluster(tainted, testPod("pa", "a", "100m"), testPod("pb", "b", "100m"), testPod("pc", "c", "100m"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, clients{sched: client, events: client, lease: client}, nil, nil, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		time.Sleep(time.Second)
		synctest.Wait()

		pods, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes := map[string]string{}
		for _, p := range pods.Items {
			nodes[p.Name] = p.Spec.NodeName
		}
		if nodes["pb"] != "n1" || nodes["pa"] != "" || nodes["pc"] != "" {
			t.Fatalf("bindings %v, want pb alone on n1", nodes)
		}
		evs, err := client.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs.Items {
			got = append(got, e.Regarding.Name+" "+e.Reason+" by "+e.ReportingController)
		}
		sort.Strings(got)
		want := []string{"pa FailedScheduling by a", "pb Scheduled by b"}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("events %q, want %q", got, want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run: %v", err)
		}
	})
}

// TestUseProfilesNamesEachPluginsProfiles: with two profiles, b without
// PodTopologySpread, the handlers let in the pods of both, and know that
// PodTopologySpread's events are a's alone (the warm start then never
// parks b's pods behind it), NodeResourcesFit's both profiles'.
func TestUseProfilesNamesEachPluginsProfiles(t *testing.T) {
	o := Options{SchedulerName: "schedq"}
	o.Config.File = configFile(t, cfgHeader+"profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    multiPoint:\n      disabled:\n      - name: PodTopologySpread\n")
	if err := o.applyConfig(); err != nil {
		t.Fatal(err)
	}
	client := fakeCluster()
	qcfg := scheduler.QueueConfig()
	fws, err := upstreamFrameworks(t.Context(), o, &qcfg, client, informers.NewSharedInformerFactory(client, 0), nil, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll(fws) })
	h := &scheduler.Handlers{}
	if err := useProfiles(t.Context(), h, o, fws, klog.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Profiles, []string{"a", "b"}) {
		t.Fatalf("profiles %q, want a, b", h.Profiles)
	}
	for plugin, want := range map[string][]string{"PodTopologySpread": {"a"}, "NodeResourcesFit": {"a", "b"}} {
		if got := h.HintProfiles[plugin]; !slices.Equal(got, want) {
			t.Errorf("%s's events are registered by %q, want %q", plugin, got, want)
		}
	}
}

// namedRecorder notes each event as "REGARDING REASON by NAME".
type namedRecorder struct {
	name string
	got  *[]string
}

func (r namedRecorder) Eventf(regarding, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	*r.got = append(*r.got, regarding.(*v1.Pod).Name+" "+reason+" by "+r.name)
}

func (r namedRecorder) WithLogger(klog.Logger) events.EventRecorderLogger { return r }

// namedMaker makes namedRecorders that note into got.
type namedMaker struct{ got *[]string }

func (m namedMaker) NewRecorder(_ *runtime.Scheme, name string) events.EventRecorderLogger {
	return namedRecorder{name: name, got: m.got}
}

// TestPluginsRecordWithTheProfilesRecorder: the plugins of every
// profile's framework record their events (DynamicResources'
// BindingConditionsPending) through the scheduler's recorder, each by the
// profile of the pod it is about; before, the frameworks had a recorder
// that dropped them (and, before that, none: DynamicResources' PreBind
// panicked on a device with binding conditions).
func TestPluginsRecordWithTheProfilesRecorder(t *testing.T) {
	o := Options{SchedulerName: "schedq"}
	o.Config.File = configFile(t, cfgHeader+"profiles:\n- schedulerName: a\n- schedulerName: b\n")
	if err := o.applyConfig(); err != nil {
		t.Fatal(err)
	}
	var got []string
	rec := newProfileRecorder(namedMaker{got: &got}, o.schedulerNames())
	client := fakeCluster()
	qcfg := scheduler.QueueConfig()
	fws, err := upstreamFrameworks(t.Context(), o, &qcfg, client, informers.NewSharedInformerFactory(client, 0), rec, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll(fws) })
	for i, name := range []string{"a", "b"} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p" + name}, Spec: v1.PodSpec{SchedulerName: name}}
		fws[i].Framework().EventRecorder().WithLogger(klog.Background()).Eventf(pod, nil, v1.EventTypeNormal, "BindingConditionsPending", "Scheduling", "waiting")
	}
	want := []string{"pa BindingConditionsPending by a", "pb BindingConditionsPending by b"}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}
