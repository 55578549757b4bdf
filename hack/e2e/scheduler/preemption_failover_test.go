package scheduler

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// 14. Kill the leader mid-preemption: three replicas; 20 nodes full of
// low-priority pods; 60 high-priority pods arrive, and the leader is
// SIGKILLed once it has started evicting. A standby takes over the
// nominations and the evictions left; no replica panics or exits, every
// preemptor is bound, and no node is over-committed.
func TestKillLeaderMidPreemption(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	name := "schedq-kill-preempt"
	lease := name
	priorityClass(t, c, "e2e-kill-low", 0)
	priorityClass(t, c, "e2e-kill-high", 1000)
	nodes := makeNodes(t, c, name, 20, nodeSpec{cpu: "4", memory: "16Gi"})
	live := map[string]*replica{}
	// A low request rate stretches the preemptions over seconds, so that
	// the kill lands among them.
	slow := []string{"--kube-api-qps=20", "--kube-api-burst=20"}
	for _, id := range []string{"a", "b", "c"} {
		live[id] = startReplica(t, id, name, lease, slow...)
	}
	waitFor(t, time.Minute, "a leader", func(context.Context) (bool, error) { return live[holder(t, c, lease)] != nil, nil })
	var victims []string
	for _, n := range nodes {
		victims = append(victims, victimPods(t, c, ns, "low-"+n, n, 4, podSpec{scheduler: name, cpu: "1", memory: "64Mi", priorityClass: "e2e-kill-low"})...)
	}
	waitBound(t, c, ns, victims, 2*time.Minute)
	high := makePods(t, c, ns, "high", 60, podSpec{scheduler: name, cpu: "1", memory: "64Mi", priorityClass: "e2e-kill-high"})
	waitFor(t, time.Minute, "the leader to start evicting", func(context.Context) (bool, error) {
		b := bound(t, c, ns)
		n := 0
		for _, v := range victims {
			if _, ok := b[v]; !ok {
				n++
			}
		}
		return n >= 5, nil
	})
	highBound := 0
	atKill := bound(t, c, ns)
	for _, h := range high {
		if atKill[h] != "" {
			highBound++
		}
	}
	leader := holder(t, c, lease)
	if err := live[leader].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-live[leader].exited
	delete(live, leader)
	live[leader+"2"] = startReplica(t, leader+"2", name, lease, slow...)
	took := waitBound(t, c, ns, high, 2*time.Minute)
	t.Logf("leader %s killed with %d of 60 preemptors bound; every preemptor bound %v later",
		leader, highBound, took.Round(time.Millisecond))
	evicted := 0
	for _, v := range victims {
		if gone(t, c, ns, v) {
			evicted++
		}
	}
	t.Logf("%d victims evicted for 60 one-cpu preemptors", evicted)
	for id, r := range live {
		select {
		case <-r.exited:
			t.Errorf("replica %s exited: %v", id, r.err)
		default:
		}
		b, err := os.ReadFile(r.log)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "panic") {
			t.Errorf("replica %s panicked:\n%s", id, tail(b, 40))
		}
	}
	checkFits(t, c, ns)
}
