package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// orderLog records, in order, the API writes and bindings a test sees.
type orderLog struct {
	mu  sync.Mutex
	got []string
}

func (l *orderLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, s)
}

func (l *orderLog) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// nomProbe is a PreBind plugin whose PreBindPreFlight has work only for
// pods labelled prebind=work; its PreBind logs itself, runs hook (if
// set), then fails for pods labelled fail=prebind.
type nomProbe struct {
	log  *orderLog
	hook func(pod *v1.Pod)
}

func (p *nomProbe) Name() string { return "NomProbe" }
func (p *nomProbe) PreBindPreFlight(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if pod.Labels["prebind"] != "work" {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}
func (p *nomProbe) PreBind(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	p.log.add("prebind " + pod.Name)
	if p.hook != nil {
		p.hook(pod)
	}
	if pod.Labels["fail"] == "prebind" {
		return fwk.AsStatus(errAttach)
	}
	return nil
}

// nomBinder logs each binding it is asked for; it fails it with err, or
// holds it (hold: done is called by the test, through held).
type nomBinder struct {
	log  *orderLog
	err  error
	hold bool
	held []func(error)
	// failFor fails the binding of the pods it names, with err.
	failFor map[string]bool
}

func (b *nomBinder) Bind(_ context.Context, p *v1.Pod, node string, start func() bool, done func(error)) {
	if !Started(start, done) {
		return
	}
	b.log.add("bind " + p.Name + " " + node)
	if b.hold {
		b.held = append(b.held, done)
		return
	}
	if b.failFor != nil && !b.failFor[p.Name] {
		done(nil)
		return
	}
	done(b.err)
}

// nomFixture is the scheduler on the default profile plus nomProbe, with
// PreBind on the cycle's goroutine, an APIEvictor over a fake clientset
// as its nominator, and one node n1 of 8 CPUs.
type nomFixture struct {
	*fixture
	cs    *fake.Clientset
	ev    *APIEvictor
	log   *orderLog
	b     *nomBinder
	probe *nomProbe
}

// newNomFixture builds it; pods are in the fake API server (not the
// queue). A status patch that fails with patchErr is logged all the
// same.
func newNomFixture(t *testing.T, patchErr error, pods ...*v1.Pod) *nomFixture {
	t.Helper()
	log := &orderLog{}
	probe := &nomProbe{log: log}
	extra := frameworkruntime.Registry{"NomProbe": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return probe, nil }}
	f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		p.Plugins.PreBind.Enabled = append(p.Plugins.PreBind.Enabled, config.Plugin{Name: "NomProbe"})
	})
	objs := make([]runtime.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	cs := fake.NewClientset(objs...)
	cs.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		var patch struct {
			Status map[string]any `json:"status"`
		}
		pa := a.(k8stesting.PatchAction)
		if err := json.Unmarshal(pa.GetPatch(), &patch); err != nil {
			t.Errorf("patch %s: %v", pa.GetPatch(), err)
		}
		if nnn, ok := patch.Status["nominatedNodeName"]; ok {
			log.add("nominate " + pa.GetName() + " " + nnn.(string))
		}
		if patchErr != nil {
			return true, nil, patchErr
		}
		return false, nil, nil
	})
	ev := &APIEvictor{Client: cs, SchedulerName: "schedq"}
	b := &nomBinder{log: log}
	f.s.binder = b
	f.s.o.SyncPreBind = true
	f.s.o.Nominations = ev
	f.h.AddNode(zonedNode("n1", "a"))
	return &nomFixture{fixture: f, cs: cs, ev: ev, log: log, b: b, probe: probe}
}

// TestBindingNomination: a pod whose PreBind has work gets one write of
// status.nominatedNodeName naming its node, before its PreBind and its
// binding, as
// kube-scheduler v1.37.2 writes it with NominatedNodeNameForExpectation;
// a pod without PreBind work gets none (no extra request); a write that
// fails does not fail the binding; a binding that fails after the write
// (the bind request, PreBind, the node deleted during PreBind) clears
// it, and the pod goes back with no nomination in the queue.
func TestBindingNomination(t *testing.T) {
	boom := errors.New("the API server is away")
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		patchErr error // every status patch fails with it
		bindErr  error
		// deleteNode: PreBind sees n1 deleted (its node's deletion
		// aborts the binding).
		deleteNode bool
		want       []string // API writes and bindings, in order
		bound      bool     // the binding succeeded
		reported   bool     // reported as a failed binding
		requeued   schedq.Location
	}{{
		name:  "PreBind with work: one nomination before the binding",
		pod:   labelled(pod("vol", 1000), "prebind", "work"),
		want:  []string{"nominate vol n1", "prebind vol", "bind vol n1"},
		bound: true,
	}, {
		name:  "no PreBind work: no nomination",
		pod:   pod("plain", 1000),
		want:  []string{"bind plain n1"},
		bound: true,
	}, {
		name:     "the nomination's write fails: the binding goes on",
		pod:      labelled(pod("vol", 1000), "prebind", "work"),
		patchErr: boom,
		want:     []string{"nominate vol n1", "prebind vol", "bind vol n1"},
		bound:    true,
	}, {
		name:     "the bind request fails: the nomination is cleared",
		pod:      labelled(pod("vol", 1000), "prebind", "work"),
		bindErr:  boom,
		want:     []string{"nominate vol n1", "prebind vol", "bind vol n1", "nominate vol "},
		reported: true,
		requeued: schedq.InBackoff,
	}, {
		name:     "PreBind fails: the nomination is cleared",
		pod:      labelled(labelled(pod("vol", 1000), "prebind", "work"), "fail", "prebind"),
		want:     []string{"nominate vol n1", "prebind vol", "nominate vol "},
		reported: true,
		requeued: schedq.InBackoff,
	}, {
		name:       "the node is deleted during PreBind: the nomination is cleared",
		pod:        labelled(pod("vol", 1000), "prebind", "work"),
		deleteNode: true,
		want:       []string{"nominate vol n1", "prebind vol", "nominate vol "},
		requeued:   schedq.InBackoff,
	}, {
		name:     "no PreBind work, the bind request fails: nothing to clear",
		pod:      pod("plain", 1000),
		bindErr:  boom,
		want:     []string{"bind plain n1"},
		reported: true,
		requeued: schedq.InBackoff,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newNomFixture(t, tc.patchErr, tc.pod)
			f.b.err = tc.bindErr
			if tc.deleteNode {
				f.probe.hook = func(*v1.Pod) { f.h.DeleteNode(zonedNode("n1", "a")) }
			}
			f.h.AddPod(tc.pod)
			if out := f.once(); out.Result != Scheduled {
				t.Fatalf("cycle: %+v", out)
			}
			f.ev.Wait() // the clearing's goroutine
			if got := f.log.seen(); !slices.Equal(got, tc.want) {
				t.Fatalf("writes and bindings %q, want %q", got, tc.want)
			}
			key := framework.Key(tc.pod)
			if _, onNode := f.c.NodeOf(key); onNode != tc.bound {
				t.Fatalf("on a node: %v, want %v", onNode, tc.bound)
			}
			if got := len(f.r.failures) > 0; got != tc.reported {
				t.Fatalf("reported failures %q, want reported %v", f.r.failures, tc.reported)
			}
			if _, loc, _ := f.q.Get(key); loc != tc.requeued {
				t.Fatalf("queue location %v, want %v", loc, tc.requeued)
			}
			if node, ok := f.q.Nomination(key); ok {
				t.Fatalf("nominated to %q in the queue after its binding ended", node)
			}
		})
	}
}

// TestBindingNominationEcho: the informer's echo of the binding's own
// nomination (status.nominatedNodeName = its node, seen while the pod is
// assumed) does not nominate the pod in the queue, so other pods' filters
// count its room on the node once (its assumption), not twice, and it
// moves no parked pod; after the binding fails, the echoes of the
// nomination and of its clearing, in either order relative to the
// failure, leave the pod requeued with no nomination.
func TestBindingNominationEcho(t *testing.T) {
	for _, tc := range []struct {
		name string
		// echoAfterFailure: the nomination's echo arrives only after the
		// binding failed and the pod went back to the queue.
		echoAfterFailure bool
	}{
		{name: "echo while assumed"},
		{name: "echo after the failure", echoAfterFailure: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vol := labelled(pod("vol", 5000), "prebind", "work")
			huge := pod("huge", 9000)
			small := pod("small", 3000)
			f := newNomFixture(t, nil, vol, huge, small)
			f.b.hold = true
			// huge fits no node: parked behind NodeResourcesFit.
			f.h.AddPod(huge)
			if out := f.once(); out.Result != Unschedulable {
				t.Fatalf("huge: %+v", out)
			}
			f.h.AddPod(vol)
			if out := f.once(); out.Result != Scheduled || out.Node != "n1" {
				t.Fatalf("vol: %+v", out)
			}
			echo := vol.DeepCopy()
			echo.ResourceVersion = "2"
			echo.Status.NominatedNodeName = "n1"
			cleared := echo.DeepCopy()
			cleared.ResourceVersion = "3"
			cleared.Status.NominatedNodeName = ""
			if !tc.echoAfterFailure {
				f.h.UpdatePod(vol, echo)
				if node, ok := f.q.Nomination(framework.Key(vol)); ok {
					t.Fatalf("assumed vol nominated to %q in the queue by its echo", node)
				}
				if _, loc, _ := f.q.Get(framework.Key(huge)); loc != schedq.InUnschedulable {
					t.Fatalf("huge moved to %v by the echo of an assumed pod's nomination", loc)
				}
				// 8 CPUs, 5 held by vol's assumption: small's 3 fit, unless
				// vol's room were counted twice.
				f.h.AddPod(small)
				if out := f.once(); out.Result != Scheduled || out.Node != "n1" {
					t.Fatalf("small: %+v; vol's room counted twice?", out)
				}
			}
			// vol's binding fails.
			f.b.held[0](errors.New("the API server is away"))
			f.ev.Wait()
			if got, want := f.log.seen()[len(f.log.seen())-1], "nominate vol "; got != want {
				t.Fatalf("last write %q, want %q (all: %q)", got, want, f.log.seen())
			}
			if tc.echoAfterFailure {
				f.h.UpdatePod(vol, echo)
			}
			f.h.UpdatePod(echo, cleared)
			key := framework.Key(vol)
			if _, loc, _ := f.q.Get(key); loc != schedq.InBackoff {
				t.Fatalf("vol at %v, want backoff", loc)
			}
			if node, ok := f.q.Nomination(key); ok {
				t.Fatalf("vol nominated to %q after its failed binding's nomination was cleared", node)
			}
			got, err := f.cs.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), "default", "vol")
			if err != nil || got.(*v1.Pod).Status.NominatedNodeName != "" {
				t.Fatalf("vol's status in the API server: %+v, %v", got, err)
			}
		})
	}
}

// TestBindingNominationGroup: each member of a group attempt whose
// PreBind has work is nominated before its PreBind and binding, as
// kube-scheduler nominates each member in its binding cycle; a member
// whose binding fails has its nomination cleared, the others keep theirs
// (the API server clears it when it binds them).
func TestBindingNominationGroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail map[string]bool // the members whose binding fails
		want map[string][]string
	}{{
		name: "both bound",
		fail: map[string]bool{},
		want: map[string][]string{
			"g-0": {"nominate g-0 n1", "prebind g-0", "bind g-0 n1"},
			"g-1": {"nominate g-1 n1", "prebind g-1", "bind g-1 n1"},
		},
	}, {
		name: "one binding fails: its nomination is cleared",
		fail: map[string]bool{"g-1": true},
		want: map[string][]string{
			"g-0": {"nominate g-0 n1", "prebind g-0", "bind g-0 n1"},
			"g-1": {"nominate g-1 n1", "prebind g-1", "bind g-1 n1", "nominate g-1 "},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var members []*v1.Pod
			for i := range 2 {
				members = append(members, labelled(memberPod(fmt.Sprintf("g-%d", i), "g", 100), "prebind", "work"))
			}
			f := newNomFixture(t, nil, members...)
			f.b.err = errors.New("the API server is away")
			f.b.failFor = tc.fail
			f.h.AddPodGroup(podGroup("g", 2, 0))
			for _, m := range members {
				f.h.AddPod(m)
			}
			if out := f.once(); out.Result != Scheduled {
				t.Fatalf("group: %+v", out)
			}
			f.ev.Wait()
			for name, want := range tc.want {
				var got []string
				for _, s := range f.log.seen() {
					if strings.Fields(s)[1] == name {
						got = append(got, s)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: writes and bindings %q, want %q (all: %q)", name, got, want, f.log.seen())
				}
			}
		})
	}
}

// TestAPIEvictorBindingNominations: the APIEvictor as a BindingNominator
// writes the binding's nomination when its write is run, clears it on a
// goroutine that Wait waits for, and writes nothing for a term that
// ended (its ctx done): the next leader reads the status as it finds it.
func TestAPIEvictorBindingNominations(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name     string
		clearCtx context.Context
		want     string // the status left
		patches  int
	}{
		{name: "set, then cleared", clearCtx: context.Background(), want: "", patches: 2},
		{name: "set; the term ended before the clearing", clearCtx: cancelled, want: "n1", patches: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("vol", 1000)
			cs := fake.NewClientset(p)
			e := &APIEvictor{Client: cs}
			if err := e.NominateForBinding(p, "n1")(context.Background()); err != nil {
				t.Fatal(err)
			}
			e.ClearAfterBinding(tc.clearCtx, p, "n1")
			e.Wait()
			got, err := cs.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), "default", "vol")
			if err != nil || got.(*v1.Pod).Status.NominatedNodeName != tc.want {
				t.Fatalf("status %+v, err %v; want nominatedNodeName %q", got, err, tc.want)
			}
			n := 0
			for _, a := range cs.Actions() {
				if a.GetVerb() == "patch" {
					n++
				}
			}
			if n != tc.patches {
				t.Fatalf("%d patches, want %d", n, tc.patches)
			}
		})
	}
}
