package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// TestWakeBudgetRoomOfANode: the room of a new node is its free
// allocatable, less what it promised to woken pods, across events; a pod
// that fails gives its promise back, one placed on the node does not.
func TestWakeBudgetRoomOfANode(t *testing.T) {
	c := NewCache()
	budget := WakeBudget(c)
	n := node("n", 3000)
	c.AddNode(n)
	room, ok := budget(clusterevent.NodeAdd, nil, n)
	if !ok {
		t.Fatal("no room for a node add")
	}
	pods := []*v1.Pod{pod("a", 1000), pod("b", 1000), pod("c", 1000), pod("d", 1000)}
	for i, p := range pods {
		if got, want := room.Take(p), i < 3; got != want {
			t.Fatalf("Take(%s) = %v, want %v", p.Name, got, want)
		}
	}
	// A second event on the same node sees the promises of the first.
	again, _ := budget(clusterevent.New(clusterevent.Node, clusterevent.UpdateNodeAllocatable), n, n)
	if again.Take(pods[3]) {
		t.Fatal("a second event promised room already promised")
	}
	if !room.Return(pods[0]) { // a failed: placed nowhere
		t.Fatal("a failed pod's room did not come back")
	}
	if !room.Take(pods[3]) {
		t.Fatal("the room a failed pod gave back was not offered")
	}
	pi, _ := framework.NewPodInfo(pods[1])
	if err := c.Assume(pi, "n", nil); err != nil {
		t.Fatal(err)
	}
	if room.Return(pods[1]) { // b placed on n: its room is used
		t.Fatal("a placed pod's room came back")
	}
	if room.Take(pod("e", 1000)) {
		t.Fatal("room counted twice: b's requests and b's promise")
	}
}

func TestWakeBudgetEvents(t *testing.T) {
	bound := pod("p", 1000)
	bound.Spec.NodeName = "n"
	tests := []struct {
		name     string
		ev       schedq.Event
		old, new any
		want     bool
	}{
		{"node add", clusterevent.NodeAdd, nil, node("n", 1000), true},
		{"allocatable", clusterevent.New(clusterevent.Node, clusterevent.UpdateNodeAllocatable), node("n", 1000), node("n", 2000), true},
		{"node taint", clusterevent.New(clusterevent.Node, clusterevent.UpdateNodeTaint), node("n", 1000), node("n", 1000), false},
		{"assigned pod delete", clusterevent.AssignedPodDelete, bound, nil, true},
		{"assigned pod scale-down", clusterevent.New(clusterevent.AssignedPod, clusterevent.UpdatePodScaleDown), bound, bound, true},
		{"assigned pod add", clusterevent.AssignedPodAdd, nil, bound, false},
		// A general update says nothing of room: kube-scheduler's general
		// Update reaches only the plugins that asked for every update.
		{"assigned pod general update", clusterevent.New(clusterevent.AssignedPod, clusterevent.Update), bound, bound, false},
		{"node general update", clusterevent.New(clusterevent.Node, clusterevent.Update), node("n", 1000), node("n", 1000), false},
	}
	budget := WakeBudget(NewCache())
	for _, tc := range tests {
		if _, ok := budget(tc.ev, tc.old, tc.new); ok != tc.want {
			t.Errorf("%s: budget %v, want %v", tc.name, ok, tc.want)
		}
	}
}
