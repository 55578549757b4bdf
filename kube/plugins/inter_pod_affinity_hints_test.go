package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
)

func TestInterPodAffinityPodHints(t *testing.T) {
	pl := InterPodAffinity{}
	wantsWeb := mkPod("p", withAffinity(term(zoneKey, "app", "web")))
	wantsWebFront := mkPod("p", withAffinity(term(zoneKey, "app", "web"), term(zoneKey, "tier", "front")))
	avoidsDB := mkPod("p", withAntiAffinity(term(zoneKey, "app", "db")))
	avoidsDBOrCache := mkPod("p", withAntiAffinity(term(zoneKey, "app", "db"), term(zoneKey, "app", "cache")))
	firstWeb := mkPod("p", podLabels("app", "web"), withAffinity(term(zoneKey, "app", "web")))
	dbLabelled := mkPod("p", podLabels("app", "db"))
	anyNamespace := mkPod("p", withAffinity(term(zoneKey, "app", "web")), func(p *v1.Pod) {
		p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}}
	})
	bound := func(name string, edits ...func(*v1.Pod)) *v1.Pod {
		return mkPod(name, append([]func(*v1.Pod){onNode("n")}, edits...)...)
	}

	runHints(t, pl, evAssignedAdd, []hintCase{
		{"matches the affinity", wantsWeb, nil, bound("a", podLabels("app", "web")), schedq.HintQueue},
		{"does not match the affinity", wantsWeb, nil, bound("a", podLabels("app", "db")), schedq.HintSkip},
		{"other namespace", wantsWeb, nil, bound("a", podLabels("app", "web"), inNamespace("x")), schedq.HintSkip},
		{"namespace selector, labels unknown to the hint", anyNamespace, nil, bound("a", podLabels("app", "web"), inNamespace("x")), schedq.HintQueue},
		{"matches one of two terms", wantsWebFront, nil, bound("a", podLabels("app", "web")), schedq.HintSkip},
		{"matches both terms", wantsWebFront, nil, bound("a", podLabels("app", "web", "tier", "front")), schedq.HintQueue},
		{"an arrival never lifts anti-affinity", avoidsDB, nil, bound("a", podLabels("app", "web")), schedq.HintSkip},
		{"pod without terms", mkPod("p"), nil, bound("a", podLabels("app", "web")), schedq.HintSkip},
	})
	runHints(t, pl, evAssignedLabel, []hintCase{
		{"relabelled into the affinity", wantsWeb, bound("a"), bound("a", podLabels("app", "web")), schedq.HintQueue},
		{"matched the affinity before", wantsWeb, bound("a", podLabels("app", "web")), bound("a", podLabels("app", "web", "x", "y")), schedq.HintSkip},
		{"relabelled out of the anti-affinity", avoidsDB, bound("a", podLabels("app", "db")), bound("a", podLabels("app", "web")), schedq.HintQueue},
		{"relabelled out of one anti-affinity term into another", avoidsDBOrCache, bound("a", podLabels("app", "db")), bound("a", podLabels("app", "cache")), schedq.HintQueue},
		{"relabelled into the anti-affinity", avoidsDB, bound("a", podLabels("app", "web")), bound("a", podLabels("app", "db")), schedq.HintSkip},
		{"group member relabelled away: the pod may start the group", firstWeb, bound("a", podLabels("app", "web")), bound("a", podLabels("app", "db")), schedq.HintQueue},
		{"group member relabelled away, pod cannot start the group", wantsWeb, bound("a", podLabels("app", "web")), bound("a", podLabels("app", "db")), schedq.HintSkip},
	})
	runHints(t, pl, evOwnLabel, []hintCase{
		{"own labels changed", dbLabelled, dbLabelled, mkPod("p", podLabels("app", "web")), schedq.HintQueue},
		{"unbound pod relabelled", wantsWeb, mkPod("a"), mkPod("a", podLabels("app", "web")), schedq.HintSkip},
	})
	runHints(t, pl, evAssignedDelete, []hintCase{
		{"matched the anti-affinity", avoidsDB, bound("a", podLabels("app", "db")), nil, schedq.HintQueue},
		{"matched the second anti-affinity term", avoidsDBOrCache, bound("a", podLabels("app", "cache")), nil, schedq.HintQueue},
		{"did not match the anti-affinity", avoidsDB, bound("a", podLabels("app", "web")), nil, schedq.HintSkip},
		{"its anti-affinity selected the pod", dbLabelled, bound("a", withAntiAffinity(term(zoneKey, "app", "db"))), nil, schedq.HintQueue},
		{"its anti-affinity selected other pods", dbLabelled, bound("a", withAntiAffinity(term(zoneKey, "app", "web"))), nil, schedq.HintSkip},
		{"its anti-affinity covers another namespace", mkPod("p", podLabels("app", "db"), inNamespace("x")), bound("a", withAntiAffinity(term(zoneKey, "app", "db"))), nil, schedq.HintSkip},
		{"a group member left: the pod may start the group", firstWeb, bound("a", podLabels("app", "web")), nil, schedq.HintQueue},
		{"a departure never helps plain affinity", wantsWeb, bound("a", podLabels("app", "web")), nil, schedq.HintSkip},
		{"unbound pod deleted", avoidsDB, mkPod("a", podLabels("app", "db")), nil, schedq.HintSkip},
	})
}

func TestInterPodAffinityNodeHints(t *testing.T) {
	pl := InterPodAffinity{}
	wantsWeb := mkPod("p", withAffinity(term(zoneKey, "app", "web")))
	wantsWebByZoneAndHost := mkPod("p", withAffinity(term(zoneKey, "app", "web"), term(hostKey, "tier", "front")))
	avoidsDB := mkPod("p", withAntiAffinity(term(zoneKey, "app", "db")))
	runHints(t, pl, evNodeAdd, []hintCase{
		{"node with the topology key", wantsWeb, nil, mkNode("n", nodeLabels(zoneKey, "a")), schedq.HintQueue},
		{"node without the topology key", wantsWeb, nil, mkNode("n", nodeLabels(hostKey, "n")), schedq.HintSkip},
		{"node with one of two keys", wantsWebByZoneAndHost, nil, mkNode("n", nodeLabels(zoneKey, "a")), schedq.HintSkip},
		{"node with both keys", wantsWebByZoneAndHost, nil, mkNode("n", nodeLabels(zoneKey, "a", hostKey, "n")), schedq.HintQueue},
		// A node outside the anti-affinity's domains satisfies it.
		{"anti-affinity only, node without the key", avoidsDB, nil, mkNode("n"), schedq.HintQueue},
		// Placed pods' anti-affinity may be what rejected it: a new domain helps.
		{"no terms", mkPod("p"), nil, mkNode("n", nodeLabels(zoneKey, "c")), schedq.HintQueue},
	})
	runHints(t, pl, evNodeLabel, []hintCase{
		{"topology key added", wantsWeb, mkNode("n"), mkNode("n", nodeLabels(zoneKey, "a")), schedq.HintQueue},
		{"topology key removed", wantsWeb, mkNode("n", nodeLabels(zoneKey, "a")), mkNode("n"), schedq.HintSkip},
		{"unrelated label on a node without the key", wantsWeb, mkNode("n"), mkNode("n", nodeLabels("x", "y")), schedq.HintSkip},
		{"anti-affinity only, domain changed", avoidsDB, mkNode("n", nodeLabels(zoneKey, "a")), mkNode("n", nodeLabels(zoneKey, "b")), schedq.HintQueue},
	})
}
