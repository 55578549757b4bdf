package sim

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
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
	for _, n := range []string{"m0", "m1"} {
		st.Pending = append(st.Pending, inGroup(testPod(n, "", "4", "1h"), "g"))
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
	for _, n := range []string{"m0", "m1", "m2"} {
		st.Pending = append(st.Pending, inGroup(testPod(n, "", "4", ""), "g"))
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

// TestForecastMemberBeyondMinCountStartsOnItsOwn: the gang starts once,
// when its minCount-th member is bound, and its members bound by then get
// that start; a member beyond minCount that binds later gets its own
// start, and one that never binds within the horizon gets none. Before,
// every member got the gang's start.
func TestForecastMemberBeyondMinCountStartsOnItsOwn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		minCount int32
		free     int // nodes free at the copy; one more frees at 30m, none else within the horizon
		// want is each member's wait; -1: no start within the horizon.
		want map[string]time.Duration
	}{
		{name: "minCount 1", minCount: 1, free: 1,
			want: map[string]time.Duration{"m0": 0, "m1": 30 * time.Minute, "m2": -1}},
		{name: "minCount 2", minCount: 2, free: 2,
			want: map[string]time.Duration{"m0": 0, "m1": 0, "m2": 30 * time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sim{}
			checkWaits(t, gangForecast(t, s.podGroupObject("default", "g", tc.minCount, 0), tc.free), tc.want)
		})
	}
}

// inGroup makes p a member of the PodGroup group (its
// spec.schedulingGroup) and returns it.
func inGroup(p *v1.Pod, group string) *v1.Pod {
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	return p
}

// TestForecastPodGroupPolicies: a live cluster's PodGroups need not be
// gangs. A basic one (spec.schedulingPolicy.basic, no gang) groups pods
// that each start on their own; one with no policy is refused by the
// queue, and its members wait for a valid one, as they do live. Before,
// the forecast read the gang's minCount of every PodGroup, and a basic
// one failed the whole forecast.
func TestForecastPodGroupPolicies(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy func(*schedulingPodGroup)
		// want is each member's wait; -1: no start within the horizon.
		want map[string]time.Duration
	}{
		{name: "basic", policy: func(pg *schedulingPodGroup) {
			pg.Spec.SchedulingPolicy.Gang = nil
			pg.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
		}, want: map[string]time.Duration{"m0": 0, "m1": 30 * time.Minute, "m2": -1}},
		{name: "no policy", policy: func(pg *schedulingPodGroup) { pg.Spec.SchedulingPolicy.Gang = nil },
			want: map[string]time.Duration{"m0": -1, "m1": -1, "m2": -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := (&sim{}).podGroupObject("default", "g", 1, 0)
			tc.policy(pg)
			checkWaits(t, gangForecast(t, pg, 1), tc.want)
		})
	}
}

// checkWaits checks each pod of want (in namespace default) against f:
// a wait of -1 wants no start within the horizon, else a start after
// about that wait.
func checkWaits(t *testing.T, f *Forecast, want map[string]time.Duration) {
	t.Helper()
	for n, w := range want {
		pf, _ := f.Of(types.NamespacedName{Namespace: "default", Name: n})
		switch {
		case w < 0 && pf.Starts:
			t.Errorf("%s: starts after %v, want no start within the horizon", n, pf.Wait)
		case w >= 0 && (!pf.Starts || pf.Wait < w || pf.Wait > w+time.Second):
			t.Errorf("%s: got %+v, want a start after about %v", n, pf, w)
		}
	}
}

// gangForecast forecasts three pending 4-core members m0, m1 and m2 of
// PodGroup pg (named g) on free idle 4-core nodes and two full ones, one
// freed at 30 minutes and one after the 2-hour horizon.
func gangForecast(t *testing.T, pg *schedulingPodGroup, free int) *Forecast {
	t.Helper()
	now := epoch.Add(time.Hour)
	st := &ForecastState{Now: now,
		Nodes:     newCluster().makeNodes(NodeGroup{Name: "n", Count: free + 2, Capacity: map[string]string{"cpu": "4", "memory": "8Gi"}}),
		PodGroups: []*schedulingPodGroup{pg},
		Running: []RunningPod{
			{Pod: testPod("soon", fmt.Sprintf("n-%d", free), "4", "30m"), Started: now},
			{Pod: testPod("late", fmt.Sprintf("n-%d", free+1), "4", "5h"), Started: now},
		},
	}
	for _, n := range []string{"m0", "m1", "m2"} {
		st.Pending = append(st.Pending, inGroup(testPod(n, "", "4", "5h"), "g"))
	}
	f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return f
}
