package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// 11. Chaos: three replicas schedule a stream of pods while the leader is
// killed (SIGKILL) three times, each time as it binds; a new process takes
// the killed one's place as a standby. Every pod is bound (none lost),
// none twice (the audit log counts successful bindings per pod), and no
// node holds more than it can (the pods are sized to fill 90% of the
// nodes, so an over-commit shows).
func TestChaosKillLeader(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	name := "schedq-chaos"
	lease := name
	makeNodes(t, c, name, 30, nodeSpec{cpu: "4", memory: "16Gi"})
	gen := map[string]int{}
	live := map[string]*replica{} // by identity
	start := func(slot string) {
		gen[slot]++
		id := fmt.Sprintf("%s%d", slot, gen[slot])
		live[id] = startReplica(t, id, name, lease, "--kube-api-qps=50", "--kube-api-burst=50")
	}
	for _, slot := range []string{"a", "b", "c"} {
		start(slot)
	}
	waitFor(t, time.Minute, "a leader", func(context.Context) (bool, error) { return live[holder(t, c, lease)] != nil, nil })

	// The load: 1080 pods of 100m (108 of the nodes' 120 cpus), created
	// at about 100/s, while the leader is being killed.
	const total = 1080
	var names []string
	for i := range total {
		names = append(names, fmt.Sprintf("p-%d", i))
	}
	var creating sync.WaitGroup
	creating.Add(1)
	createErr := make(chan error, 1)
	go func() {
		defer creating.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for _, n := range names {
			<-tick.C
			if _, err := c.CoreV1().Pods(ns).Create(context.Background(), newPod(ns, n, podSpec{scheduler: name, cpu: "100m", memory: "64Mi"}), metav1.CreateOptions{}); err != nil {
				createErr <- err
				return
			}
		}
	}()

	var takeovers []string
	lastBound := 0
	for kill := 1; kill <= 3; kill++ {
		var leader string
		waitFor(t, time.Minute, fmt.Sprintf("a leader binding before kill %d", kill), func(context.Context) (bool, error) {
			leader = holder(t, c, lease)
			return live[leader] != nil && boundCount(bound(t, c, ns)) >= lastBound+60, nil
		})
		killed := time.Now()
		if err := live[leader].cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-live[leader].exited
		delete(live, leader)
		start(leader[:1])
		var next string
		waitFor(t, time.Minute, "another replica to take the lease", func(context.Context) (bool, error) {
			next = holder(t, c, lease)
			return next != leader && live[next] != nil, nil
		})
		takeovers = append(takeovers, fmt.Sprintf("%s→%s %v", leader, next, time.Since(killed).Round(time.Millisecond)))
		lastBound = boundCount(bound(t, c, ns))
	}
	creating.Wait()
	select {
	case err := <-createErr:
		t.Fatal(err)
	default:
	}
	took := waitBound(t, c, ns, names, 3*time.Minute)
	checkFits(t, c, ns)
	events := audit(t, cl)
	if d := doubleBinds(events, ns); len(d) > 0 {
		t.Errorf("pods bound more than once: %v", d)
	}
	by := map[string]int{}
	for _, e := range bindings(events, ns) {
		if e.ok() {
			by[e.User.Username]++
		}
	}
	figure(t, "%d pods, leader SIGKILLed 3 times (takeovers %s); all bound, none twice, no node over-committed; %v after the last takeover; successful bindings by user %v",
		total, strings.Join(takeovers, ", "), took.Round(time.Millisecond), by)
}
