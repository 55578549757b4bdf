package plugins

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

var ctx = context.Background()

// rl builds a resource list from name, quantity pairs.
func rl(pairs ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		l[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

// mkPod returns a pod "default/name" with UID name, changed by edits.
func mkPod(name string, edits ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)}}
	for _, e := range edits {
		e(p)
	}
	return p
}

func podLabels(kv ...string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Labels = kvMap(kv...) }
}

func inNamespace(ns string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Namespace = ns }
}

func onNode(name string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.NodeName = name }
}

// requesting adds a container with the given requests.
func requesting(pairs ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{
			Name: "c" + string(rune('0'+len(p.Spec.Containers))), Resources: v1.ResourceRequirements{Requests: rl(pairs...)},
		})
	}
}

func tolerating(ts ...v1.Toleration) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, ts...) }
}

func kvMap(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// term is a required pod (anti-)affinity term selecting labels kv in the
// pod's own namespace.
func term(topologyKey string, kv ...string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: kvMap(kv...)},
		TopologyKey:   topologyKey,
	}
}

func withAffinity(terms ...v1.PodAffinityTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		p.Spec.Affinity.PodAffinity = &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
}

func withAntiAffinity(terms ...v1.PodAffinityTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
}

// mkNode returns a node changed by edits, with room for 110 pods.
func mkNode(name string, edits ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Allocatable = rl("pods", "110")
	for _, e := range edits {
		e(n)
	}
	return n
}

func nodeLabels(kv ...string) func(*v1.Node) {
	return func(n *v1.Node) { n.Labels = kvMap(kv...) }
}

func allocatable(pairs ...string) func(*v1.Node) {
	return func(n *v1.Node) { n.Status.Allocatable = rl(pairs...) }
}

func tainted(ts ...v1.Taint) func(*v1.Node) {
	return func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, ts...) }
}

func cordoned(n *v1.Node) { n.Spec.Unschedulable = true }

func mustPodInfo(t testing.TB, p *v1.Pod) *framework.PodInfo {
	t.Helper()
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		t.Fatalf("NewPodInfo(%s): %v", p.Name, err)
	}
	return pi
}

// nodeInfo puts pods on node.
func nodeInfo(t testing.TB, n *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
	t.Helper()
	ni := framework.NewNodeInfo(n)
	for _, p := range pods {
		p = p.DeepCopy()
		p.Spec.NodeName = n.Name
		ni.AddPod(mustPodInfo(t, p))
	}
	return ni
}

// fakeSnapshot is a framework.Snapshot over a fixed list of nodes.
type fakeSnapshot struct {
	nodes      []*framework.NodeInfo
	namespaces map[string]labels.Set
}

func (s fakeSnapshot) Nodes() []*framework.NodeInfo { return s.nodes }

func (s fakeSnapshot) Node(name string) (*framework.NodeInfo, bool) {
	i := slices.IndexFunc(s.nodes, func(n *framework.NodeInfo) bool { return n.Name() == name })
	if i < 0 {
		return nil, false
	}
	return s.nodes[i], true
}

func (s fakeSnapshot) NamespaceLabels(ns string) labels.Set { return s.namespaces[ns] }

func (s fakeSnapshot) MayHavePodsWithRequiredAntiAffinity() bool {
	for _, n := range s.nodes {
		if len(n.PodsWithRequiredAntiAffinity) > 0 {
			return true
		}
	}
	return false
}

// wantStatus checks a status's code and reasons; code Success wants nil.
func wantStatus(t testing.TB, got *framework.Status, code framework.Code, reasons ...string) {
	t.Helper()
	if code == framework.Success {
		if !got.IsSuccess() {
			t.Fatalf("status = %v %q, want success", got.Code, got.Reasons)
		}
		return
	}
	if got.IsSuccess() {
		t.Fatalf("status = success, want %v %q", code, reasons)
	}
	if got.Code != code || !slices.Equal(got.Reasons, reasons) {
		t.Fatalf("status = %v %q, want %v %q", got.Code, got.Reasons, code, reasons)
	}
}

// hintCase is one call of a hint function.
type hintCase struct {
	name           string
	pod            *v1.Pod
	oldObj, newObj any
	want           schedq.Hint
}

// runHints runs each case through the hint registered for the event, after
// checking that the registration accepts the event.
func runHints(t *testing.T, pl framework.EnqueueExtensions, ev schedq.Event, cases []hintCase) {
	t.Helper()
	var fn schedq.HintFn[*v1.Pod]
	for _, reg := range pl.EventsToRegister() {
		if clusterevent.Match(reg.Event, ev) {
			fn = reg.Fn
			break
		}
	}
	if fn == nil {
		t.Fatalf("%s registers nothing for %s", pl.Name(), ev.Label)
	}
	for _, tc := range cases {
		t.Run(ev.Label+"/"+tc.name, func(t *testing.T) {
			got, err := fn(tc.pod, tc.oldObj, tc.newObj)
			if err != nil {
				t.Fatalf("hint error: %v", err)
			}
			if got != tc.want {
				t.Fatalf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}

// Single-bit events as the scheduler sends them.
var (
	evNodeAdd         = clusterevent.NodeAdd
	evNodeTaint       = clusterevent.New(clusterevent.Node, clusterevent.UpdateNodeTaint)
	evNodeLabel       = clusterevent.New(clusterevent.Node, clusterevent.UpdateNodeLabel)
	evNodeAllocatable = clusterevent.New(clusterevent.Node, clusterevent.UpdateNodeAllocatable)
	evAssignedAdd     = clusterevent.AssignedPodAdd
	evAssignedDelete  = clusterevent.AssignedPodDelete
	evAssignedLabel   = clusterevent.New(clusterevent.AssignedPod, clusterevent.UpdatePodLabel)
	evAssignedScale   = clusterevent.New(clusterevent.AssignedPod, clusterevent.UpdatePodScaleDown)
	evOwnToleration   = clusterevent.New(clusterevent.TargetPod, clusterevent.UpdatePodToleration)
	evOwnScale        = clusterevent.New(clusterevent.TargetPod, clusterevent.UpdatePodScaleDown)
	evOwnLabel        = clusterevent.New(clusterevent.TargetPod, clusterevent.UpdatePodLabel)
	evOwnGatesRemoved = clusterevent.New(clusterevent.TargetPod, clusterevent.UpdatePodSchedulingGatesEliminated)
)
