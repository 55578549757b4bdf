package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
)

// faulty is an out-of-tree plugin at every extension point schedq runs
// that fails where a pod's "fault" label says: "POINT/panic" panics
// there, "POINT/error" returns an error there (for Unreserve and
// PostBind, which return nothing, both panic). A pod labelled
// "Unreserve/..." is also rejected at Permit, so that Unreserve runs in
// its cycle; "PostFilter/..." is rejected at Filter, so that PostFilter
// runs.
type faulty struct{}

const faultyName = "Faulty"

func (faulty) Name() string { return faultyName }

// fault panics or returns the error that p's label asks at point.
func fault(p *v1.Pod, point string) *fwk.Status {
	switch p.Labels["fault"] {
	case point + "/panic":
		panic(fmt.Sprintf("boom at %s", point))
	case point + "/error":
		return fwk.AsStatus(fmt.Errorf("broken at %s", point))
	}
	return nil
}

func (faulty) PreEnqueue(_ context.Context, p *v1.Pod) *fwk.Status { return fault(p, "PreEnqueue") }
func (faulty) PreFilter(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return nil, fault(p, "PreFilter")
}
func (faulty) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
func (faulty) Filter(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ fwk.NodeInfo) *fwk.Status {
	if strings.HasPrefix(p.Labels["fault"], "PostFilter/") {
		return fwk.NewStatus(fwk.Unschedulable, "faulty says no")
	}
	return fault(p, "Filter")
}
func (faulty) PostFilter(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if st := fault(p, "PostFilter"); st != nil {
		return nil, st
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}
func (faulty) PreScore(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	return fault(p, "PreScore")
}
func (faulty) Score(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ fwk.NodeInfo) (int64, *fwk.Status) {
	return 0, fault(p, "Score")
}
func (f faulty) ScoreExtensions() fwk.ScoreExtensions { return f }
func (faulty) NormalizeScore(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ fwk.NodeScoreList) *fwk.Status {
	return fault(p, "NormalizeScore")
}
func (faulty) Reserve(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) *fwk.Status {
	return fault(p, "Reserve")
}
func (faulty) Unreserve(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) {
	if strings.HasPrefix(p.Labels["fault"], "Unreserve/") {
		panic("boom at Unreserve")
	}
}
func (faulty) Permit(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) (*fwk.Status, time.Duration) {
	if strings.HasPrefix(p.Labels["fault"], "Unreserve/") && p.Labels["bind"] != "fails" {
		return fwk.NewStatus(fwk.Unschedulable, "faulty permits nothing"), 0
	}
	return fault(p, "Permit"), 0
}
func (faulty) PreBindPreFlight(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if st := fault(p, "PreBindPreFlight"); st != nil {
		return nil, st
	}
	if strings.HasPrefix(p.Labels["fault"], "PreBind/") {
		return nil, nil // work to do: PreBind runs
	}
	return nil, fwk.NewStatus(fwk.Skip)
}
func (faulty) PreBind(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) *fwk.Status {
	return fault(p, "PreBind")
}
func (faulty) PostBind(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) {
	if strings.HasPrefix(p.Labels["fault"], "PostBind/") {
		panic("boom at PostBind")
	}
}

// newFaultyFixture is newFWFixture with faulty enabled at every
// extension point, through the registry of out-of-tree plugins.
func newFaultyFixture(t *testing.T) *fixture {
	t.Helper()
	extra := frameworkruntime.Registry{faultyName: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return faulty{}, nil
	}}
	return newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		on := []config.Plugin{{Name: faultyName}}
		ps := p.Plugins
		for _, set := range []*config.PluginSet{&ps.PreEnqueue, &ps.PreFilter, &ps.Filter, &ps.PostFilter, &ps.PreScore,
			&ps.Reserve, &ps.Permit, &ps.PreBind, &ps.PostBind} {
			set.Enabled = append(set.Enabled, on...)
		}
		ps.Score.Enabled = append(ps.Score.Enabled, config.Plugin{Name: faultyName, Weight: 1})
	})
}

// assumedPods lists the pods the cache holds assumed.
func (f *fixture) assumedPods() []types.NamespacedName {
	f.c.lock()
	defer f.c.unlock()
	var out []types.NamespacedName
	for k := range f.c.assumed {
		out = append(out, k)
	}
	return out
}

// TestPluginFaultFailsThatPodOnly: a plugin that panics or errs at any
// extension point fails its pod's attempt (requeued and reported with
// the reason), or, after the pod is bound (PostBind), leaves it bound and
// its attempt ended; the scheduler goes on, the next pod is bound, and
// nothing is left assumed or in flight. Each case runs as the live
// scheduler runs (PreBind on a goroutine of its own) and as the
// simulator does (on the cycle's).
func TestPluginFaultFailsThatPodOnly(t *testing.T) {
	for _, tc := range []struct {
		fault string
		// bound: the pod is bound all the same (the fault comes after).
		bound bool
		// want is in the pod's reported failure.
		want string
	}{
		{fault: "PreFilter/panic", want: "boom at PreFilter (plugin Faulty, at PreFilter)"},
		{fault: "PreFilter/error", want: `running PreFilter plugin "Faulty": broken at PreFilter`},
		{fault: "Filter/panic", want: "boom at Filter (plugin Faulty, at Filter)"},
		{fault: "Filter/error", want: `running "Faulty" filter plugin: broken at Filter`},
		{fault: "PostFilter/panic", want: "boom at PostFilter (plugin Faulty, at PostFilter)"},
		{fault: "PostFilter/error", want: "faulty says no"},
		{fault: "PreScore/panic", want: "boom at PreScore (plugin Faulty, at PreScore)"},
		{fault: "PreScore/error", want: `running PreScore plugin "Faulty": broken at PreScore`},
		{fault: "Score/panic", want: "boom at Score (plugin Faulty, at Score)"},
		{fault: "Score/error", want: `running Score plugins: plugin "Faulty" failed with: broken at Score`},
		{fault: "NormalizeScore/panic", want: "boom at NormalizeScore (plugin Faulty, at NormalizeScore)"},
		{fault: "NormalizeScore/error", want: `running Normalize on Score plugins: plugin "Faulty" failed with: broken at NormalizeScore`},
		{fault: "Reserve/panic", want: "boom at Reserve (plugin Faulty, at Reserve)"},
		{fault: "Reserve/error", want: `running Reserve plugin "Faulty": broken at Reserve`},
		{fault: "Permit/panic", want: "boom at Permit (plugin Faulty, at Permit)"},
		{fault: "Permit/error", want: `running Permit plugin "Faulty": broken at Permit`},
		{fault: "Unreserve/panic", want: "faulty permits nothing"},
		{fault: "PreBindPreFlight/panic", want: "boom at PreBindPreFlight (plugin Faulty, at PreBindPreFlight)"},
		{fault: "PreBindPreFlight/error", want: `running PreBindPreFlight "Faulty": broken at PreBindPreFlight`},
		{fault: "PreBind/panic", want: "boom at PreBind (plugin Faulty, at PreBind)"},
		{fault: "PreBind/error", want: `running PreBind plugin "Faulty": broken at PreBind`},
		{fault: "PostBind/panic", bound: true},
	} {
		for _, driver := range []string{"live", "simulator"} {
			t.Run(strings.ReplaceAll(tc.fault, "/", "_")+"/"+driver, func(t *testing.T) {
				f := newFaultyFixture(t)
				f.s.o.Logger = discardLogger()
				// The simulator runs PreBind on the cycle's goroutine.
				f.s.o.SyncPreBind = driver == "simulator"
				f.h.AddNode(node("n1", 4000))
				f.h.AddNode(node("n2", 4000)) // two feasible nodes: PreScore and Score run
				boom := prioPod("boom", 100, 10)
				boom.Labels = map[string]string{"fault": tc.fault}
				f.h.AddPod(boom)
				f.h.AddPod(pod("fine", 100))
				f.once()   // boom, popped first for its priority
				f.s.Wait() // its PreBind, on a goroutine of its own
				if out := f.once(); out.Result != Scheduled || f.b.binds["fine"] == "" {
					t.Fatalf("the next pod: %+v", out)
				}
				key := types.NamespacedName{Namespace: "default", Name: "boom"}
				_, loc, queued := f.q.Get(key)
				if tc.bound {
					if f.b.binds["boom"] == "" || queued || len(f.r.scheduled) != 2 {
						t.Fatalf("boom bound to %q, queued %v (%v), scheduled %q: want bound, out of the queue, reported", f.b.binds["boom"], queued, loc, f.r.scheduled)
					}
				} else {
					if f.b.binds["boom"] != "" || !queued || loc == schedq.InFlight {
						t.Fatalf("boom bound to %q, queued %v at %v: want requeued", f.b.binds["boom"], queued, loc)
					}
					if len(f.r.failures) != 1 || !strings.HasPrefix(f.r.failures[0], "boom: ") || !strings.Contains(f.r.failures[0], tc.want) {
						t.Fatalf("reported %q, want boom's failure with %q", f.r.failures, tc.want)
					}
				}
				if a := f.assumedPods(); slices.Contains(a, key) != tc.bound {
					t.Fatalf("assumed %v, want boom assumed %v (until the informer shows it bound)", a, tc.bound)
				}
				if c := f.q.Counts(); c.InFlight != 0 {
					t.Fatalf("attempts left in flight: %+v", c)
				}
			})
		}
	}
}

// faultBinder binds on a goroutine of its own, as APIBinder does, and
// calls done there; a panic out of done is recorded instead of ending the
// test binary (APIBinder's goroutine would end the process).
type faultBinder struct {
	err     error
	wg      sync.WaitGroup
	mu      sync.Mutex
	escaped []any
}

func (b *faultBinder) Bind(_ context.Context, _ *v1.Pod, _ string, start func() bool, done func(error)) {
	if !Started(start, done) {
		return
	}
	b.wg.Go(func() {
		defer func() {
			if r := recover(); r != nil {
				b.mu.Lock()
				b.escaped = append(b.escaped, r)
				b.mu.Unlock()
			}
		}()
		done(b.err)
	})
}

// TestPluginFaultOnTheBindingGoroutine: Unreserve after a failed
// binding, and PostBind after a successful one, run on the binding's
// goroutine; a panic there is contained, and the pod is requeued (or
// counted bound) and reported as without it.
func TestPluginFaultOnTheBindingGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name, fault string
		bindErr     error
		bound       bool
	}{
		{name: "Unreserve after a failed binding", fault: "Unreserve/panic", bindErr: errors.New("refused")},
		{name: "PostBind", fault: "PostBind/panic", bound: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFaultyFixture(t)
			f.s.o.Logger = discardLogger()
			b := &faultBinder{err: tc.bindErr}
			f.s.binder = b
			f.h.AddNode(node("n1", 4000))
			boom := pod("boom", 100)
			boom.Labels = map[string]string{"fault": tc.fault, "bind": "fails"}
			f.h.AddPod(boom)
			if out := f.once(); out.Result != Scheduled {
				t.Fatalf("%+v", out)
			}
			f.s.Wait()
			b.wg.Wait()
			if len(b.escaped) != 0 {
				t.Fatalf("a panic left the binding's goroutine: %v", b.escaped)
			}
			_, loc, queued := f.q.Get(types.NamespacedName{Namespace: "default", Name: "boom"})
			switch {
			case tc.bound && (queued || len(f.r.scheduled) != 1):
				t.Fatalf("queued %v (%v), scheduled %q: want out of the queue, reported", queued, loc, f.r.scheduled)
			case !tc.bound && (!queued || loc == schedq.InFlight || len(f.r.failures) != 1 || !strings.Contains(f.r.failures[0], "refused")):
				t.Fatalf("queued %v at %v, failures %q: want requeued, reported", queued, loc, f.r.failures)
			}
			if a := f.assumedPods(); len(a) != 0 != tc.bound {
				t.Fatalf("assumed %v, want boom assumed %v (until the informer shows it bound)", a, tc.bound)
			}
		})
	}
}

// discardLogger drops what it is given: the faults' logs are expected.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestPreEnqueueFaultHoldsThatPodOnly: a PreEnqueue plugin that panics,
// run under the queue's lock as the informer adds the pod, holds that
// pod back (as its error would) instead of ending the informer's
// goroutine; the explanation names the plugin and the panic; the next
// pod is bound.
func TestPreEnqueueFaultHoldsThatPodOnly(t *testing.T) {
	for _, fault := range []string{"PreEnqueue/panic", "PreEnqueue/error"} {
		t.Run(strings.ReplaceAll(fault, "/", "_"), func(t *testing.T) {
			f := newFaultyFixture(t)
			f.h.AddNode(node("n1", 4000))
			boom := prioPod("boom", 100, 10)
			boom.Labels = map[string]string{"fault": fault}
			f.h.AddPod(boom)
			f.h.AddPod(pod("fine", 100))
			if out := f.once(); out.Result != Scheduled || f.b.binds["fine"] != "n1" {
				t.Fatalf("the next pod: %+v", out)
			}
			key := types.NamespacedName{Namespace: "default", Name: "boom"}
			if _, loc, _ := f.q.Get(key); loc != schedq.InGated {
				t.Fatalf("boom is %v, want gated", loc)
			}
			fw := f.s.profs[0].fw
			want := "broken at PreEnqueue"
			if strings.HasSuffix(fault, "panic") {
				want = "PreEnqueue plugin Faulty panicked: boom at PreEnqueue"
			}
			if got := NewGateReasons(context.Background(), fw).Of(faultyName, boom); !strings.Contains(got, want) {
				t.Fatalf("gate reason %q, want %q", got, want)
			}
		})
	}
}

// TestPluginFaultInAGroupAttempt: a plugin that panics for one member of
// a gang fails the group's attempt (nothing of it left reserved, assumed
// or in the snapshot) or, after the trial (PreBindPreFlight, PreBind),
// that member's binding, which goes back with its group while the others
// are bound; PostBind's leaves every member bound. The next pod is bound,
// and no attempt is left in flight.
func TestPluginFaultInAGroupAttempt(t *testing.T) {
	for _, tc := range []struct {
		fault string
		bound int // members bound
	}{
		{fault: "PreFilter/panic"},
		{fault: "Filter/panic"},
		{fault: "Score/panic"},
		{fault: "Reserve/panic"},
		{fault: "Permit/panic"},
		{fault: "Unreserve/panic", bound: 2}, // rejected at Permit: the others meet minCount 2
		{fault: "PreBindPreFlight/panic", bound: 2},
		{fault: "PreBind/panic", bound: 2},
		{fault: "PostBind/panic", bound: 3},
	} {
		t.Run(strings.ReplaceAll(tc.fault, "/", "_"), func(t *testing.T) {
			f := newFaultyFixture(t)
			f.s.o.Logger = discardLogger()
			f.h.AddNode(node("n1", 4000))
			f.h.AddNode(node("n2", 4000))
			f.addFWGang("g", 2, 3, func(i int, p *v1.Pod) {
				if i == 1 {
					p.Labels = map[string]string{"fault": tc.fault}
				}
			})
			f.once()   // the group
			f.s.Wait() // its members' PreBinds, on goroutines of their own
			var bound []types.NamespacedName
			for name := range f.b.binds {
				bound = append(bound, types.NamespacedName{Namespace: "default", Name: name})
			}
			if len(bound) != tc.bound {
				t.Fatalf("bound %v, want %d members", f.b.binds, tc.bound)
			}
			assumed := f.assumedPods()
			slices.SortFunc(assumed, func(a, b types.NamespacedName) int { return strings.Compare(a.Name, b.Name) })
			slices.SortFunc(bound, func(a, b types.NamespacedName) int { return strings.Compare(a.Name, b.Name) })
			if !slices.Equal(assumed, bound) {
				t.Fatalf("assumed %v, want the bound members %v alone", assumed, bound)
			}
			if tc.bound == 0 {
				if got := f.snapshotPods(); len(got) != 0 {
					t.Fatalf("the snapshot keeps the attempt's members: %v", got)
				}
			}
			if c := f.q.Counts(); c.InFlight != 0 {
				t.Fatalf("attempts left in flight: %+v", c)
			}
			if tc.bound < 3 {
				if _, loc, ok := f.q.Get(types.NamespacedName{Namespace: "default", Name: "g-1"}); !ok || loc == schedq.InFlight {
					t.Fatalf("g-1 queued %v at %v: want back in the queue", ok, loc)
				}
			}
			f.h.AddPod(prioPod("next", 100, 100))
			if out := f.once(); out.Result != Scheduled || f.b.binds["next"] == "" {
				t.Fatalf("the next pod: %+v", out)
			}
		})
	}
}

// tally is a Reserve and PostBind plugin that counts the Unreserve and
// PostBind calls per pod.
type tally struct {
	mu        sync.Mutex
	unreserve map[string]int
	postBind  map[string]int
}

func (t *tally) PostBind(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.postBind[p.Name]++
}

func (*tally) Name() string { return "Tally" }
func (*tally) Reserve(context.Context, fwk.CycleState, *v1.Pod, string) *fwk.Status {
	return nil
}
func (t *tally) Unreserve(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unreserve[p.Name]++
}

// TestUnreservePanicLeavesTheOthersUnreserved: Unreserve runs each
// Reserve plugin's in turn, the last first; one that panics (Faulty,
// last) ends only its own, and the plugin before it (Tally) still gives
// back what it reserved, after a rejection at Permit in the cycle, after
// a failed binding on the binding's goroutine, and for a gang member
// rejected at Permit.
func TestUnreservePanicLeavesTheOthersUnreserved(t *testing.T) {
	for _, tc := range []struct {
		name, bind string
		bindErr    error
		gang       bool
	}{
		{name: "rejected at Permit"},
		{name: "binding failed", bind: "fails", bindErr: errors.New("refused")},
		{name: "gang member rejected at Permit", gang: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := &tally{unreserve: map[string]int{}}
			extra := frameworkruntime.Registry{
				faultyName: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return faulty{}, nil },
				"Tally":    func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return tl, nil },
			}
			f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
				p.Plugins.Reserve.Enabled = append(p.Plugins.Reserve.Enabled, config.Plugin{Name: "Tally"}, config.Plugin{Name: faultyName})
				p.Plugins.Permit.Enabled = append(p.Plugins.Permit.Enabled, config.Plugin{Name: faultyName})
			})
			f.s.o.Logger = discardLogger()
			b := &faultBinder{err: tc.bindErr}
			if !tc.gang { // the gang's members would bind at once, and recReporter is not safe for concurrent use
				f.s.binder = b
			}
			f.h.AddNode(node("n1", 4000))
			boom := "boom"
			if tc.gang {
				boom = "g-1"
				f.addFWGang("g", 2, 3, func(i int, p *v1.Pod) {
					if i == 1 {
						p.Labels = map[string]string{"fault": "Unreserve/panic"}
					}
				})
			} else {
				p := pod("boom", 100)
				p.Labels = map[string]string{"fault": "Unreserve/panic", "bind": tc.bind}
				f.h.AddPod(p)
			}
			f.once()
			f.s.Wait()
			b.wg.Wait()
			tl.mu.Lock()
			defer tl.mu.Unlock()
			if tl.unreserve[boom] != 1 {
				t.Fatalf("Tally's Unreserve ran %d times for %s, want once: %v", tl.unreserve[boom], boom, tl.unreserve)
			}
		})
	}
}

// TestPostBindPanicLeavesTheOthersRun: a PostBind plugin that panics
// (Faulty, first) ends only its own PostBind; the plugin after it
// (Tally) still runs, and the pod is bound and reported.
func TestPostBindPanicLeavesTheOthersRun(t *testing.T) {
	tl := &tally{unreserve: map[string]int{}, postBind: map[string]int{}}
	extra := frameworkruntime.Registry{
		faultyName: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return faulty{}, nil },
		"Tally":    func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return tl, nil },
	}
	f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		p.Plugins.PostBind.Enabled = append(p.Plugins.PostBind.Enabled, config.Plugin{Name: faultyName}, config.Plugin{Name: "Tally"})
	})
	f.s.o.Logger = discardLogger()
	f.h.AddNode(node("n1", 4000))
	p := pod("boom", 100)
	p.Labels = map[string]string{"fault": "PostBind/panic"}
	f.h.AddPod(p)
	if out := f.once(); out.Result != Scheduled || f.b.binds["boom"] != "n1" || len(f.r.scheduled) != 1 {
		t.Fatalf("%+v, scheduled %q: want bound and reported", out, f.r.scheduled)
	}
	if tl.postBind["boom"] != 1 {
		t.Fatalf("Tally's PostBind ran %d times, want once", tl.postBind["boom"])
	}
}
