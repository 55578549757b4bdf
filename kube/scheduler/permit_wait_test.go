package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// waiter asks every pod to wait at Permit, and counts its Unreserves.
type waiter struct{ unreserved *int }

func (waiter) Name() string { return "Waiter" }
func (waiter) Permit(context.Context, fwk.CycleState, *v1.Pod, string) (*fwk.Status, time.Duration) {
	return fwk.NewStatus(fwk.Wait, "hold on"), time.Minute
}
func (waiter) Reserve(context.Context, fwk.CycleState, *v1.Pod, string) *fwk.Status { return nil }
func (w waiter) Unreserve(context.Context, fwk.CycleState, *v1.Pod, string)         { *w.unreserved++ }

// TestPermitWaitIsAnError: schedq holds no pod at Permit (fwBinding's
// reservePermit); a Permit plugin that asks a pod to wait fails its
// attempt as an error naming the plugin: the pod is unreserved, not
// assumed, not bound, and backs off. Nothing is left waiting for a
// timeout that no one would serve.
func TestPermitWaitIsAnError(t *testing.T) {
	unreserved := 0
	extra := frameworkruntime.Registry{"Waiter": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return waiter{&unreserved}, nil
	}}
	f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		p.Plugins.Reserve.Enabled = append(p.Plugins.Reserve.Enabled, config.Plugin{Name: "Waiter"})
		p.Plugins.Permit.Enabled = append(p.Plugins.Permit.Enabled, config.Plugin{Name: "Waiter"})
	})
	f.h.AddNode(node("n", 1000))
	p := pod("p", 100)
	f.h.AddPod(p)
	out := f.once()
	if out.Result != Error || !strings.Contains(out.Message, "Permit plugin Waiter asked the pod to wait") {
		t.Fatalf("outcome %v %q, want an error naming Waiter", out.Result, out.Message)
	}
	if unreserved != 1 {
		t.Errorf("Unreserve ran %d times, want once", unreserved)
	}
	if _, ok := f.c.NodeOf(framework.Key(p)); ok || len(f.b.binds) != 0 {
		t.Errorf("the pod is assumed or bound (%v)", f.b.binds)
	}
	if _, loc, _ := f.q.Get(framework.Key(p)); loc != schedq.InBackoff {
		t.Errorf("the pod is %v, want backing off", loc)
	}
}
