package sim

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestReplayStateWindowIsWhatWasSeen: early in a replay the recent
// arrivals span only the time replayed, not Replay.Window's hour, so a
// forecast that assumes arrivals repeats them at the rate seen: 20 pods
// a second from 2 s on are 20 a second, not 1,200 an hour spread over an
// hour's last minutes.
func TestReplayStateWindowIsWhatWasSeen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		at     time.Duration
		window time.Duration
	}{
		{name: "before the hour", at: 3 * time.Second, window: 3 * time.Second},
		{name: "at the start", at: 0, window: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse([]byte(smallArrival))
			if err != nil {
				t.Fatal(err)
			}
			rp, err := NewReplay(sc)
			if err != nil {
				t.Fatal(err)
			}
			if err := rp.Until(tc.at); err != nil {
				t.Fatal(err)
			}
			st := rp.State()
			if st.Window != tc.window {
				t.Fatalf("window %v, want %v", st.Window, tc.window)
			}
			f, err := RunForecast(sc, st, ForecastOptions{Horizon: time.Minute, Arrivals: true})
			if err != nil {
				t.Fatal(err)
			}
			if tc.window > 0 && !strings.Contains(f.Arrivals, "in the last 3s") {
				t.Errorf("arrivals %q", f.Arrivals)
			}
		})
	}
}

// TestReplayEndsAtTheScenariosEnd: End names the replay's last instant
// and what sets it, and Until past it stops there, as its comment says,
// instead of running the scenario on past its duration (a state the
// scenario does not describe, stamped with the time asked).
func TestReplayEndsAtTheScenariosEnd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		yaml    string
		until   time.Duration
		end     time.Duration
		because string
	}{
		{name: "its duration", yaml: smallArrival + "duration: 90s\n", until: 2 * time.Minute, end: 90 * time.Second, because: "the scenario's duration"},
		{name: "the default", yaml: smallArrival, until: time.Hour, end: 15 * time.Minute, because: "the default duration"},
		{name: "before the end", yaml: smallArrival + "duration: 90s\n", until: 80 * time.Second, end: 90 * time.Second, because: "the scenario's duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			rp, err := NewReplay(sc)
			if err != nil {
				t.Fatal(err)
			}
			end, why := rp.End()
			if end != tc.end || !strings.Contains(why, tc.because) {
				t.Errorf("End: %v, %q; want %v, %q", end, why, tc.end, tc.because)
			}
			if err := rp.Until(tc.until); err != nil {
				t.Fatal(err)
			}
			if got, want := rp.State().Now.Sub(rp.Epoch()), min(tc.until, tc.end); got != want {
				t.Errorf("state at %v after Until(%v), want %v", got, tc.until, want)
			}
		})
	}
}

// staleNominationSnapshot: node-a is full of r, of priority 100; p, of
// priority 0, is pending with a nomination to node-a in its status,
// which its first attempt drops (preemption cannot help it: r is of
// higher priority), as the queue drops it without clearing the status.
const staleNominationSnapshot = `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a}}, status: {allocatable: {cpu: "4", pods: "110"}, capacity: {cpu: "4", pods: "110"}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: r, namespace: default}
  spec: {nodeName: node-a, priority: 100, containers: [{name: c, image: x, resources: {requests: {cpu: "4"}}}]}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: default}
  spec: {priority: 0, containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]}
  status: {phase: Pending, nominatedNodeName: node-a}
`

// TestReplayStateCarriesTheQueuesNominations: a replay's state gives a
// pending pod the queue's nomination, none if the queue dropped it, not
// the node its status still names: the forecast's handlers would take
// that over and reserve its room again.
func TestReplayStateCarriesTheQueuesNominations(t *testing.T) {
	rp, err := NewReplay(preemptingSnapshot(t, staleNominationSnapshot))
	if err != nil {
		t.Fatal(err)
	}
	if err := rp.Until(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "default", Name: "p"}
	if node, ok := rp.s.core.Nomination(key); ok {
		t.Fatalf("the replay's queue nominates p to %s; the test needs it dropped", node)
	}
	st := rp.State()
	if len(st.Pending) != 1 {
		t.Fatalf("%d pending, want p", len(st.Pending))
	}
	if node := st.Pending[0].Status.NominatedNodeName; node != "" {
		t.Errorf("p nominated to %q; want no nomination, as the queue holds it", node)
	}
}
