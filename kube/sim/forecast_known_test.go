package sim

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestReplayKnownOnlyForItsOwnPods: the runtimes a replay knows (a
// trace's, a scenario group's lifetimes) are those of the pods it made,
// matched by UID: a pod added by a what-if, named as a trace pod or a
// scenario pod that has finished or has not arrived yet, gets none,
// while the state's own pods keep theirs.
func TestReplayKnownOnlyForItsOwnPods(t *testing.T) {
	const scenario = "name: k\nseed: 1\nduration: 1h\nnodes: [{name: n, count: 1, capacity: {cpu: \"4\", memory: 8Gi}}]\n" +
		"pods: [{name: job, count: 4, requests: {cpu: \"1\"}, arrival: {at: 0s, rate: 0.01}, lifetime: {mean: 1m}}]\n"
	trace := func() *Scenario {
		return &Scenario{Name: "t", Seed: 1, Trace: &TraceSpec{Format: TraceAlibabaGPU, Dir: "testdata/alibaba"}}
	}
	group := func() *Scenario {
		sc, err := Parse([]byte(scenario))
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	added := func(name string, labels map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("whatif-1"), Labels: labels}}
	}
	job := map[string]string{"group": "job"}
	for _, tc := range []struct {
		name  string
		sc    func() *Scenario
		at    time.Duration
		pod   string        // the state's pod of this name, if added is nil
		added *v1.Pod       // a pod a what-if adds
		want  time.Duration // 0: none known
	}{
		{name: "a trace pod of the state", sc: trace, at: 25 * time.Second, pod: "pod-cpu", want: 100 * time.Second},
		{name: "named as a trace pod not yet arrived", sc: trace, at: 25 * time.Second, added: added("pod-eight", nil)},
		{name: "named as a trace pod finished", sc: trace, at: 150 * time.Second, added: added("pod-cpu", nil)},
		{name: "a scenario pod of the state", sc: group, at: 150 * time.Second, pod: "job-1", want: time.Minute},
		{name: "named as a scenario pod not yet arrived", sc: group, at: 150 * time.Second, added: added("job-3", job)},
		{name: "named as a scenario pod finished", sc: group, at: 150 * time.Second, added: added("job-0", job)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp, err := NewReplay(tc.sc())
			if err != nil {
				t.Fatal(err)
			}
			if err := rp.Until(tc.at); err != nil {
				t.Fatal(err)
			}
			p := tc.added
			if p == nil {
				st := rp.State()
				for _, rp := range st.Running {
					if rp.Pod.Name == tc.pod {
						p = rp.Pod
					}
				}
				for _, q := range st.Pending {
					if q.Name == tc.pod {
						p = q
					}
				}
				if p == nil {
					t.Fatalf("no pod %s in the state at %v", tc.pod, tc.at)
				}
			}
			d, ok := rp.Known(p)
			if ok != (tc.want > 0) || d != tc.want {
				t.Fatalf("Known(%s) = %v, %v; want %v", p.Name, d, ok, tc.want)
			}
		})
	}
}
