package app

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkWholeScheduler's window ends at the last binding: what the
// scheduler does after it (its shutdown) is in neither the wall time nor
// the CPU time.
func TestBenchClusterSpanEndsAtLastBinding(t *testing.T) {
	for _, tc := range []struct {
		name     string
		gaps     []time.Duration // before each binding
		shutdown time.Duration   // after the last
		want     time.Duration
	}{
		{"a quick shutdown", []time.Duration{time.Second, 2 * time.Second}, time.Millisecond, 3 * time.Second},
		{"a slow shutdown", []time.Duration{time.Second, 2 * time.Second}, time.Minute, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newBenchCluster(benchWorkload{nodes: 1, pods: len(tc.gaps)})
				start := time.Now()
				cpu0, err := cpuTime()
				if err != nil {
					t.Fatal(err)
				}
				for i, gap := range tc.gaps {
					time.Sleep(gap)
					bd := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod-" + string(rune('0'+i))}, Target: v1.ObjectReference{Kind: "Node", Name: "node-0"}}
					if err := c.client.CoreV1().Pods("default").Bind(context.Background(), bd, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				<-c.done
				time.Sleep(tc.shutdown)
				wall, cpu := c.span(start, cpu0)
				if wall != tc.want {
					t.Errorf("wall = %v, want %v (to the last binding)", wall, tc.want)
				}
				if cpu < 0 {
					t.Errorf("cpu = %v, want the CPU time to the last binding", cpu)
				}
			})
		})
	}
}
