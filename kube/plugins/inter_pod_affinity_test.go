package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/schedq/schedq/kube/framework"
)

// verdict is the expected Filter outcome on one node.
type verdict struct {
	code   framework.Code
	reason string
}

var (
	pass             = verdict{framework.Success, ""}
	affinityMiss     = verdict{framework.Unschedulable, "node(s) didn't match pod affinity rules"}
	affinityNever    = verdict{framework.UnschedulableAndUnresolvable, "node(s) didn't match pod affinity rules"}
	antiAffinityHit  = verdict{framework.Unschedulable, "node(s) didn't match pod anti-affinity rules"}
	existingAntiHit  = verdict{framework.Unschedulable, "node(s) didn't satisfy existing pods anti-affinity rules"}
	zoneKey, hostKey = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
)

func TestInterPodAffinityFilter(t *testing.T) {
	// Nodes a1 and a2 in zone a, b1 in zone b, bare without a zone label.
	nodes := map[string]*v1.Node{
		"a1":   mkNode("a1", nodeLabels(zoneKey, "a", hostKey, "a1")),
		"a2":   mkNode("a2", nodeLabels(zoneKey, "a", hostKey, "a2")),
		"b1":   mkNode("b1", nodeLabels(zoneKey, "b", hostKey, "b1")),
		"bare": mkNode("bare", nodeLabels(hostKey, "bare")),
	}
	web := mkPod("web", podLabels("app", "web"))
	withTeamNamespace := func(p *v1.Pod) {
		p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}}
	}
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		placed map[string][]*v1.Pod
		want   map[string]verdict
	}{
		{
			name:   "no terms, nothing placed",
			pod:    mkPod("p"),
			placed: map[string][]*v1.Pod{"a1": {web}},
			want:   map[string]verdict{"a1": pass, "a2": pass, "b1": pass, "bare": pass},
		},
		{
			name:   "affinity satisfied in the same zone",
			pod:    mkPod("p", withAffinity(term(zoneKey, "app", "web"))),
			placed: map[string][]*v1.Pod{"a1": {web}},
			want:   map[string]verdict{"a1": pass, "a2": pass, "b1": affinityMiss, "bare": affinityNever},
		},
		{
			name:   "affinity by host",
			pod:    mkPod("p", withAffinity(term(hostKey, "app", "web"))),
			placed: map[string][]*v1.Pod{"a1": {web}},
			want:   map[string]verdict{"a1": pass, "a2": affinityMiss, "b1": affinityMiss, "bare": affinityMiss},
		},
		{
			name:   "first pod of its group",
			pod:    mkPod("p", podLabels("app", "web"), withAffinity(term(zoneKey, "app", "web"))),
			placed: map[string][]*v1.Pod{"a1": {mkPod("db", podLabels("app", "db"))}},
			want:   map[string]verdict{"a1": pass, "a2": pass, "b1": pass, "bare": affinityNever},
		},
		{
			name:   "not the first once its group exists",
			pod:    mkPod("p", podLabels("app", "web"), withAffinity(term(zoneKey, "app", "web"))),
			placed: map[string][]*v1.Pod{"b1": {web}},
			want:   map[string]verdict{"a1": affinityMiss, "a2": affinityMiss, "b1": pass, "bare": affinityNever},
		},
		{
			name:   "no match anywhere and no self match",
			pod:    mkPod("p", withAffinity(term(zoneKey, "app", "web"))),
			placed: map[string][]*v1.Pod{"a1": {mkPod("db", podLabels("app", "db"))}},
			want:   map[string]verdict{"a1": affinityNever, "a2": affinityNever, "b1": affinityNever, "bare": affinityNever},
		},
		{
			name: "one pod must match every term",
			pod:  mkPod("p", withAffinity(term(zoneKey, "app", "web"), term(zoneKey, "tier", "front"))),
			placed: map[string][]*v1.Pod{
				"a1": {web},
				"b1": {mkPod("front", podLabels("tier", "front")), mkPod("both", podLabels("app", "web", "tier", "front"))},
			},
			want: map[string]verdict{"a1": affinityMiss, "a2": affinityMiss, "b1": pass, "bare": affinityNever},
		},
		{
			name:   "affinity ignores pods of other namespaces",
			pod:    mkPod("p", withAffinity(term(zoneKey, "app", "web"))),
			placed: map[string][]*v1.Pod{"a1": {mkPod("web", podLabels("app", "web"), inNamespace("other"))}},
			want:   map[string]verdict{"a1": affinityNever, "a2": affinityNever, "b1": affinityNever, "bare": affinityNever},
		},
		{
			name:   "affinity by namespace selector",
			pod:    mkPod("p", withAffinity(term(zoneKey, "app", "web")), withTeamNamespace),
			placed: map[string][]*v1.Pod{"a1": {mkPod("web", podLabels("app", "web"), inNamespace("blue"))}, "b1": {mkPod("web", podLabels("app", "web"), inNamespace("red"))}},
			want:   map[string]verdict{"a1": pass, "a2": pass, "b1": affinityMiss, "bare": affinityNever},
		},
		{
			name:   "anti-affinity keeps the pod out of the zone",
			pod:    mkPod("p", withAntiAffinity(term(zoneKey, "app", "web"))),
			placed: map[string][]*v1.Pod{"a1": {web}},
			want:   map[string]verdict{"a1": antiAffinityHit, "a2": antiAffinityHit, "b1": pass, "bare": pass},
		},
		{
			name:   "placed pod's anti-affinity keeps the pod out",
			pod:    mkPod("p", podLabels("app", "db")),
			placed: map[string][]*v1.Pod{"a1": {mkPod("lonely", withAntiAffinity(term(zoneKey, "app", "db")))}},
			want:   map[string]verdict{"a1": existingAntiHit, "a2": existingAntiHit, "b1": pass, "bare": pass},
		},
		{
			name:   "placed pod's anti-affinity selects other pods",
			pod:    mkPod("p", podLabels("app", "web")),
			placed: map[string][]*v1.Pod{"a1": {mkPod("lonely", withAntiAffinity(term(zoneKey, "app", "db")))}},
			want:   map[string]verdict{"a1": pass, "a2": pass, "b1": pass, "bare": pass},
		},
		{
			name:   "affinity checked before anti-affinity",
			pod:    mkPod("p", withAffinity(term(hostKey, "app", "web")), withAntiAffinity(term(zoneKey, "app", "db"))),
			placed: map[string][]*v1.Pod{"a1": {web}, "a2": {mkPod("db", podLabels("app", "db"))}},
			want:   map[string]verdict{"a1": antiAffinityHit, "a2": affinityMiss, "b1": affinityMiss, "bare": affinityMiss},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := fakeSnapshot{namespaces: map[string]labels.Set{"blue": {"team": "blue"}, "red": {"team": "red"}}}
			for _, name := range []string{"a1", "a2", "b1", "bare"} {
				snap.nodes = append(snap.nodes, nodeInfo(t, nodes[name], tc.placed[name]...))
			}
			pl, pi, state := InterPodAffinity{}, mustPodInfo(t, tc.pod), framework.NewCycleState()
			if st := pl.PreFilter(ctx, state, pi, snap); !st.IsSkip() {
				wantStatus(t, st, framework.Success)
			}
			for _, n := range snap.nodes { // Filter must agree even where PreFilter said Skip
				w := tc.want[n.Name()]
				t.Run(n.Name(), func(t *testing.T) {
					if w.code == framework.Success {
						wantStatus(t, pl.Filter(ctx, state, pi, n), framework.Success)
					} else {
						wantStatus(t, pl.Filter(ctx, state, pi, n), w.code, w.reason)
					}
				})
			}
		})
	}
}

func TestInterPodAffinityFilterWithoutPreFilter(t *testing.T) {
	st := InterPodAffinity{}.Filter(ctx, framework.NewCycleState(), mustPodInfo(t, mkPod("p")), nodeInfo(t, mkNode("n")))
	if st.IsSuccess() || st.Code != framework.Error {
		t.Fatalf("status = %v, want an error", st)
	}
}

func TestMatchesRequiredAffinity(t *testing.T) {
	queued := mkPod("p", withAffinity(term(zoneKey, "app", "web"), term(zoneKey, "tier", "front")))
	team := mkPod("p", withAffinity(term(zoneKey, "app", "web")), func(p *v1.Pod) {
		p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}}
	})
	broken := mkPod("p", withAffinity(v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}},
		TopologyKey:   zoneKey,
	}))
	for _, tc := range []struct {
		name     string
		queued   *v1.Pod
		assigned *v1.Pod
		ns       labels.Set
		want     bool
	}{
		{"matches one term", queued, mkPod("a", podLabels("app", "web")), nil, true},
		{"matches the other term", queued, mkPod("a", podLabels("tier", "front")), nil, true},
		{"matches no term", queued, mkPod("a", podLabels("app", "db")), nil, false},
		{"other namespace", queued, mkPod("a", podLabels("app", "web"), inNamespace("x")), nil, false},
		{"namespace selected by labels", team, mkPod("a", podLabels("app", "web"), inNamespace("x")), labels.Set{"team": "blue"}, true},
		{"namespace not selected", team, mkPod("a", podLabels("app", "web"), inNamespace("x")), labels.Set{"team": "red"}, false},
		{"no affinity", mkPod("p", withAntiAffinity(term(zoneKey, "app", "web"))), mkPod("a", podLabels("app", "web")), nil, false},
		{"terms that do not parse", broken, mkPod("a", podLabels("app", "web")), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchesRequiredAffinity(tc.queued, tc.assigned, tc.ns); got != tc.want {
				t.Fatalf("MatchesRequiredAffinity = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestInterPodAffinityPreFilterSkips: only a pod without terms, in a
// cluster where no node holds a pod with required anti-affinity, skips
// Filter.
func TestInterPodAffinityPreFilterSkips(t *testing.T) {
	node := mkNode("n", nodeLabels("kubernetes.io/hostname", "n"))
	anti := mkPod("anti", podLabels("app", "x"), withAntiAffinity(term("kubernetes.io/hostname", "app", "web")))
	plain := mkPod("plain", podLabels("app", "x"))
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		placed []*v1.Pod
		skip   bool
	}{
		{"no terms, nothing placed", mkPod("p"), nil, true},
		{"no terms, plain pods placed", mkPod("p"), []*v1.Pod{plain}, true},
		{"no terms, a pod with anti-affinity placed", mkPod("p"), []*v1.Pod{anti}, false},
		{"own affinity", mkPod("p", withAffinity(term("kubernetes.io/hostname", "app", "x"))), nil, false},
		{"own anti-affinity", mkPod("p", withAntiAffinity(term("kubernetes.io/hostname", "app", "x"))), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := fakeSnapshot{nodes: []*framework.NodeInfo{nodeInfo(t, node, tc.placed...)}}
			st := InterPodAffinity{}.PreFilter(ctx, framework.NewCycleState(), mustPodInfo(t, tc.pod), snap)
			if st.IsSkip() != tc.skip || !st.IsSkip() && !st.IsSuccess() {
				t.Fatalf("PreFilter = %+v, want skip %v", st, tc.skip)
			}
		})
	}
}
