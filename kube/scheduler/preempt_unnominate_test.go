package scheduler

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// apiPreemption is a preemption fixture on one path whose Evictor is the
// APIEvictor on a fake clientset: a node a of 4000m full of two
// lower-priority pods, a node b full of a pod no one outranks, and
// pending pods nominated in their status (restored in the queue when
// added): peer (the preemptor's priority) and mid (lower) to a, side
// (lower) to b. high, the preemptor, is added first so that it pops
// first.
type apiPreemption struct {
	f   *fixture
	e   *APIEvictor
	cs  *fake.Clientset
	log *bytes.Buffer
}

func newAPIPreemption(t *testing.T) *apiPreemption {
	t.Helper()
	f, _ := newPreemptFixture(t)
	nominated := func(name string, milliCPU int64, prio int32, node string) *v1.Pod {
		p := prioPod(name, milliCPU, prio)
		p.Status.NominatedNodeName = node
		return p
	}
	pods := []*v1.Pod{
		runningPod("low1", "a", 2000, 1, t0),
		runningPod("low2", "a", 2000, 1, t0),
		runningPod("top", "b", 2000, 1000, t0),
		prioPod("high", 2000, 100),
		nominated("peer", 1000, 100, "a"),
		nominated("mid", 1000, 50, "a"),
		nominated("side", 1000, 50, "b"),
	}
	objs := make([]runtime.Object, len(pods))
	for i, p := range pods {
		p.UID = types.UID("uid-" + p.Name)
		objs[i] = p.DeepCopy()
	}
	a := &apiPreemption{f: f, cs: fake.NewClientset(objs...), log: &bytes.Buffer{}}
	a.e = &APIEvictor{Client: a.cs, SchedulerName: "schedq", Logger: slog.New(slog.NewTextHandler(a.log, nil))}
	f.s.pre.o.Evictor = a.e
	f.h.AddNode(node("a", 4000))
	f.h.AddNode(node("b", 2000))
	for _, p := range pods {
		f.h.AddPod(p)
	}
	return a
}

// preempt runs high's cycle and waits for the evictor's writes.
func (a *apiPreemption) preempt(t *testing.T) {
	t.Helper()
	out := a.f.once()
	a.e.Wait()
	if got := victimNames(out); out.Nominated != "a" || got != "low1,low2" {
		t.Fatalf("nominated %q, victims %s: %s", out.Nominated, got, out.Message)
	}
}

// statusNomination is name's status.nominatedNodeName in the API server.
func (a *apiPreemption) statusNomination(t *testing.T, name string) string {
	t.Helper()
	p, err := a.cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return p.Status.NominatedNodeName
}

// TestPreemptionClearsLowerPriorityNominationsInTheAPI: a pod that
// preempts on a node takes the nomination of the pods of lower priority
// nominated there, in the queue and in their status.nominatedNodeName;
// a pod of its own priority nominated there, and pods nominated
// elsewhere, keep theirs.
func TestPreemptionClearsLowerPriorityNominationsInTheAPI(t *testing.T) {
	a := newAPIPreemption(t)
	a.preempt(t)
	want := map[string]string{"high": "a", "peer": "a", "mid": "", "side": "b"}
	for name, node := range want {
		if got := a.statusNomination(t, name); got != node {
			t.Errorf("%s: status.nominatedNodeName %q, want %q", name, got, node)
		}
		if got := a.f.nomination(name); got != node {
			t.Errorf("%s: nominated to %q in the queue, want %q", name, got, node)
		}
	}
	for _, v := range []string{"low1", "low2"} {
		if _, err := a.cs.CoreV1().Pods("default").Get(context.Background(), v, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("victim %s not deleted: %v", v, err)
		}
	}
}

// TestFailingNominationClearIsLoggedAndThePreemptionGoesOn: the API
// server refuses to clear mid's nomination; the failure is logged, the
// victims are still evicted, the preemptor keeps its nomination (a
// failed preemption would clear it), and mid gets its nomination back in
// the queue, where its status still names the node (until 2026-11-30 the
// queue dropped it).
func TestFailingNominationClearIsLoggedAndThePreemptionGoesOn(t *testing.T) {
	a := newAPIPreemption(t)
	a.cs.PrependReactor("patch", "pods", func(act k8stesting.Action) (bool, runtime.Object, error) {
		if act.(k8stesting.PatchAction).GetName() == "mid" {
			return true, nil, errors.New("apiserver says no")
		}
		return false, nil, nil
	})
	a.preempt(t)
	if got := a.f.nomination("high"); got != "a" {
		t.Fatalf("the preemptor is nominated to %q in the queue: the failed clear failed its preemption", got)
	}
	if got := a.statusNomination(t, "high"); got != "a" {
		t.Fatalf("the preemptor's status.nominatedNodeName is %q", got)
	}
	if a.f.s.pre.isRunning("uid-high") {
		t.Fatal("the preemption never ended")
	}
	if status, queue := a.statusNomination(t, "mid"), a.f.nomination("mid"); status != "a" || queue != "a" {
		t.Errorf("mid nominated to %q in its status and %q in the queue, want a in both", status, queue)
	}
	for _, v := range []string{"low1", "low2"} {
		if _, err := a.cs.CoreV1().Pods("default").Get(context.Background(), v, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("victim %s not deleted: %v", v, err)
		}
	}
	log := a.log.String()
	if !strings.Contains(log, "could not clear status.nominatedNodeName") || !strings.Contains(log, "pod=default/mid") ||
		!strings.Contains(log, "apiserver says no") {
		t.Fatalf("the failure was not logged: %q", log)
	}
}
