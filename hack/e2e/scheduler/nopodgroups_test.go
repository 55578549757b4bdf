package scheduler

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedq/schedq/hack/e2e/cluster"
	"github.com/schedq/schedq/kube/app"
)

// lockedLog is a log sink safe for the scheduler's goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStartsWithoutPodGroups: against an API server that does not serve
// PodGroups (GenericWorkload is off by default), schedq starts, says so in
// its log, and schedules lone pods.
func TestStartsWithoutPodGroups(t *testing.T) {
	c := client(t)
	if list, err := c.Discovery().ServerResourcesForGroupVersion("scheduling.k8s.io/v1beta1"); err == nil {
		for _, r := range list.APIResources {
			if r.Name == "podgroups" {
				cluster.Skip(t, "this API server serves PodGroups")
			}
		}
	}
	ns := namespace(t, c)
	logs := &lockedLog{}
	runInProcess(t, app.Options{SchedulerName: "schedq-no-podgroups", Logger: slog.New(slog.NewTextHandler(logs, nil))})
	makeNodes(t, c, "no-podgroups", 1, nodeSpec{cpu: "4", memory: "8Gi"})
	names := makePods(t, c, ns, "lone", 3, podSpec{scheduler: "schedq-no-podgroups", cpu: "100m", memory: "64Mi"})
	waitBound(t, c, ns, names, time.Minute)
	if !strings.Contains(logs.String(), "does not serve PodGroups") {
		t.Fatalf("no log line about the missing PodGroup API:\n%s", logs.String())
	}
}
