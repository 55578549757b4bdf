package main

import (
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The gated workload's time to bind runs from the gate's removal: a pod
// bound while the update that lifts its gate is still answering has
// waited the time since the update was sent, not 0 (a reference taken
// once the update returned comes after the binding).
func TestGatedTimeToBindFromGateRemoval(t *testing.T) {
	for _, tc := range []struct {
		name               string
		toServer, toClient time.Duration // the update's two halves
	}{
		{"a quick update", time.Millisecond, time.Millisecond},
		{"a slow answer", 2 * time.Millisecond, 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var gated workload
				for _, w := range workloads(0.005) {
					if w.name == "gated" {
						gated = w
					}
				}
				client := fake.NewSimpleClientset()
				e := &env{client: client, ns: "gated", scheduler: "schedq"}
				if err := e.setup(); err != nil {
					t.Fatal(err)
				}
				// The scheduler binds each pod the moment its update
				// reaches the server.
				client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
					time.Sleep(tc.toServer)
					e.mu.Lock()
					e.boundAt[a.(k8stesting.UpdateAction).GetObject().(*v1.Pod).Name] = time.Now()
					e.mu.Unlock()
					time.Sleep(tc.toClient)
					return false, nil, nil
				})
				if err := gated.prepare(e); err != nil {
					t.Fatal(err)
				}
				if err := gated.drive(e, time.Now()); err != nil {
					t.Fatal(err)
				}
				p50, p99 := e.percentiles()
				if p50 != tc.toServer || p99 != tc.toServer {
					t.Errorf("time to bind p50 %v, p99 %v; want %v (from the update's sending)", p50, p99, tc.toServer)
				}
			})
		})
	}
}
