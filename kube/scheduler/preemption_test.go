package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

// syncEvictor records preemptions and, unless hold is set, evicts the
// victims at once through the handlers, as the informer would report
// their deletion. fail makes every eviction fail.
type syncEvictor struct {
	f     *fixture
	hold  bool
	fail  error
	calls []string // "preemptor->node: victim,victim"
	// unnominated lists, per call, the pods that lost their nomination.
	unnominated [][]string
	held        []func()
}

func (e *syncEvictor) Wait() {} // it evicts before Preempt returns, or holds for the test

func (e *syncEvictor) Preempt(_ context.Context, pr Preemption, done func([]error)) {
	var names, unnominated []string
	victims := pr.Victims
	for _, v := range victims {
		names = append(names, v.Name)
	}
	for _, u := range pr.Unnominated {
		unnominated = append(unnominated, u.Name)
	}
	e.calls = append(e.calls, fmt.Sprintf("%s->%s: %s", pr.Preemptor.Name, pr.Node, strings.Join(names, ",")))
	e.unnominated = append(e.unnominated, unnominated)
	run := func() {
		if e.fail != nil {
			done([]error{e.fail})
			return
		}
		for _, v := range victims {
			e.f.h.DeletePod(v)
		}
		done(nil)
	}
	if e.hold {
		e.held = append(e.held, run)
		return
	}
	run()
}

func victimNames(out Outcome) string {
	var names []string
	for _, v := range out.Victims {
		names = append(names, v.Name)
	}
	return strings.Join(names, ",")
}

func prioPod(name string, milliCPU int64, prio int32) *v1.Pod {
	p := pod(name, milliCPU)
	p.Spec.Priority = &prio
	return p
}

// runningPod is a pod of priority prio already running on node since start.
func runningPod(name, node string, milliCPU int64, prio int32, start time.Time) *v1.Pod {
	p := prioPod(name, milliCPU, prio)
	p.Spec.NodeName = node
	p.Status.StartTime = &metav1.Time{Time: start}
	return p
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newPreemptFixture is newFWPreemptFixture on the default profile.
func newPreemptFixture(t *testing.T, budgets ...*policyv1.PodDisruptionBudget) (*fixture, *syncEvictor) {
	t.Helper()
	return newFWPreemptFixture(t, nil, nil, budgets...)
}

// noLowerPriority is DefaultPreemption's reason for a node with nothing
// to evict.
const noLowerPriority = "No preemption victims found for incoming pod"

func (f *fixture) nomination(name string) string {
	n, _ := f.q.Nomination(types.NamespacedName{Namespace: "default", Name: name})
	return n
}

func TestPreemptionEvictsTheFewestLowestVictimsAndBindsThere(t *testing.T) {
	f, e := newPreemptFixture(t)
	f.h.AddNode(node("a", 4000))
	f.h.AddNode(node("b", 4000))
	// a: two low pods of 1000 and one of 2000; b: one 2000 at priority 5
	// and one mid 2000 at priority 50.
	f.h.AddPod(runningPod("a-low1", "a", 1000, 1, t0))
	f.h.AddPod(runningPod("a-low2", "a", 1000, 1, t0))
	f.h.AddPod(runningPod("a-low3", "a", 2000, 2, t0))
	f.h.AddPod(runningPod("b-low", "b", 2000, 5, t0))
	f.h.AddPod(runningPod("b-mid", "b", 2000, 50, t0))
	f.h.AddPod(prioPod("high", 2000, 100))
	e.hold = true
	out := f.once()
	// a: the most important potential victim, a-low3 (priority 2), is
	// put back first and the pod still fits; a-low1 and a-low2 go.
	// b: b-low (priority 5). The lower highest-victim priority wins: a.
	if got := victimNames(out); out.Result != Unschedulable || out.Nominated != "a" || got != "a-low1,a-low2" {
		t.Fatalf("result %v, nominated %q, victims %s: %s", out.Result, out.Nominated, got, out.Message)
	}
	if got := f.nomination("high"); got != "a" {
		t.Fatalf("nominated to %q", got)
	}
	// The cycle did not wait: nothing was evicted yet.
	if _, ok := f.c.NodeOf(types.NamespacedName{Namespace: "default", Name: "a-low1"}); !ok {
		t.Fatal("victim gone before the evictor ran")
	}
	// While its victims are being evicted, a pod of lower priority may
	// not take the room the preemptor is nominated to.
	f.h.AddPod(prioPod("sneak", 2000, 3))
	e.held[0]()
	if _, loc, _ := f.q.Get(types.NamespacedName{Namespace: "default", Name: "high"}); loc != schedq.InBackoff && loc != schedq.InActive {
		t.Fatalf("preemptor %v after its victims left, want woken", loc)
	}
	for range 2 {
		info, err := f.q.Pop(ended)
		if err != nil {
			t.Fatal(err)
		}
		out := f.s.ScheduleOne(context.Background(), info)
		if info.Item.Name == "sneak" && out.Result == Scheduled {
			t.Fatalf("the lower-priority pod took the nominated room: %+v", out)
		}
	}
	if f.b.binds["high"] != "a" {
		t.Fatalf("binds %v, calls %v", f.b.binds, e.calls)
	}
	if got := f.nomination("high"); got != "" {
		t.Fatalf("still nominated to %q after binding", got)
	}
}

func TestPreemptionSparesEqualPriority(t *testing.T) {
	f, e := newPreemptFixture(t)
	f.h.AddNode(node("a", 2000))
	f.h.AddPod(runningPod("same", "a", 2000, 10, t0))
	f.h.AddPod(prioPod("p", 1000, 10))
	out := f.once()
	if out.Nominated != "" || len(e.calls) != 0 || !strings.Contains(out.Message, noLowerPriority) {
		t.Fatalf("nominated %q, victims %s, calls %v: %s", out.Nominated, victimNames(out), e.calls, out.Message)
	}
}

func TestPreemptionRespectsBudgetsWhenAnotherNodeOffersAChoice(t *testing.T) {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "keep"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	}
	f, e := newPreemptFixture(t, pdb)
	f.h.AddNode(node("a", 2000))
	f.h.AddNode(node("b", 2000))
	db := runningPod("db", "a", 2000, 1, t0) // lowest priority, but protected
	db.Labels = map[string]string{"app": "db"}
	f.h.AddPod(db)
	f.h.AddPod(runningPod("web", "b", 2000, 5, t0))
	f.h.AddPod(prioPod("high", 2000, 100))
	out := f.once()
	if out.Nominated != "b" || len(e.calls) != 1 || e.calls[0] != "high->b: web" {
		t.Fatalf("nominated %q, victims %s, calls %v: %s", out.Nominated, victimNames(out), e.calls, out.Message)
	}
}

func TestPreemptionViolatesBudgetOnlyWithoutChoice(t *testing.T) {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "keep"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
	}
	f, e := newPreemptFixture(t, pdb)
	f.h.AddNode(node("a", 2000))
	db := runningPod("db", "a", 2000, 1, t0)
	db.Labels = map[string]string{"app": "db"}
	f.h.AddPod(db)
	f.h.AddPod(prioPod("high", 2000, 100))
	if out := f.once(); out.Nominated != "a" || len(e.calls) != 1 {
		t.Fatalf("nominated %q, victims %s, calls %v: %s", out.Nominated, victimNames(out), e.calls, out.Message)
	}
}

func TestPreemptionPolicyNever(t *testing.T) {
	f, e := newPreemptFixture(t)
	f.h.AddNode(node("a", 2000))
	f.h.AddPod(runningPod("low", "a", 2000, 1, t0))
	p := prioPod("polite", 2000, 100)
	never := v1.PreemptNever
	p.Spec.PreemptionPolicy = &never
	f.h.AddPod(p)
	out := f.once()
	if out.Nominated != "" || len(e.calls) != 0 || !strings.Contains(out.Message, "preemptionPolicy=Never") {
		t.Fatalf("nominated %q, victims %s, calls %v: %s", out.Nominated, victimNames(out), e.calls, out.Message)
	}
}

func TestPreemptorTooBigForAnEmptyNodePreemptsNobody(t *testing.T) {
	f, e := newPreemptFixture(t)
	f.h.AddNode(node("a", 2000))
	f.h.AddNode(node("b", 2000))
	f.h.AddPod(runningPod("low-a", "a", 1000, 1, t0))
	f.h.AddPod(runningPod("low-b", "b", 1000, 1, t0))
	f.h.AddPod(prioPod("huge", 3000, 100))
	out := f.once()
	// NodeResourcesFit finds the request above the nodes' allocatable
	// (unresolvable), so DefaultPreemption tries no node.
	want := "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
	if out.Nominated != "" || len(e.calls) != 0 || !strings.HasSuffix(out.Message, want) {
		t.Fatalf("nominated %q, calls %v: %s; want message ending %q", out.Nominated, e.calls, out.Message, want)
	}
	if len(f.r.failures) != 1 || !strings.Contains(f.r.failures[0], want) {
		t.Fatalf("reported %v", f.r.failures)
	}
}

func TestFailingEvictionClearsTheNominationAndTheCycleGoesOn(t *testing.T) {
	f, e := newPreemptFixture(t)
	e.fail = errors.New("apiserver says no")
	f.h.AddNode(node("a", 2000))
	f.h.AddPod(runningPod("low", "a", 2000, 1, t0))
	f.h.AddPod(prioPod("high", 2000, 100))
	f.h.AddPod(prioPod("other", 10, 0))
	out := f.once()
	if out.Nominated != "a" || f.nomination("high") != "" {
		t.Fatalf("result %v, nominated %q, nomination %q: %s", out.Result, out.Nominated, f.nomination("high"), out.Message)
	}
	// The next pod is scheduled as usual... or found unschedulable: the
	// cycle is not stuck.
	if out := f.once(); out.Result == Error {
		t.Fatalf("next cycle %+v", out)
	}
}

func TestNominatedNodeGoneClearsTheNomination(t *testing.T) {
	f, e := newPreemptFixture(t)
	e.hold = true
	f.h.AddNode(node("a", 2000))
	f.h.AddPod(runningPod("low", "a", 2000, 1, t0))
	f.h.AddPod(prioPod("high", 2000, 100))
	f.once()
	if f.nomination("high") != "a" {
		t.Fatal("not nominated")
	}
	e.held[0]() // evicted; the preemptor is woken
	f.h.DeleteNode(node("a", 2000))
	f.h.AddNode(node("b", 1000))
	if err := f.q.Activate(types.NamespacedName{Namespace: "default", Name: "high"}); err != nil {
		t.Fatal(err)
	}
	out := f.once()
	if out.Result != Unschedulable || f.nomination("high") != "" {
		t.Fatalf("result %v, nominated %q, nomination %q: %s", out.Result, out.Nominated, f.nomination("high"), out.Message)
	}
}

// TestNoSecondPreemptionWhileVictimsLeave: while its victims are being
// evicted, the preemptor does not preempt again.
func TestNoSecondPreemptionWhileVictimsLeave(t *testing.T) {
	f, e := newPreemptFixture(t)
	e.hold = true
	f.h.AddNode(node("a", 2000))
	f.h.AddNode(node("b", 2000))
	f.h.AddPod(runningPod("low-a", "a", 2000, 1, t0))
	f.h.AddPod(runningPod("low-b", "b", 2000, 1, t0))
	f.h.AddPod(prioPod("high", 2000, 100))
	f.once()
	if err := f.q.Activate(types.NamespacedName{Namespace: "default", Name: "high"}); err != nil {
		t.Fatal(err)
	}
	out := f.once()
	if len(e.calls) != 1 || !strings.Contains(out.Message, "still being evicted") {
		t.Fatalf("nominated %q, victims %s, calls %v: %s", out.Nominated, victimNames(out), e.calls, out.Message)
	}
}

func TestPickCandidateCriteria(t *testing.T) {
	v := func(name string, prio int32, start time.Duration) *v1.Pod {
		return runningPod(name, "", 1, prio, t0.Add(start))
	}
	tests := []struct {
		name  string
		cands []Candidate
		want  string
	}{
		{"fewest budget violations", []Candidate{
			{Node: "n1", Victims: []*v1.Pod{v("x", 1, 0)}, PDBViolations: 1},
			{Node: "n2", Victims: []*v1.Pod{v("y", 9, 0), v("z", 9, 0)}},
		}, "n2"},
		{"lowest highest priority", []Candidate{
			{Node: "n1", Victims: []*v1.Pod{v("x", 5, 0)}},
			{Node: "n2", Victims: []*v1.Pod{v("y", 4, 0), v("z", 4, 0), v("w", 1, 0)}},
		}, "n2"},
		{"lowest sum of priorities", []Candidate{
			{Node: "n1", Victims: []*v1.Pod{v("x", 5, 0), v("y", 5, 0)}},
			{Node: "n2", Victims: []*v1.Pod{v("z", 5, 0), v("w", -3, 0)}},
		}, "n2"},
		{"negative priorities do not make more victims cheaper", []Candidate{
			{Node: "n1", Victims: []*v1.Pod{v("x", -5, 0), v("y", -5, 0)}},
			{Node: "n2", Victims: []*v1.Pod{v("z", -5, 0)}},
		}, "n2"},
		{"fewest victims", []Candidate{
			{Node: "n1", Victims: []*v1.Pod{v("x", 5, 0), v("y", 0, 0)}},
			{Node: "n2", Victims: []*v1.Pod{v("z", 5, 0)}},
		}, "n2"},
		{"latest start of the top victims", []Candidate{
			{Node: "n1", Victims: []*v1.Pod{v("x", 5, time.Minute)}},
			{Node: "n2", Victims: []*v1.Pod{v("z", 5, time.Hour)}},
		}, "n2"},
		{"first on a full tie", []Candidate{
			{Node: "n1", Victims: []*v1.Pod{v("x", 5, 0)}},
			{Node: "n2", Victims: []*v1.Pod{v("z", 5, 0)}},
		}, "n1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pickCandidate(tc.cands).Node; got != tc.want {
				t.Fatalf("picked %s, want %s", got, tc.want)
			}
			rev := slices.Clone(tc.cands)
			slices.Reverse(rev)
			if tc.name != "first on a full tie" {
				if got := pickCandidate(rev).Node; got != tc.want {
					t.Fatalf("reversed: picked %s, want %s", got, tc.want)
				}
			}
		})
	}
}

// TestNominatedPodsKeepTheirRoom: a pod nominated to a node counts as
// there for pods of its priority or lower, and not for pods above it.
func TestNominatedPodsKeepTheirRoom(t *testing.T) {
	f, _ := newPreemptFixture(t)
	f.h.AddNode(node("a", 2000))
	f.h.AddPod(prioPod("nominee", 2000, 50))
	key := types.NamespacedName{Namespace: "default", Name: "nominee"}
	if err := f.q.Nominate(key, "a"); err != nil {
		t.Fatal(err)
	}
	info, err := f.q.Pop(ended) // the nominee, in flight while others try
	if err != nil || info.Key != key {
		t.Fatalf("pop %v %v", info.Key, err)
	}
	f.h.AddPod(prioPod("lower", 2000, 10))
	if out := f.once(); out.Result != Unschedulable {
		t.Fatalf("a lower-priority pod took the nominated room: %+v", out.Node)
	}
	f.h.AddPod(prioPod("higher", 2000, 90))
	if out := f.once(); out.Result != Scheduled || out.Node != "a" {
		t.Fatalf("a higher-priority pod did not get the room: %v %s", out.Result, out.Message)
	}
}
