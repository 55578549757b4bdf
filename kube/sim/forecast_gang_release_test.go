package sim

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/scheduler"
)

// TestForecastReleasesAGangBelowMinCount: the live scheduler releases a
// gang left below its minCount (EnableGangRelease), and so must the
// forecast. Gang g (minCount 2) has m0 (1 core) bound on n-0 and m1 (2
// cores) pending; n-1 holds a pod whose end is unknown, so m1 fits on no
// node. Once released, m0 is recreated and the gang fits whole: m1 on
// n-0, the new m0 on n-1. Without release, m1 never starts. A gang whose
// bound member no controller owns is not released.
func TestForecastReleasesAGangBelowMinCount(t *testing.T) {
	for _, tc := range []struct {
		name   string
		owned  bool
		cpu    string // m1's request
		starts bool
		// minWait is the least wait of m1 when it starts: a release
		// comes at a failed attempt after the release grace.
		minWait time.Duration
	}{
		{name: "owned member: released, gang starts whole", owned: true, cpu: "2", starts: true, minWait: scheduler.DefaultGangReleaseAfter},
		{name: "bare member: kept, m1 never starts", owned: false, cpu: "2", starts: false},
		{name: "m1 fits: the gang completes, nothing released", owned: false, cpu: "1", starts: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := epoch.Add(time.Hour)
			s := &sim{}
			m0 := inGroup(testPod("m0", "n-0", "1", "1h"), "g")
			if tc.owned {
				yes := true
				m0.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "job-uid", Controller: &yes}}
			}
			st := &ForecastState{Now: now,
				Nodes:     newCluster().makeNodes(NodeGroup{Name: "n", Count: 2, Capacity: map[string]string{"cpu": "2", "memory": "8Gi"}}),
				Running:   []RunningPod{{Pod: m0, Started: now}, {Pod: testPod("u", "n-1", "1", ""), Started: now}},
				PodGroups: []*schedulingPodGroup{s.podGroupObject("default", "g", 2, 0)},
				Pending:   []*v1.Pod{inGroup(testPod("m1", "", tc.cpu, "1h"), "g")},
			}
			base, err := NewForecastBase(st)
			if err != nil {
				t.Fatal(err)
			}
			// Without a base, then twice on one: the release's deletions
			// and arrivals must be undone on the base after each run.
			for i, b := range []*ForecastBase{nil, base, base} {
				f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: time.Hour, Base: b})
				if err != nil {
					t.Fatal(err)
				}
				pf, _ := f.Of(types.NamespacedName{Namespace: "default", Name: "m1"})
				if pf.Starts != tc.starts {
					t.Fatalf("run %d: m1: got %+v, want starts %v", i, pf, tc.starts)
				}
				if pf.Starts && (pf.Wait < tc.minWait || pf.Wait > tc.minWait+10*time.Minute) {
					t.Errorf("run %d: m1: waits %v, want %v to %v after it", i, pf.Wait, tc.minWait, 10*time.Minute)
				}
			}
		})
	}
}
