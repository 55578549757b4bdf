package scheduler

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
)

// TestPanicInACycleFailsThatPodOnly: a plugin that panics fails its pod's
// attempt as an error (requeued with backoff, reported), and the next pod
// still schedules.
func TestPanicInACycleFailsThatPodOnly(t *testing.T) {
	extra := frameworkruntime.Registry{"FailingFilter": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return failingFilter{}, nil
	}}
	f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, config.Plugin{Name: "FailingFilter"})
	})
	f.h.AddNode(node("n", 4000))
	boom := prioPod("boom", 1000, 10)
	boom.Labels = map[string]string{"fail": "panic"}
	f.h.AddPod(boom)
	f.h.AddPod(pod("fine", 1000))
	out := f.once()
	if out.Result != Error || !strings.Contains(out.Message, "panicked") {
		t.Fatalf("boom: %+v", out)
	}
	if len(f.r.failures) != 1 || !strings.HasPrefix(f.r.failures[0], "boom: SchedulerError: internal error: scheduling cycle panicked") {
		t.Fatalf("reported %v", f.r.failures)
	}
	if _, loc, _ := f.q.Get(types.NamespacedName{Namespace: "default", Name: "boom"}); loc != schedq.InBackoff {
		t.Fatalf("boom is %v, want backing off", loc)
	}
	if out := f.once(); out.Result != Scheduled || f.b.binds["fine"] != "n" {
		t.Fatalf("the next pod: %+v", out)
	}
}

// TestPreemptionCandidateWithoutVictims: the only lower-priority pod on
// the node that is not terminating can stay, because a terminating one
// frees the room (a failover finds the previous leader's victims so). The
// pod is nominated there, with no victim; nothing is evicted.
func TestPreemptionCandidateWithoutVictims(t *testing.T) {
	f, e := newPreemptFixture(t)
	f.h.AddNode(node("a", 4000))
	leaving := runningPod("leaving", "a", 2000, 1, t0)
	leaving.DeletionTimestamp = &metav1.Time{Time: t0}
	f.h.AddPod(leaving)
	f.h.AddPod(runningPod("staying", "a", 2000, 1, t0))
	// b is a candidate too, with a victim.
	f.h.AddNode(node("b", 2000))
	f.h.AddPod(runningPod("b-low", "b", 2000, 1, t0))
	f.h.AddPod(prioPod("high", 2000, 100))
	out := f.once()
	if out.Result != Unschedulable || out.Nominated != "a" || len(out.Victims) != 0 {
		t.Fatalf("result %v, nominated %q, victims %q: %s", out.Result, out.Nominated, victimNames(out), out.Message)
	}
	if got := f.nomination("high"); got != "a" {
		t.Fatalf("nominated to %q", got)
	}
	if len(e.calls) != 1 || e.calls[0] != "high->a: " {
		t.Fatalf("evictor calls %q", e.calls)
	}
}

// TestSchedulingErrorLoggedOnceWithThePod: an attempt that fails as an
// error (a plugin's error, or its panic) is logged once, at error level,
// naming the pod, as kube-scheduler logs "Error scheduling pod".
func TestSchedulingErrorLoggedOnceWithThePod(t *testing.T) {
	for name, tc := range map[string]struct{ fail, want string }{
		"plugin error": {"error", "backend unreachable"},
		"plugin panic": {"panic", "failing filter"},
	} {
		t.Run(name, func(t *testing.T) {
			extra := frameworkruntime.Registry{"FailingFilter": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
				return failingFilter{}, nil
			}}
			f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
				p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, config.Plugin{Name: "FailingFilter"})
			})
			var logs bytes.Buffer
			f.s.o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			f.h.AddNode(node("n", 4000))
			p := pod("boom", 1000)
			p.Labels = map[string]string{"fail": tc.fail}
			f.h.AddPod(p)
			if out := f.once(); out.Result != Error {
				t.Fatalf("%+v, want an Error", out)
			}
			var errs []string
			for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				if strings.Contains(l, "level=ERROR") {
					errs = append(errs, l)
				}
			}
			if len(errs) != 1 || !strings.Contains(errs[0], "pod=default/boom") || !strings.Contains(errs[0], tc.want) {
				t.Fatalf("error lines %q, want one naming default/boom with %q", errs, tc.want)
			}
		})
	}
}
