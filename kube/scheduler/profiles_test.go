package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// profileSpec is one profile of newProfilesFixture: kube-scheduler's
// default profile named name, changed by mutate, with the plugins of
// extra.
type profileSpec struct {
	name   string
	extra  frameworkruntime.Registry
	mutate func(*config.KubeSchedulerProfile)
}

// profileFrameworks builds the frameworks of specs as kube/app builds
// them: on one snapshot, each after the first alongside it.
func profileFrameworks(t *testing.T, specs ...profileSpec) []*profile.Framework {
	t.Helper()
	snap := backendcache.NewEmptySnapshot()
	var fws []*profile.Framework
	for _, sp := range specs {
		cfg, err := profile.Default()
		if err != nil {
			t.Fatal(err)
		}
		prof := &cfg.Profiles[0]
		prof.SchedulerName = sp.name
		if sp.mutate != nil {
			sp.mutate(prof)
		}
		setup := profile.Setup{Snapshot: snap, Plugins: sp.extra}
		if len(fws) > 0 {
			setup.Alongside = fws[0]
		}
		fw, err := profile.NewFrameworkOn(context.Background(), prof, setup)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fw.Close() })
		fws = append(fws, fw)
	}
	return fws
}

// newProfilesFixture is the scheduler with several profiles, built as
// kube/app builds them: one snapshot, each framework after the first
// alongside it, the queue taking every profile's hints and gates
// (UseProfileHints), the handlers letting in the profiles' pods. Its
// metrics are on reg.
func newProfilesFixture(t *testing.T, reg prometheus.Registerer, specs ...profileSpec) *fixture {
	t.Helper()
	fws := profileFrameworks(t, specs...)
	var names []string
	for _, sp := range specs {
		names = append(names, sp.name)
	}
	qc := QueueConfig()
	if err := UseProfileHints(context.Background(), &qc, fws, klog.Background()); err != nil {
		t.Fatal(err)
	}
	q, err := schedq.New(qc)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache()
	f := &fixture{t: t, q: q, c: c, b: &syncBinder{}, r: &recReporter{}}
	hp, err := HintProfiles(context.Background(), fws, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.h = &Handlers{Queue: q, Cache: c, Profiles: names, Hints: qc.Hints, HintProfiles: hp}
	m, err := NewMetrics(reg, "unused")
	if err != nil {
		t.Fatal(err)
	}
	f.s, err = New(q, c, f.b, f.r, Options{Profiles: fws, Metrics: m, Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// of is p with spec.schedulerName name.
func of(name string, p *v1.Pod) *v1.Pod {
	p.Spec.SchedulerName = name
	return p
}

// mostAllocated makes a profile's NodeResourcesFit score MostAllocated.
func mostAllocated(p *config.KubeSchedulerProfile) {
	for i := range p.PluginConfig {
		if args, ok := p.PluginConfig[i].Args.(*config.NodeResourcesFitArgs); ok {
			args.ScoringStrategy = &config.ScoringStrategy{Type: config.MostAllocated,
				Resources: []config.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}}
		}
	}
}

// noTaintFilter disables TaintToleration's filter in a profile.
func noTaintFilter(p *config.KubeSchedulerProfile) {
	p.Plugins.Filter.Disabled = append(p.Plugins.Filter.Disabled, config.Plugin{Name: "TaintToleration"})
}

// TestProfilesScheduleEachPodWithItsOwnFramework places one pod of each
// of two profiles that differ, on the same cluster: each lands where its
// own profile's plugins put it.
func TestProfilesScheduleEachPodWithItsOwnFramework(t *testing.T) {
	tainted := node("tainted", 4000, v1.Taint{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoSchedule})
	for _, c := range []struct {
		name   string
		mutate func(*config.KubeSchedulerProfile)
		nodes  []*v1.Node
		// busy is a pod bound on n1 before the two pods come.
		busy         bool
		wantA, wantB string // "" for unschedulable
	}{
		{name: "b scores MostAllocated", mutate: mostAllocated,
			nodes: []*v1.Node{node("n1", 4000), node("n2", 4000)}, busy: true, wantA: "n2", wantB: "n1"},
		{name: "b without TaintToleration's filter", mutate: noTaintFilter,
			nodes: []*v1.Node{tainted}, wantA: "", wantB: "tainted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newProfilesFixture(t, prometheus.NewRegistry(), profileSpec{name: "a"}, profileSpec{name: "b", mutate: c.mutate})
			for _, n := range c.nodes {
				f.h.AddNode(n)
			}
			if c.busy {
				bound := of("a", pod("busy", 3000))
				bound.Spec.NodeName = "n1"
				f.h.AddPod(bound)
			}
			for _, p := range []*v1.Pod{of("a", pod("pa", 100)), of("b", pod("pb", 100))} {
				f.h.AddPod(p)
				out := f.once()
				want := map[string]string{"a": c.wantA, "b": c.wantB}[p.Spec.SchedulerName]
				switch {
				case want == "" && out.Result != Unschedulable:
					t.Fatalf("%s: %+v, want unschedulable", p.Name, out)
				case want != "" && (out.Result != Scheduled || out.Node != want):
					t.Fatalf("%s: %+v, want on %s", p.Name, out, want)
				}
			}
		})
	}
}

// TestProfilesLeaveAPodOfNoProfileAlone: the handlers queue no pod whose
// schedulerName is none of the profiles', and an attempt of one (which
// only a bug could pop) fails as an error without running a framework.
func TestProfilesLeaveAPodOfNoProfileAlone(t *testing.T) {
	f := newProfilesFixture(t, prometheus.NewRegistry(), profileSpec{name: "a"}, profileSpec{name: "b"})
	f.h.AddNode(node("n1", 4000))
	stranger := of("c", pod("stranger", 100))
	f.h.AddPod(stranger)
	if c := f.q.Counts(); queued(c) != 0 {
		t.Fatalf("queue %+v: a pod of scheduler c was let in", c)
	}
	out := f.s.ScheduleOne(context.Background(), Attempt{Key: framework.Key(stranger), Info: schedq.Info[*v1.Pod]{Item: stranger}})
	if out.Result != Error || !strings.Contains(out.Message, `no profile for scheduler name "c"`) {
		t.Fatalf("attempt of a pod of no profile: %+v", out)
	}
	if _, ok := f.c.NodeOf(framework.Key(stranger)); ok {
		t.Fatal("a pod of no profile was assumed")
	}
	if _, err := f.s.Probe(context.Background(), stranger, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Fatal("Probe of a pod of no profile: no error")
	}
}

// picky is a filter that rejects every pod, and asks to hear of added
// nodes with a hint that answers wake.
type picky struct{ wake bool }

func (picky) Name() string { return "Picky" }
func (picky) Filter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) *fwk.Status {
	return fwk.NewStatus(fwk.Unschedulable, "picky")
}
func (p picky) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	hint := func(klog.Logger, *v1.Pod, any, any) (fwk.QueueingHint, error) {
		if p.wake {
			return fwk.Queue, nil
		}
		return fwk.QueueSkip, nil
	}
	return []fwk.ClusterEventWithHint{{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}, QueueingHintFn: hint}}, nil
}

// pickyProfile is a profile named name whose Picky filter's hint answers
// wake.
func pickyProfile(name string, wake bool) profileSpec {
	return profileSpec{name: name,
		extra: frameworkruntime.Registry{"Picky": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return picky{wake: wake}, nil
		}},
		mutate: func(p *config.KubeSchedulerProfile) {
			p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, config.Plugin{Name: "Picky"})
		}}
}

// TestProfilesHintsWakeTheirOwnPodsOnly: both profiles have a plugin of
// one name whose hints disagree; a pod each profile's plugin rejected is
// woken, on an added node, by its own profile's hint only.
func TestProfilesHintsWakeTheirOwnPodsOnly(t *testing.T) {
	f := newProfilesFixture(t, prometheus.NewRegistry(), pickyProfile("a", false), pickyProfile("b", true))
	f.h.AddNode(node("n1", 4000))
	for _, p := range []*v1.Pod{of("a", pod("pa", 100)), of("b", pod("pb", 100))} {
		f.h.AddPod(p)
		if out := f.once(); out.Result != Unschedulable {
			t.Fatalf("%s: %+v, want rejected by Picky", p.Name, out)
		}
	}
	f.h.AddNode(node("n2", 4000))
	if loc := f.where("pa"); loc != schedq.InUnschedulable {
		t.Fatalf("pa is %v: profile b's hint woke a pod of profile a", loc)
	}
	if loc := f.where("pb"); loc == schedq.InUnschedulable {
		t.Fatal("pb still parked: its own profile's hint did not wake it")
	}
}

// hold is a PreEnqueue plugin that holds every pod back.
type hold struct{}

func (hold) Name() string { return "Hold" }
func (hold) PreEnqueue(context.Context, *v1.Pod) *fwk.Status {
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "held")
}

// TestProfilesGateTheirOwnPodsOnly: a PreEnqueue plugin of profile a only
// gates a's pods, not b's; GateReasons asks it about a's pods only.
func TestProfilesGateTheirOwnPodsOnly(t *testing.T) {
	a := profileSpec{name: "a",
		extra: frameworkruntime.Registry{"Hold": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return hold{}, nil }},
		mutate: func(p *config.KubeSchedulerProfile) {
			p.Plugins.PreEnqueue.Enabled = append(p.Plugins.PreEnqueue.Enabled, config.Plugin{Name: "Hold"})
		}}
	f := newProfilesFixture(t, prometheus.NewRegistry(), a, profileSpec{name: "b"})
	pa, pb := of("a", pod("pa", 100)), of("b", pod("pb", 100))
	f.h.AddPod(pa)
	f.h.AddPod(pb)
	if loc := f.where("pa"); loc != schedq.InGated {
		t.Fatalf("pa is %v, want gated by its profile's Hold", loc)
	}
	if loc := f.where("pb"); loc != schedq.InActive {
		t.Fatalf("pb is %v, want active: Hold is not its profile's", loc)
	}
	g := NewGateReasons(context.Background(), f.s.profs[0].fw, f.s.profs[1].fw)
	if got := g.Of("Hold", pa); got != "held" {
		t.Fatalf("gate reason of pa: %q, want held", got)
	}
	if got := g.Of("Hold", pb); got != "" {
		t.Fatalf("gate reason of pb: %q, want none", got)
	}
}

// TestProfilesLabelAttemptMetrics: scheduler_schedule_attempts_total
// counts each pod's attempt under its own profile, as kube-scheduler's
// does.
func TestProfilesLabelAttemptMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newProfilesFixture(t, reg, profileSpec{name: "a"}, profileSpec{name: "b", mutate: noTaintFilter})
	f.h.AddNode(node("tainted", 4000, v1.Taint{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoSchedule}))
	for _, p := range []*v1.Pod{of("a", pod("pa", 100)), of("b", pod("pb", 100)), of("b", pod("pb2", 100))} {
		f.h.AddPod(p)
		f.once()
	}
	m := f.s.o.Metrics
	for _, c := range []struct {
		result, profile string
		want            float64
	}{
		{"unschedulable", "a", 1}, {"scheduled", "b", 2}, {"scheduled", "a", 0}, {"scheduled", "unused", 0},
	} {
		if got := testutil.ToFloat64(m.attempts.WithLabelValues(c.result, c.profile)); got != c.want {
			t.Errorf("schedule_attempts_total{result=%q,profile=%q} = %v, want %v", c.result, c.profile, got, c.want)
		}
	}
}

// TestProfilesRefuseAGroupOfTwoProfiles: the members of one pod group
// naming two profiles fail the group's attempt as an error, as
// kube-scheduler refuses such a group; nothing is bound.
func TestProfilesRefuseAGroupOfTwoProfiles(t *testing.T) {
	f := newProfilesFixture(t, prometheus.NewRegistry(), profileSpec{name: "a"}, profileSpec{name: "b"})
	f.h.AddNode(node("n1", 4000))
	f.h.AddPodGroup(podGroup("train", 2, 0))
	f.h.AddPod(of("a", memberPod("train-0", "train", 100)))
	f.h.AddPod(of("b", memberPod("train-1", "train", 100)))
	out := f.once()
	if out.Result != Error || !strings.Contains(out.Message, "must have the same spec.schedulerName") {
		t.Fatalf("group of two profiles: %+v", out)
	}
	if len(f.b.binds) != 0 {
		t.Fatalf("bound %v", f.b.binds)
	}
}

// TestNewRefusesProfilesOnTwoSnapshots: the profiles must share the
// cache's one snapshot.
func TestNewRefusesProfilesOnTwoSnapshots(t *testing.T) {
	build := func(name string) *profile.Framework {
		cfg, err := profile.Default()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Profiles[0].SchedulerName = name
		fw, err := profile.NewFrameworkOn(context.Background(), &cfg.Profiles[0], profile.Setup{Snapshot: backendcache.NewEmptySnapshot()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fw.Close() })
		return fw
	}
	q, err := schedq.New(QueueConfig())
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(q, NewCache(), &syncBinder{}, &recReporter{}, Options{Profiles: []*profile.Framework{build("a"), build("b")}})
	if err == nil || !strings.Contains(err.Error(), "snapshot") {
		t.Fatalf("New: %v, want the snapshot refused", err)
	}
}

// TestNewRefusesBadProfiles: New needs at least one framework in
// Options.Profiles, none nil and no two of one name.
func TestNewRefusesBadProfiles(t *testing.T) {
	snap := backendcache.NewEmptySnapshot()
	build := func() *profile.Framework { // on snap, with informers of its own (not Alongside: one name twice)
		cfg, err := profile.Default()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Profiles[0].SchedulerName = "a"
		fw, err := profile.NewFrameworkOn(context.Background(), &cfg.Profiles[0], profile.Setup{Snapshot: snap})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fw.Close() })
		return fw
	}
	fws := []*profile.Framework{build(), build()}
	cases := []struct {
		name     string
		profiles []*profile.Framework
		want     string
	}{
		{"none", nil, "Options.Profiles is required"},
		{"nil", []*profile.Framework{fws[0], nil}, "a nil framework"},
		{"only nil", []*profile.Framework{nil}, "a nil framework"},
		{"two of one name", fws, `two profiles named "a"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := schedq.New(QueueConfig())
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(q, NewCache(), &syncBinder{}, &recReporter{}, Options{Profiles: tc.profiles})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestOneProfileSchedulesEveryPod: one framework in Options.Profiles
// schedules a pod whatever its schedulerName, under the Metrics' own
// profile label; several schedule only the pods that name one of them.
func TestOneProfileSchedulesEveryPod(t *testing.T) {
	one := newFWFixture(t, nil, nil)
	p := of("not-the-profiles-name", pod("p", 100))
	if one.s.profileFor(p) == nil || one.s.label(p) != "" {
		t.Fatalf("one profile: profile %v, label %q; want the one profile, label \"\"", one.s.profileFor(p), one.s.label(p))
	}
	two := newProfilesFixture(t, prometheus.NewRegistry(), profileSpec{name: "a"}, profileSpec{name: "b"})
	if two.s.profileFor(p) != nil {
		t.Fatal("two profiles: a pod of neither has a profile")
	}
	if got := two.s.label(of("b", pod("q", 100))); got != "b" {
		t.Fatalf("two profiles: label %q, want b", got)
	}
}

// TestPodHintClassKeepsProfilesApart: two pods alike but for their
// profile are never of one hint class, so that one profile's hint answer
// is never taken for another's pod.
func TestPodHintClassKeepsProfilesApart(t *testing.T) {
	a, b := of("a", pod("p", 100)), of("b", pod("p", 100))
	if PodHintClass(a) == PodHintClass(b) {
		t.Fatal("pods of profiles a and b share a hint class")
	}
	if PodHintClass(a) != PodHintClass(of("a", pod("p", 100))) {
		t.Fatal("alike pods of one profile do not share a class")
	}
}

// goBinder binds in a goroutine of its own, as APIBinder does, always
// successfully; wg counts the bindings under way.
type goBinder struct{ wg *sync.WaitGroup }

func (b goBinder) Bind(_ context.Context, _ *v1.Pod, _ string, start func() bool, done func(error)) {
	if !Started(start, done) {
		return
	}
	b.wg.Go(func() { done(nil) })
}

// TestProfilesConcurrentCyclesBindingsAndEvents schedules pods of two
// profiles while their bindings end on goroutines of their own (which
// count each attempt under its pod's profile) and another goroutine adds
// and deletes nodes through the handlers (each move asking both
// profiles' hints under the queue's lock): under -race, any state the
// profiles share unguarded would be reported. Every pod ends scheduled,
// counted under its own profile.
func TestProfilesConcurrentCyclesBindingsAndEvents(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newProfilesFixture(t, reg, profileSpec{name: "a"}, profileSpec{name: "b", mutate: mostAllocated})
	var binds sync.WaitGroup
	f.s.binder, f.s.reporter = goBinder{&binds}, &lockedReporter{}
	for i := range 4 {
		f.h.AddNode(node(fmt.Sprint("n", i), 4000))
	}
	const pods = 40
	for i := range pods {
		f.h.AddPod(of([]string{"a", "b"}[i%2], pod(fmt.Sprint("p", i), 10)))
	}
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			extra := node(fmt.Sprint("x", i%3), 5) // no room for a pod: its deletion fails no binding
			f.h.AddNode(extra)
			f.h.DeleteNode(extra)
		}
	})
	scheduled := f.scheduleUpTo(pods)
	close(stop)
	writer.Wait()
	binds.Wait()
	f.s.Wait()
	m := f.s.o.Metrics
	a := testutil.ToFloat64(m.attempts.WithLabelValues("scheduled", "a"))
	b := testutil.ToFloat64(m.attempts.WithLabelValues("scheduled", "b"))
	if scheduled != pods || a != pods/2 || b != pods/2 {
		t.Fatalf("scheduled %d of %d; counted %v of a's and %v of b's", scheduled, pods, a, b)
	}
}

// TestProfilesPreemptWithTheirOwnPostFilter: with preemption on, a pod
// of a profile with DefaultPreemption preempts, and one of a profile
// without it does not, on the same full node; Release gives each
// profile's plugin its hooks back.
func TestProfilesPreemptWithTheirOwnPostFilter(t *testing.T) {
	noPreemption := func(p *config.KubeSchedulerProfile) {
		p.Plugins.PostFilter.Disabled = append(p.Plugins.PostFilter.Disabled, config.Plugin{Name: "DefaultPreemption"})
	}
	f := newProfilesFixture(t, prometheus.NewRegistry(), profileSpec{name: "a"}, profileSpec{name: "b", mutate: noPreemption})
	e := &syncEvictor{f: f, hold: true}
	pm, err := NewPreemptionMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.EnablePreemption(PreemptionOptions{Evictor: e, Metrics: pm}); err != nil {
		t.Fatal(err)
	}
	if f.s.byName["a"].pre == nil {
		t.Fatal("a's DefaultPreemption was not adapted")
	}
	f.h.AddNode(node("n1", 4000))
	f.h.AddPod(of("a", runningPod("low", "n1", 4000, 1, t0)))
	f.h.AddPod(of("b", prioPod("high-b", 2000, 100)))
	if out := f.once(); out.Result != Unschedulable || out.Nominated != "" || len(e.calls) != 0 {
		t.Fatalf("b's pod: %+v, evictions %q; want no preemption", out, e.calls)
	}
	// As upstream counts a preemption attempt in DefaultPreemption's
	// PostFilter: b, which runs none, attempts none.
	if n := testutil.ToFloat64(pm.attempts); n != 0 {
		t.Fatalf("preemption attempts after b's pod: %v, want 0", n)
	}
	f.h.AddPod(of("a", prioPod("high-a", 2000, 100)))
	if out := f.once(); out.Nominated != "n1" || sortedVictims(out) != "low" {
		t.Fatalf("a's pod: %+v; want low preempted on n1", out)
	}
	if n := testutil.ToFloat64(pm.attempts); n != 1 {
		t.Fatalf("preemption attempts after a's pod: %v, want 1", n)
	}
	f.s.Release()
	for _, p := range f.s.profs {
		if p.pre != nil {
			t.Fatalf("Release kept %s's DefaultPreemption adapted", p.name)
		}
	}
}

// recorded is p with a previous leader's failure record naming plugins,
// made for p as it is (its spec and labels), on a cluster of no nodes.
func recorded(t *testing.T, p *v1.Pod, plugins ...string) *v1.Pod {
	t.Helper()
	rec := FailureRecord{Plugins: plugins, Self: strconv.FormatUint(selfHash(p), 16), Nodes: "0", NodesWindow: "0", Pods: "0"}
	raw, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	p.Annotations = map[string]string{FailureAnnotation: string(raw)}
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable}}
	return p
}

// TestProfilesWarmStartParksBehindOwnProfilesPlugins: a new leader parks
// a pod behind its record's plugins only if its own profile's plugin of
// that name registered events. Picky is profile a's alone: a's pod it
// rejected is parked; b's pod whose record names it (the record of
// another configuration, say) goes to activeQ, since a's hints skip it
// and no event would wake it.
func TestProfilesWarmStartParksBehindOwnProfilesPlugins(t *testing.T) {
	f := newProfilesFixture(t, prometheus.NewRegistry(), pickyProfile("a", true), profileSpec{name: "b"})
	f.h.warm = &warmStart{}
	f.h.AddPod(recorded(t, of("a", pod("pa", 100)), "Picky"))
	f.h.AddPod(recorded(t, of("b", pod("pb", 100)), "Picky"))
	if loc := f.where("pa"); loc != schedq.InUnschedulable {
		t.Fatalf("pa is %v, want parked behind its profile's Picky", loc)
	}
	if loc := f.where("pb"); loc != schedq.InActive {
		t.Fatalf("pb is %v, want active: its profile has no Picky, and no event would wake it", loc)
	}
}

// noFitFilter disables NodeResourcesFit's filter in a profile.
func noFitFilter(p *config.KubeSchedulerProfile) {
	p.Plugins.Filter.Disabled = append(p.Plugins.Filter.Disabled, config.Plugin{Name: nodeResourcesFit})
}

// ignoringFoo makes a profile's NodeResourcesFit ignore example.com/foo.
func ignoringFoo(p *config.KubeSchedulerProfile) {
	for i := range p.PluginConfig {
		if args, ok := p.PluginConfig[i].Args.(*config.NodeResourcesFitArgs); ok {
			args.IgnoredResources = []string{"example.com/foo"}
		}
	}
}

// TestProfilesWakeBudgetCountsRoomAsThePodsProfile: the wake budget
// counts a node's room for a pod as the pod's own profile's
// NodeResourcesFit does. b runs no NodeResourcesFit filter, or ignores
// example.com/foo; a counts everything. A pod of each, parked by
// TaintToleration, asks for more than a new node has (8 cpus on 4, or a
// resource the node lacks): b's pod, which b would place there, wakes;
// a's, which a would refuse there, stays parked.
func TestProfilesWakeBudgetCountsRoomAsThePodsProfile(t *testing.T) {
	tests := []struct {
		name     string
		b        func(*config.KubeSchedulerProfile)
		milliCPU int64
		foo      bool // the pods ask for one example.com/foo
	}{
		{"b checks no room", noFitFilter, 8000, false},
		{"b ignores a resource", ignoringFoo, 1000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fws := profileFrameworks(t, profileSpec{name: "a"}, profileSpec{name: "b", mutate: tc.b})
			qc := QueueConfig()
			if err := UseProfileHints(context.Background(), &qc, fws, klog.Background()); err != nil {
				t.Fatal(err)
			}
			c := NewCache()
			UseWakeBudget(&qc, c, fws...)
			q, err := schedq.New(qc)
			if err != nil {
				t.Fatal(err)
			}
			c.AddNode(node("tainted", 16000, v1.Taint{Key: "k", Effect: v1.TaintEffectNoSchedule}))
			var pods []*v1.Pod
			for _, name := range []string{"a", "b"} {
				p := of(name, pod("p"+name, tc.milliCPU))
				if tc.foo {
					p.Spec.Containers[0].Resources.Requests["example.com/foo"] = resource.MustParse("1")
				}
				if err := q.Add(p); err != nil {
					t.Fatal(err)
				}
				pods = append(pods, p)
			}
			for range pods {
				a, err := q.Pop(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if err := q.Requeue(a, schedq.Failure{RejectedBy: []string{"TaintToleration"}}); err != nil {
					t.Fatal(err)
				}
			}
			n := node("new", 4000)
			c.AddNode(n)
			if err := q.Move(clusterevent.NodeAdd, nil, n, nil); err != nil {
				t.Fatal(err)
			}
			for _, p := range pods {
				_, loc, _ := q.Get(framework.Key(p))
				if woke, want := loc != schedq.InUnschedulable, p.Spec.SchedulerName == "b"; woke != want {
					t.Errorf("%s: woken %v, want %v (%v)", p.Name, woke, want, loc)
				}
			}
		})
	}
}
