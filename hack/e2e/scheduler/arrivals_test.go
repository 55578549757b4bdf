package scheduler

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// 13. Nodes arrive under load, with the wake budget on (the default): 600
// pending 1-cpu pods, then 4-cpu nodes added 5 every 100 ms. The cycle
// reads nominations, node events take room under the queue's lock and
// the node informer writes the cache all at once: every pod is bound,
// none over-commits a node, and the health and metrics endpoints keep
// answering throughout.
func TestNodesArriveUnderLoad(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	s := startScheduler(t, "schedq-arrivals")
	const pods, perRound, cpu = 600, 5, 4
	names := makePods(t, c, ns, "p", pods, podSpec{scheduler: s.name, cpu: "1", memory: "64Mi"})
	rounds := pods/(perRound*cpu) + 2
	var nodes []string
	t.Cleanup(func() {
		for _, n := range nodes {
			c.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for r := range rounds {
		<-tick.C
		for i := range perRound {
			name := fmt.Sprintf("arrive-%d-%d", r, i)
			n := newNode(name, nodeSpec{cpu: fmt.Sprint(cpu), memory: "16Gi", labels: map[string]string{"e2e-test": "arrive"}})
			if _, err := c.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, name)
		}
		probe(t, s.addr, "/healthz")
	}
	took := waitBound(t, c, ns, names, 45*time.Second)
	t.Logf("%d pods bound %v after the last node", pods, took)
	probe(t, s.addr, "/healthz")
	probe(t, s.addr, "/metrics")
	checkFits(t, c, ns)
}

// probe fails the test unless GET path answers 200 within 5 seconds.
func probe(t *testing.T, addr, path string) {
	t.Helper()
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
}
