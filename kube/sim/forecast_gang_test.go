package sim

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestForecastGangStartsWhole: a gang of two 4-core pods on two full
// 4-core nodes, freed at 10 and 30 minutes, starts whole at 30 minutes;
// a lone pod behind it takes nothing first.
func TestForecastGangStartsWhole(t *testing.T) {
	now := epoch.Add(time.Hour)
	s := &sim{}
	pg := s.podGroupObject("default", "g", 2, 0)
	st := &ForecastState{Now: now,
		Nodes: newCluster().makeNodes(NodeGroup{Name: "n", Count: 2, Capacity: map[string]string{"cpu": "4", "memory": "8Gi"}}),
		Running: []RunningPod{
			{Pod: testPod("a", "n-0", "4", "10m"), Started: now},
			{Pod: testPod("b", "n-1", "4", "30m"), Started: now},
		},
		PodGroups: []*schedulingPodGroup{pg},
	}
	name := "g"
	for _, n := range []string{"m0", "m1"} {
		p := testPod(n, "", "4", "1h")
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &name}
		st.Pending = append(st.Pending, p)
	}
	f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"m0", "m1"} {
		pf, _ := f.Of(types.NamespacedName{Namespace: "default", Name: n})
		if !pf.Starts || pf.Gang != "default/g" || pf.Wait < 30*time.Minute || pf.Wait > 30*time.Minute+time.Second {
			t.Errorf("%s: got %+v, want the gang's start at about 30m", n, pf)
		}
	}
}

// TestForecastGangCountsNoMemberAsUnknown: the members of a gang that
// runs until unknown start as one, each behind no unknown end of its
// fellows, which bind with it.
func TestForecastGangCountsNoMemberAsUnknown(t *testing.T) {
	now := epoch.Add(time.Hour)
	s := &sim{}
	st := &ForecastState{Now: now,
		Nodes:     newCluster().makeNodes(NodeGroup{Name: "n", Count: 3, Capacity: map[string]string{"cpu": "4", "memory": "8Gi"}}),
		PodGroups: []*schedulingPodGroup{s.podGroupObject("default", "g", 3, 0)},
	}
	name := "g"
	for _, n := range []string{"m0", "m1", "m2"} {
		p := testPod(n, "", "4", "")
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &name}
		st.Pending = append(st.Pending, p)
	}
	f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"m0", "m1", "m2"} {
		if pf, _ := f.Of(types.NamespacedName{Namespace: "default", Name: n}); !pf.Starts || pf.Unknown != 0 {
			t.Errorf("%s: got %+v, want a start behind no unknown end", n, pf)
		}
	}
}
