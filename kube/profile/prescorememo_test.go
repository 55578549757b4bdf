package profile

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/utils/ptr"
)

// The pods of the memo's tests, each a change of the one before that
// PodRequests reads, or not.
var (
	asksCPU = func(cpu string) func(*v1.Pod) {
		return func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpu) }
	}
	withSidecar = func(policy *v1.ContainerRestartPolicy) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", RestartPolicy: policy,
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}}}
		}
	}
	bestEffort = func(p *v1.Pod) { p.Spec.Containers[0].Resources = v1.ResourceRequirements{} }
	resized    = func(p *v1.Pod) {
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", Resources: &v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")}}}}
	}
	withOverhead = func(p *v1.Pod) { p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")} }
	// resizeFound sets the pod's PodResizePending condition with reason
	// (Infeasible: PodRequests then counts the containers without a
	// status as asking nothing, whatever their spec says).
	resizeFound = func(reason string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: reason}}
		}
	}
)

// memoSequence is a run of pods, each with whether the memo answers it
// from the pod before (kept) rather than calling upstream's PreScore.
var memoSequence = []struct {
	name string
	pod  *v1.Pod
	kept bool
}{
	{"the first pod", pod("a", "", asksCPU("1")), false},
	{"another pod asking the same", pod("b", "", asksCPU("1"), func(p *v1.Pod) { p.Labels["other"] = "label" }), true},
	{"more CPU", pod("c", "", asksCPU("2")), false},
	{"the same CPU written otherwise (one encoding)", pod("d", "", asksCPU("2000m")), true},
	{"a sidecar", pod("e", "", asksCPU("2000m"), withSidecar(ptr.To(v1.ContainerRestartPolicyAlways))), false},
	{"the same sidecar", pod("f", "", asksCPU("2000m"), withSidecar(ptr.To(v1.ContainerRestartPolicyAlways))), true},
	{"the same container as a plain init container", pod("g", "", asksCPU("2000m"), withSidecar(nil)), false},
	{"a best-effort pod", pod("h", "", bestEffort), false},
	{"another best-effort pod", pod("i", "", bestEffort), true},
	{"a pod being resized", pod("j", "", bestEffort, resized), false},
	{"the same pod being resized", pod("k", "", bestEffort, resized), false},
	{"an overhead", pod("l", "", asksCPU("1"), withOverhead), false},
	{"the same overhead", pod("m", "", asksCPU("1"), withOverhead), false},
	{"back to the first pod's requests", pod("n", "", asksCPU("1")), false},
	{"and again", pod("o", "", asksCPU("1")), true},
	{"the same spec with a resize found infeasible", pod("p", "", asksCPU("1"), resizeFound(v1.PodReasonInfeasible)), false},
	{"the same spec with a resize deferred", pod("q", "", asksCPU("1"), resizeFound(v1.PodReasonDeferred)), false},
}

// TestPreScoreMemoKeeps: the memo calls the plugin's PreScore only for a
// pod whose requests differ from the last pod's, or that it cannot key
// (statuses, overhead), and gives the others the state or the Skip the
// plugin gave the last pod.
func TestPreScoreMemoKeeps(t *testing.T) {
	const key fwk.StateKey = "PreScoreTest"
	m := newPreScoreMemo(key, []config.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}})
	calls := 0
	inner := func(_ context.Context, cs fwk.CycleState, p *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
		calls++
		if len(p.Spec.Containers[0].Resources.Requests) == 0 && len(p.Status.ContainerStatuses) == 0 && len(p.Status.Conditions) == 0 {
			return fwk.NewStatus(fwk.Skip)
		}
		cs.Write(key, &stateOf{p.Name})
		return nil
	}
	from := map[string]string{} // the pod whose state each pod got
	last := ""
	for _, tc := range memoSequence {
		t.Run(tc.name, func(t *testing.T) {
			before := calls
			cs := framework.NewCycleState()
			st := m.preScore(context.Background(), cs, tc.pod, nil, inner)
			if kept := calls == before; kept != tc.kept {
				t.Fatalf("kept = %v, want %v", kept, tc.kept)
			}
			d, err := cs.Read(key)
			switch {
			case st.IsSkip():
				if err == nil {
					t.Fatalf("a Skip with a state written (%v)", d)
				}
				from[tc.pod.Name] = "skip"
			case st.IsSuccess() && err == nil:
				from[tc.pod.Name] = d.(*stateOf).pod
			default:
				t.Fatalf("status %v, state %v, %v", st, d, err)
			}
			want := tc.pod.Name
			if tc.kept {
				want = from[last]
			} else if st.IsSkip() {
				want = "skip"
			}
			if from[tc.pod.Name] != want {
				t.Fatalf("got the state of %q, want %q's", from[tc.pod.Name], want)
			}
			last = tc.pod.Name
		})
	}
}

type stateOf struct{ pod string }

func (s *stateOf) Clone() fwk.StateData { return s }

// A plugin scoring another resource than CPU, memory and ephemeral
// storage (whose state can hold DRA's) keeps nothing.
func TestPreScoreMemoOffForOtherResources(t *testing.T) {
	m := newPreScoreMemo("k", []config.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "example.com/gpu", Weight: 1}})
	calls := 0
	inner := func(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) *fwk.Status { calls++; return nil }
	for _, name := range []string{"a", "b"} {
		m.preScore(context.Background(), framework.NewCycleState(), pod(name, "", asksCPU("1")), nil, inner)
	}
	if calls != 2 {
		t.Fatalf("PreScore called %d times for two alike pods, want 2", calls)
	}
}

// TestPreScoreMemoScoresAsUpstream: through the registry,
// NodeResourcesFit and NodeResourcesBalancedAllocation keep their
// PreScore, and on every node score each pod of the sequence as
// upstream's plugins do with their own PreScore.
func TestPreScoreMemoScoresAsUpstream(t *testing.T) {
	ctx := context.Background()
	f, nodes, argsOf := preScoreCluster(t)
	inTree := frameworkplugins.NewInTreeRegistry()
	for _, name := range []string{noderesources.Name, noderesources.BalancedAllocationName} {
		t.Run(name, func(t *testing.T) {
			ours := registryPlugin(t, f, name, argsOf(name))
			switch pl := ours.(type) {
			case *fitScalar:
				if pl.prescore == nil || !pl.prescore.on {
					t.Fatal("the registry's NodeResourcesFit keeps no PreScore")
				}
			case *balancedMemo:
			default:
				t.Fatalf("the registry's %s is a %T, with no memo", name, ours)
			}
			up, err := inTree[name](ctx, argsOf(name), f.fwk)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range memoSequence {
				csOurs, csUp := framework.NewCycleState(), framework.NewCycleState()
				stOurs := ours.(fwk.PreScorePlugin).PreScore(ctx, csOurs, tc.pod, nodes)
				stUp := up.(fwk.PreScorePlugin).PreScore(ctx, csUp, tc.pod, nodes)
				if stOurs.Code() != stUp.Code() {
					t.Fatalf("%s: PreScore %v, upstream's %v", tc.name, stOurs, stUp)
				}
				if !stUp.IsSuccess() {
					continue
				}
				for _, ni := range nodes {
					a, sa := ours.(fwk.ScorePlugin).Score(ctx, csOurs, tc.pod, ni)
					b, sb := up.(fwk.ScorePlugin).Score(ctx, csUp, tc.pod, ni)
					if a != b || sa.Code() != sb.Code() {
						t.Fatalf("%s on %s: score %d (%v), upstream's %d (%v)", tc.name, ni.Node().Name, a, sa, b, sb)
					}
				}
			}
		})
	}
}

// preScoreCluster is the default profile's framework over two nodes, one
// with a pod using 3 CPUs, its nodes, and the default profile's args of
// a plugin by name.
func preScoreCluster(t *testing.T) (*Framework, []fwk.NodeInfo, func(string) runtime.Object) {
	t.Helper()
	used := pod("used", "n1", asksCPU("3"))
	f := defaultFramework(t, Cluster{Nodes: []*v1.Node{node("n1", "z"), node("n2", "z")}, Pods: []*v1.Pod{used}})
	nodes, err := f.Snapshot().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	argsOf := func(name string) runtime.Object {
		for _, pc := range cfg.Profiles[0].PluginConfig {
			if pc.Name == name {
				return pc.Args
			}
		}
		t.Fatalf("no args for %s", name)
		return nil
	}
	return f, nodes, argsOf
}

// TestPreScoreMemoConcurrent: the registry's NodeResourcesFit and
// BalancedAllocation, asked from several goroutines at once (cycles on
// one framework, each scoring its nodes), give each pod the state of
// its own requests: every score is the one upstream's plugins give the
// pod alone. Run under -race, it fails if the memo is used unlocked.
func TestPreScoreMemoConcurrent(t *testing.T) {
	ctx := context.Background()
	f, nodes, argsOf := preScoreCluster(t)
	inTree := frameworkplugins.NewInTreeRegistry()
	pods := []*v1.Pod{pod("one", "", asksCPU("1")), pod("two", "", asksCPU("2")), pod("idle", "", bestEffort)}
	for _, name := range []string{noderesources.Name, noderesources.BalancedAllocationName} {
		t.Run(name, func(t *testing.T) {
			up, err := inTree[name](ctx, argsOf(name), f.fwk)
			if err != nil {
				t.Fatal(err)
			}
			type answer struct {
				code   fwk.Code
				scores []int64
			}
			scoreAll := func(pl fwk.Plugin, p *v1.Pod) answer {
				cs := framework.NewCycleState()
				st := pl.(fwk.PreScorePlugin).PreScore(ctx, cs, p, nodes)
				a := answer{code: st.Code()}
				if !st.IsSuccess() {
					return a
				}
				for _, ni := range nodes {
					s, _ := pl.(fwk.ScorePlugin).Score(ctx, cs, p, ni)
					a.scores = append(a.scores, s)
				}
				return a
			}
			want := map[string]answer{}
			for _, p := range pods {
				want[p.Name] = scoreAll(up, p)
			}
			ours := registryPlugin(t, f, name, argsOf(name))
			const workers, rounds = 4, 50
			errs := make(chan string, workers*rounds)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := range rounds {
						p := pods[(w+i)%len(pods)]
						if got := scoreAll(ours, p); !reflect.DeepEqual(got, want[p.Name]) {
							errs <- fmt.Sprintf("%s: %v, upstream's %v", p.Name, got, want[p.Name])
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
		})
	}
}

// The key tells apart what PodRequests reads, and refuses what it leaves
// out.
func TestAppendRequestsKey(t *testing.T) {
	base := pod("a", "", asksCPU("1"))
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		same, ok bool
	}{
		{"a copy", pod("b", "", asksCPU("1")), true, true},
		{"another name, labels and node", pod("c", "n1", asksCPU("1"), func(p *v1.Pod) { p.Labels = nil }), true, true},
		{"other limits", pod("d", "", asksCPU("1"), func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")}
		}), false, true},
		{"a second container", pod("e", "", asksCPU("1"), func(p *v1.Pod) { p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "d"}) }), false, true},
		{"an empty init container", pod("f", "", asksCPU("1"), func(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{{Name: "i"}} }), false, true},
		{"pod-level resources", pod("g", "", asksCPU("1"), func(p *v1.Pod) { p.Spec.Resources = &v1.ResourceRequirements{} }), false, false},
		{"an overhead", pod("h", "", asksCPU("1"), withOverhead), false, false},
		{"a container status", pod("i", "", asksCPU("1"), resized), false, false},
		{"status resources", pod("j", "", asksCPU("1"), func(p *v1.Pod) { p.Status.Resources = &v1.ResourceRequirements{} }), false, false},
		{"a resize found infeasible", pod("k", "", asksCPU("1"), resizeFound(v1.PodReasonInfeasible)), false, false},
		{"another condition", pod("l", "", asksCPU("1"), func(p *v1.Pod) {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
		}), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, _ := appendRequestsKey(nil, base)
			got, ok := appendRequestsKey(nil, tc.pod)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if ok && (string(got) == string(want)) != tc.same {
				t.Fatalf("same key = %v, want %v", !tc.same, tc.same)
			}
		})
	}
}
