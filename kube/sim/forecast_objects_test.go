package sim

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/clusterevent"
)

// draState is testdata/snapshot/dra.yaml as a forecast's state: two nodes
// of two GPUs each, one held by train-0 for another hour; four pending
// pods that claim a GPU each from a template, and db-0, whose claim is
// bound to a local volume on gpu-b. With the cluster's volumes, claims and
// devices in the state, three of the four GPU pods start at once and the
// fourth when train-0 ends; without them, none of the five could start.
func draState(t *testing.T) *ForecastState {
	t.Helper()
	objs, err := readSnapshot("testdata/snapshot/dra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	now := epoch.Add(time.Hour)
	st := &ForecastState{Now: now, Nodes: objs.nodes, Objects: objs.others}
	for _, p := range objs.pods {
		p.Spec.SchedulerName = schedulerName
		if p.Spec.NodeName != "" {
			p.Annotations = map[string]string{RuntimeAnnotation: "90m"}
			st.Running = append(st.Running, RunningPod{Pod: p, Started: now.Add(-30 * time.Minute)})
			continue
		}
		st.Pending = append(st.Pending, p)
	}
	return st
}

func TestForecastKeepsVolumesAndClaims(t *testing.T) {
	st := draState(t)
	f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: 3 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	now, later := 0, 0
	for _, name := range []string{"infer-0", "infer-1", "infer-2", "infer-3"} {
		pf, err := f.Of(types.NamespacedName{Namespace: "ml", Name: name})
		switch {
		case err != nil || !pf.Starts:
			t.Errorf("%s: got %+v, want a start", name, pf)
		case pf.Wait < time.Second: // a cycle and a binding
			now++
		case pf.Wait > time.Hour && pf.Wait < time.Hour+time.Second:
			later++
		default:
			t.Errorf("%s: starts in %v, want now or when train-0 ends in 1h", name, pf.Wait)
		}
	}
	if now != 3 || later != 1 {
		t.Errorf("GPU pods: %d start now and %d in an hour, want 3 and 1 (three free GPUs)", now, later)
	}
	db, _ := f.Of(types.NamespacedName{Namespace: "ml", Name: "db-0"})
	if !db.Starts || db.Wait > time.Second || db.Node != "gpu-b" {
		t.Errorf("db-0: got %+v, want a start now on gpu-b, its volume's node", db)
	}
	// The state is read, never written: the claims and volumes keep the
	// versions they were given in.
	for _, obj := range st.Objects {
		if rv := obj.(interface{ GetResourceVersion() string }).GetResourceVersion(); rv != "" {
			t.Errorf("%T was written by the forecast: resourceVersion %q", obj, rv)
		}
	}
	if p := st.Pending[0]; len(p.Status.ResourceClaimStatuses) != 0 {
		t.Errorf("pending pod %s was written by the forecast: %v", p.Name, p.Status.ResourceClaimStatuses)
	}
}

// TestReplayStateHasObjects: a replay's state carries the cluster's
// volumes, claims and devices, and a forecast from it places the pods
// the replay itself places.
func TestReplayStateHasObjects(t *testing.T) {
	sc, r, st := draReplayState(t)
	kinds := map[string]int{}
	for _, obj := range st.Objects {
		kinds[eventResource(obj)]++
	}
	if kinds[clusterevent.PersistentVolumeClaim] != 1 || kinds[clusterevent.ResourceSlice] != 2 || kinds[clusterevent.ResourceClaim] != 5 {
		t.Fatalf("state's objects by kind: %v, want the snapshot's volume claim, two slices and the claims", kinds)
	}
	f, err := RunForecast(sc, st, ForecastOptions{Horizon: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Pending {
		pf, _ := f.Of(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		got, _ := r.Started(p.UID)
		if pf.Starts != !got.IsZero() {
			t.Errorf("%s: forecast %+v, replay started it at %v", p.Name, pf, got)
		}
	}
}

// A state's object of a kind the forecast does not take, or one listed
// twice, is refused with its kind and name, before anything runs.
func TestForecastRefusesBadObjects(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(st *ForecastState)
		want string
	}{
		{"another kind", func(st *ForecastState) { st.Objects = append(st.Objects, st.Pending[0]) },
			"the state's object *v1.Pod is not one of PersistentVolume"},
		{"listed twice", func(st *ForecastState) { st.Objects = append(st.Objects, st.Objects[len(st.Objects)-1]) },
			"the state lists *v1.ResourceClaim ml/train-0-gpu-x7k2q twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := draState(t)
			tc.edit(st)
			_, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: time.Hour})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
