package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

// explainCounter counts a queueView's explanations (each O(queued pods)
// under the queue's lock) and its Gets (O(1)).
type explainCounter struct {
	queueView
	explains, gets int
}

func (c *explainCounter) Explain(key types.NamespacedName) (schedq.Explanation[types.NamespacedName], error) {
	c.explains++
	return c.queueView.Explain(key)
}

func (c *explainCounter) Get(key types.NamespacedName) (schedq.Info[*v1.Pod], schedq.Location, bool) {
	c.gets++
	return c.queueView.Get(key)
}

// TestExplanationsBoundPositionsPerSecond: however often a pod is asked
// about, its position in line is computed at most once a second (the
// answer says when, and how long ago), unless it left its place, when it
// is explained again at once: a pod popped, parked or deleted is never
// answered from where it was.
func TestExplanationsBoundPositionsPerSecond(t *testing.T) {
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: name} }
	for _, tc := range []struct {
		name string
		// requests asks: each request, after step moves the clock (and
		// whatever else it does), explains pod.
		requests      int
		pods          int
		step          time.Duration
		change        func(l *liveCluster, i int) // before request i, if set
		wantExplains  int
		wantLastErr   error
		wantLastWhere schedq.Location
	}{
		{name: "one pod polled 1,000 times within a second", requests: 1000, pods: 1, step: time.Millisecond / 2, wantExplains: 1, wantLastWhere: schedq.InActive},
		{name: "ten pods polled 100 times each within a second", requests: 1000, pods: 10, step: time.Millisecond / 2, wantExplains: 10, wantLastWhere: schedq.InActive},
		{name: "one pod polled for 3 seconds, 10 a second", requests: 30, pods: 1, step: 100 * time.Millisecond, wantExplains: 3, wantLastWhere: schedq.InActive},
		{name: "popped meanwhile", requests: 10, pods: 1, step: time.Millisecond,
			change: func(l *liveCluster, i int) {
				if i == 5 {
					if _, err := l.queue.Pop(context.Background()); err != nil {
						l.t.Fatal(err)
					}
				}
			}, wantExplains: 2, wantLastWhere: schedq.InFlight},
		{name: "parked meanwhile", requests: 10, pods: 1, step: time.Millisecond,
			change: func(l *liveCluster, i int) {
				if i == 5 {
					a, err := l.queue.Pop(context.Background())
					if err != nil {
						l.t.Fatal(err)
					}
					if err := l.queue.Requeue(a, schedq.Failure{RejectedBy: []string{"NodeResourcesFit"}}); err != nil {
						l.t.Fatal(err)
					}
				}
			}, wantExplains: 2, wantLastWhere: schedq.InUnschedulable},
		{name: "deleted meanwhile", requests: 10, pods: 1, step: time.Millisecond,
			change: func(l *liveCluster, i int) {
				if i == 5 {
					if err := l.queue.Delete(key("p0")); err != nil {
						l.t.Fatal(err)
					}
				}
			}, wantExplains: 6, wantLastErr: schedq.ErrNotFound}, // a pod not queued is not shared: its look-up is O(1)
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiveCluster(t, 1)
			for i := range tc.pods {
				l.pending(l.pod(fmt.Sprintf("p%d", i), "1", ""))
			}
			c := &explainCounter{queueView: l.queue}
			e := &explanations{q: c, ttl: queueSnapshotTTL, now: l.clk.Now}
			var x schedq.Explanation[types.NamespacedName]
			var err error
			for i := range tc.requests {
				if tc.change != nil {
					tc.change(l, i)
				}
				var at time.Time
				var age time.Duration
				x, at, age, err = e.explain(key(fmt.Sprintf("p%d", i%tc.pods)))
				if err == nil && (age < 0 || age >= queueSnapshotTTL || !at.Add(age).Equal(l.clk.Now())) {
					t.Fatalf("request %d: explained at %v, %v ago, at %v: want under a second ago", i, at, age, l.clk.Now())
				}
				l.clk.Step(tc.step)
			}
			if c.explains != tc.wantExplains {
				t.Errorf("%d explanations for %d requests, want %d", c.explains, tc.requests, tc.wantExplains)
			}
			if !errors.Is(err, tc.wantLastErr) || (err == nil && x.Location != tc.wantLastWhere) {
				t.Errorf("the last answer: %v in %v, want %v in %v", err, x.Location, tc.wantLastErr, tc.wantLastWhere)
			}
		})
	}
}

// TestExplainAnswerSaysWhenExplained: the pod's answer, JSON and text,
// says when its explanation was made and how long ago.
func TestExplainAnswerSaysWhenExplained(t *testing.T) {
	l := newLiveCluster(t, 1)
	l.pending(l.pod("p", "1", ""))
	srv := l.serverOf(nil)
	_, body := get(t, srv.URL+"/debug/queue/default/p")
	var a struct {
		PositionAt  time.Time      `json:"positionAt"`
		PositionAge *time.Duration `json:"positionAge"`
		Position    *struct {
			Ahead int `json:"ahead"`
		} `json:"position"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil || a.PositionAt.IsZero() || a.PositionAge == nil || a.Position == nil {
		t.Errorf("%v: %s, want the position with positionAt and positionAge", err, body)
	}
	if _, text := get(t, srv.URL+"/debug/queue/default/p?format=text"); !strings.Contains(text, "explained at:") {
		t.Errorf("no %q in\n%s", "explained at:", text)
	}
}

// TestExplanationsNotSharedOnceThePodLeftAndCameBack: a pod that left its
// place and came back to a place of the same kind within the second (its
// pod deleted and created again under its name, or parked again after a
// new attempt) is explained again, not answered with the explanation of
// the place it left (the one it had before it was deleted, the reasons of
// the attempt before).
func TestExplanationsNotSharedOnceThePodLeftAndCameBack(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "p"}
	park := func(l *liveCluster, plugin string) {
		a, err := l.queue.Pop(context.Background())
		if err != nil {
			l.t.Fatal(err)
		}
		if err := l.queue.Requeue(a, schedq.Failure{RejectedBy: []string{plugin}}); err != nil {
			l.t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		before func(l *liveCluster) // before the first request
		change func(l *liveCluster) // between the two, 10 ms apart
		check  func(t *testing.T, l *liveCluster, x schedq.Explanation[types.NamespacedName])
	}{
		{name: "deleted and created again", change: func(l *liveCluster) { l.recreate(key, "p") }, check: func(t *testing.T, l *liveCluster, x schedq.Explanation[types.NamespacedName]) {
			if !x.Timestamp.Equal(l.clk.Now()) {
				t.Errorf("the answer's pod was added at %v, want the new pod's %v", x.Timestamp, l.clk.Now())
			}
		}},
		{name: "parked again after another attempt", before: func(l *liveCluster) { park(l, "NodeResourcesFit") },
			change: func(l *liveCluster) {
				if err := l.queue.Activate(key); err != nil {
					l.t.Fatal(err)
				}
				park(l, "NodeAffinity")
			}, check: func(t *testing.T, l *liveCluster, x schedq.Explanation[types.NamespacedName]) {
				if x.Location != schedq.InUnschedulable || x.Attempts != 2 || !slices.Equal(x.RejectedBy, []string{"NodeAffinity"}) {
					t.Errorf("%v after %d attempts, rejected by %v: want the second attempt's parking, by NodeAffinity", x.Location, x.Attempts, x.RejectedBy)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiveCluster(t, 1)
			l.pending(l.pod("p", "1", ""))
			if tc.before != nil {
				tc.before(l)
			}
			e := &explanations{q: l.queue, ttl: queueSnapshotTTL, now: l.clk.Now}
			if _, _, _, err := e.explain(key); err != nil {
				t.Fatal(err)
			}
			l.clk.Step(10 * time.Millisecond)
			tc.change(l)
			x, at, _, err := e.explain(key)
			if err != nil {
				t.Fatal(err)
			}
			if !at.Equal(l.clk.Now()) {
				t.Errorf("explained at %v, want now (%v): the pod came back since", at, l.clk.Now())
			}
			tc.check(t, l, x)
		})
	}
}
